//! With the `cuda` feature, compiles each src/kernels/*.cu, with the *.cuh it includes, to PTX in OUT_DIR with
//! nvcc. The PTX targets compute capability $CUDA_COMPUTE_CAP (default 80: bf16 arithmetic and the tensor-core
//! instructions used need it, and the driver JIT-compiles compute_80 PTX for both the RTX 3090, sm_86, and the
//! H100, sm_90).

use std::path::{Path, PathBuf};
use std::process::Command;

const KERNELS: [&str; 4] = ["decode", "flash_attention", "moe_prefill", "vision"];

fn main() {
    println!("cargo:rerun-if-env-changed=CUDA_COMPUTE_CAP");
    for name in KERNELS {
        println!("cargo:rerun-if-changed=src/kernels/{name}.cu");
    }
    // Every header in the directory rather than a list to keep in step: a header missing from such a list left
    // the PTX stale when it alone changed.
    for header in headers() {
        println!("cargo:rerun-if-changed={}", header.display());
    }
    if std::env::var_os("CARGO_FEATURE_CUDA").is_none() {
        return;
    }
    let out_dir = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    let cap = std::env::var("CUDA_COMPUTE_CAP").unwrap_or_else(|_| "80".into());
    // The engine tells people which cards this build serves (src/device).
    println!("cargo:rustc-env=DEEPREAD_CUDA_COMPUTE_CAP={cap}");
    for name in KERNELS {
        compile_ptx(name, &cap, &out_dir);
    }
}

fn compile_ptx(name: &str, cap: &str, out_dir: &Path) {
    let source = format!("src/kernels/{name}.cu");
    let status = Command::new("nvcc")
        // -lineinfo: source lines in the PTX, for ncu's per-line view (scripts/device/run.sh's `kernels`); it
        // leaves the code as it is.
        .args(["--ptx", "-O3", "-std=c++17", "-lineinfo"])
        .arg(format!("--gpu-architecture=compute_{cap}"))
        .arg(&source)
        .arg("-o")
        .arg(out_dir.join(format!("{name}.ptx")))
        .status()
        .expect("nvcc not found: the cuda feature needs the CUDA toolkit on PATH (`make build CUDA=1` installs it: scripts/cuda)");
    assert!(status.success(), "nvcc failed on {source}");
}

/// The kernels' headers (src/kernels/*.cuh), which the .cu files include.
fn headers() -> Vec<PathBuf> {
    let dir = std::fs::read_dir("src/kernels").expect("the engine's src/kernels directory");
    dir.filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|path| path.extension().is_some_and(|ext| ext == "cuh"))
        .collect()
}
