//! Why a GPU that is there is not used, in one sentence with what to do about it.

use std::fmt;

/// bf16 arithmetic and the tensor-core instructions of the kernels need compute capability 8.0 (Ampere).
pub const MIN_COMPUTE_CAP: u32 = 80;

/// Why the engine reads on the CPU although an NVIDIA GPU is present.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GpuProblem {
    /// This build has no CUDA.
    CpuOnlyBuild { name: String },
    /// The driver is older than the CUDA version the build was made with.
    OldDriver { driver_cuda: (u32, u32) },
    /// The driver library is there but the GPU cannot be opened.
    Driver { error: String },
    /// The card is older than compute capability 8.0.
    OldCard { name: String, cap: u32 },
    /// The card is older than the capability this build's kernels target.
    BuildTooNew { name: String, cap: u32, build: u32 },
}

impl fmt::Display for GpuProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GpuProblem::CpuOnlyBuild { name } => write!(
                f,
                "This DeepRead was built without CUDA, so the {name} is not used: build it with `make run CUDA=1`."
            ),
            GpuProblem::OldDriver { driver_cuda: (major, minor) } => write!(
                f,
                "The NVIDIA driver supports CUDA {major}.{minor}, and this build needs 13.0: update the driver to 580 or newer."
            ),
            GpuProblem::Driver { error } => write!(
                f,
                "The NVIDIA GPU cannot be used ({error}): check that the driver works (`nvidia-smi`)."
            ),
            GpuProblem::OldCard { name, cap } => write!(
                f,
                "The {name} has compute capability {}, and DeepSeek-OCR-2 on the GPU needs 8.0 or newer (RTX 30xx and later).",
                dotted(*cap)
            ),
            GpuProblem::BuildTooNew { name, cap, build } => write!(
                f,
                "This build's kernels are for compute capability {} and newer, and the {name} has {}: rebuild with `make run CUDA_COMPUTE_CAP={cap}`.",
                dotted(*build),
                dotted(*cap)
            ),
        }
    }
}

/// What is wrong with running this build on a card of capability `cap` (e.g. 86), if anything.
#[cfg_attr(not(feature = "cuda"), allow(dead_code))]
pub fn card_problem(name: &str, cap: u32, build: Option<u32>) -> Option<GpuProblem> {
    let name = name.to_owned();
    if cap < MIN_COMPUTE_CAP {
        return Some(GpuProblem::OldCard { name, cap });
    }
    match build {
        Some(build) if cap < build => Some(GpuProblem::BuildTooNew { name, cap, build }),
        _ => None,
    }
}

/// The name of an NVIDIA GPU the kernel driver reports, for a build that cannot use it.
#[cfg_attr(feature = "cuda", allow(dead_code))]
pub fn nvidia_gpu_present() -> Option<String> {
    let gpus = std::fs::read_dir("/proc/driver/nvidia/gpus").ok()?;
    gpus.flatten().find_map(|gpu| {
        let information = std::fs::read_to_string(gpu.path().join("information")).ok()?;
        model_name(&information)
    })
}

/// The `Model:` line of /proc/driver/nvidia/gpus/*/information.
fn model_name(information: &str) -> Option<String> {
    information
        .lines()
        .find_map(|line| line.strip_prefix("Model:"))
        .map(|name| name.trim().to_owned())
        .filter(|name| !name.is_empty())
}

fn dotted(cap: u32) -> String {
    format!("{}.{}", cap / 10, cap % 10)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cards_from_ampere_on_run_a_build_for_their_capability_or_older() {
        assert_eq!(card_problem("RTX 3090", 86, Some(86)), None);
        assert_eq!(card_problem("RTX 4090", 89, Some(86)), None);
        assert_eq!(card_problem("H100", 90, Some(80)), None);
        assert_eq!(card_problem("A100", 80, None), None);
    }

    #[test]
    fn an_older_card_or_a_build_for_a_newer_one_is_told_what_to_do() {
        let old = card_problem("Tesla T4", 75, Some(80)).unwrap();
        assert_eq!(
            old,
            GpuProblem::OldCard {
                name: "Tesla T4".into(),
                cap: 75
            }
        );
        let text = old.to_string();
        assert!(
            text.contains("Tesla T4") && text.contains("7.5") && text.contains("8.0"),
            "{text}"
        );

        let newer = card_problem("A100", 80, Some(86)).unwrap();
        let text = newer.to_string();
        assert!(text.contains("8.6") && text.contains("8.0"), "{text}");
        assert!(text.contains("make run CUDA_COMPUTE_CAP=80"), "{text}");
    }

    #[test]
    fn each_problem_says_what_to_do() {
        let cpu = GpuProblem::CpuOnlyBuild {
            name: "NVIDIA GeForce RTX 3090".into(),
        }
        .to_string();
        assert!(
            cpu.contains("RTX 3090") && cpu.contains("make run CUDA=1"),
            "{cpu}"
        );
        let driver = GpuProblem::OldDriver {
            driver_cuda: (12, 4),
        }
        .to_string();
        assert!(
            driver.contains("12.4") && driver.contains("580"),
            "{driver}"
        );
    }

    #[test]
    fn the_model_line_of_the_driver_names_the_card() {
        // As /proc/driver/nvidia/gpus/<bus>/information reads on a driver 580 machine.
        let information =
            "Model: \t\t NVIDIA GeForce RTX 3090\nIRQ:   \t\t 139\nGPU UUID: \t GPU-5f8c\n";
        assert_eq!(
            model_name(information).as_deref(),
            Some("NVIDIA GeForce RTX 3090")
        );
        assert_eq!(model_name("IRQ: 1\n"), None);
    }
}
