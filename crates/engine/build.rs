//! With the `cuda` feature, compiles src/kernels/decode.cu to PTX with nvcc. The PTX targets
//! compute capability $CUDA_COMPUTE_CAP (default 80: bf16 arithmetic needs it, and the driver JIT-compiles
//! compute_80 PTX for both the RTX 3090, sm_86, and the H100, sm_90).

use std::path::PathBuf;
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=src/kernels/decode.cu");
    println!("cargo:rerun-if-env-changed=CUDA_COMPUTE_CAP");
    if std::env::var_os("CARGO_FEATURE_CUDA").is_none() {
        return;
    }
    let out =
        PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR")).join("decode.ptx");
    let cap = std::env::var("CUDA_COMPUTE_CAP").unwrap_or_else(|_| "80".into());
    let status = Command::new("nvcc")
        .args(["--ptx", "-O3", "-std=c++17"])
        .arg(format!("--gpu-architecture=compute_{cap}"))
        .arg("src/kernels/decode.cu")
        .arg("-o")
        .arg(&out)
        .status()
        .expect("nvcc not found: the cuda feature needs the CUDA toolkit on PATH (see shared/gpu/README.md)");
    assert!(status.success(), "nvcc failed on src/kernels/decode.cu");
}
