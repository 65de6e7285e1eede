//! Which device the engine reads on, and what people are told about it: the GPU's name, memory and compute
//! capability beside the build's, or one sentence on why a GPU that is there is not used.

#[cfg(feature = "cuda")]
mod cuda;
mod notice;

use candle_core::{DType, Device, Tensor};

pub use notice::{GpuProblem, MIN_COMPUTE_CAP};

/// The compute capability this build's CUDA kernels target, e.g. `86`; `None` for a CPU-only build. PTX for
/// capability X is compiled by the driver for any card of X or newer, so one build serves all of those.
pub const BUILD_COMPUTE_CAP: Option<&str> = option_env!("DEEPREAD_CUDA_COMPUTE_CAP");

/// A CUDA GPU as the driver describes it.
#[derive(Debug, Clone, PartialEq)]
pub struct Gpu {
    pub name: String,
    pub memory_bytes: u64,
    /// (major, minor), e.g. (8, 6) for an RTX 3090.
    pub compute_capability: (u32, u32),
    /// The newest CUDA version the driver supports, (major, minor).
    pub driver_cuda: (u32, u32),
}

impl Gpu {
    /// "NVIDIA GeForce RTX 3090, 24.0 GB, compute capability 8.6".
    pub fn describe(&self) -> String {
        let (major, minor) = self.compute_capability;
        format!(
            "{}, {:.1} GB, compute capability {major}.{minor}",
            self.name,
            self.memory_bytes as f64 / 1e9
        )
    }
}

/// Where the engine will read, found once at start: the device, its fastest dtype, the GPU when there is
/// one in use, and a sentence when a GPU is present but cannot be used.
#[derive(Debug, Clone)]
pub struct Placement {
    pub device: Device,
    pub dtype: DType,
    pub gpu: Option<Gpu>,
    pub problem: Option<GpuProblem>,
}

impl Placement {
    /// The top bar's few words: "NVIDIA GeForce RTX 3090, bf16", "CPU, f32".
    pub fn name(&self) -> String {
        let dtype = format!("{:?}", self.dtype).to_ascii_lowercase();
        match &self.gpu {
            Some(gpu) => format!("{}, {dtype}", gpu.name),
            None => format!("CPU, {dtype}"),
        }
    }

    /// The whole story: "NVIDIA H100 80GB HBM3, 85.0 GB, compute capability 9.0; built for
    /// 8.6 and newer; bf16", or "CPU, f32; built without CUDA".
    pub fn describe(&self) -> String {
        let dtype = format!("{:?}", self.dtype).to_ascii_lowercase();
        match &self.gpu {
            Some(gpu) => format!("{}; {}; {dtype}", gpu.describe(), build_description()),
            None => format!("CPU, {dtype}; {}", build_description()),
        }
    }

    /// Bytes in use on the whole GPU (as nvidia-smi counts them); `None` on the CPU.
    pub fn memory_used(&self) -> Option<u64> {
        memory_used(&self.device)
    }
}

/// "built for compute capability 8.6 and newer" or "built without CUDA".
pub fn build_description() -> String {
    match BUILD_COMPUTE_CAP {
        Some(cap) => format!("built for compute capability {} and newer", dotted(cap)),
        None => "built without CUDA".to_owned(),
    }
}

/// The device to read on: the first CUDA GPU when this build has CUDA and the card can run it, else the CPU
/// (with the reason a GPU present is not used).
pub fn place() -> Placement {
    #[cfg(feature = "cuda")]
    {
        cuda::place()
    }
    #[cfg(not(feature = "cuda"))]
    {
        Placement {
            device: Device::Cpu,
            dtype: DType::F32,
            gpu: None,
            problem: notice::nvidia_gpu_present().map(|name| GpuProblem::CpuOnlyBuild { name }),
        }
    }
}

/// The device and dtype of [`place`], for callers that need no more.
pub fn default_device() -> (Device, DType) {
    let placement = place();
    (placement.device, placement.dtype)
}

/// GPU `ordinal` with a stream of the engine's own, which decode steps can be captured from as CUDA graphs.
/// Every operation of the engine runs in order on that one stream, so candle's cross-stream event
/// tracking is turned off: it would only add an event per buffer and per use. Freed memory stays with the
/// process for its next allocation (see `cuda::keep_freed_memory`).
#[cfg(feature = "cuda")]
pub fn engine_gpu(ordinal: usize) -> crate::error::Result<Device> {
    let device = Device::new_cuda_with_stream(ordinal)?;
    // SAFETY: tensors are created and used on this device's single stream only (see above).
    unsafe { device.as_cuda_device()?.disable_event_tracking() };
    cuda::keep_freed_memory(&device).map_err(|e| crate::error::EngineError::Cuda(e.to_string()))?;
    Ok(device)
}

/// A second stream on `main`'s GPU, for the vision tower: a page's views then run beside the decode steps
/// instead of between them. `main`'s stream is given the GPU's first claim (`cuda::put_first`); the new one
/// keeps the default, lowest, priority. Off CUDA, `main` itself.
pub fn side_stream(main: &Device) -> crate::error::Result<Device> {
    #[cfg(feature = "cuda")]
    if let Device::Cuda(cuda) = main {
        cuda::put_first(main).map_err(|e| crate::error::EngineError::Cuda(e.to_string()))?;
        return engine_gpu(cuda.cuda_stream().context().ordinal());
    }
    Ok(main.clone())
}

/// `tensor` as a tensor of `to`. The work that made it must be done (its stream synchronized): the copy runs
/// on `to`'s stream, and the source's stream waits for that copy before it can reuse the memory freed here.
pub fn hand_over(tensor: Tensor, to: &Device) -> crate::error::Result<Tensor> {
    if tensor.device().same_device(to) {
        return Ok(tensor);
    }
    let moved = tensor.to_device(to)?;
    #[cfg(feature = "cuda")]
    if let (Device::Cuda(from), Device::Cuda(to)) = (tensor.device(), to) {
        from.cuda_stream()
            .join(&to.cuda_stream())
            .map_err(|e| crate::error::EngineError::Cuda(e.to_string()))?;
    }
    drop(tensor);
    Ok(moved)
}

/// Gives the memory the process keeps for reuse back to the driver, before free memory is measured or when
/// an allocation failed; nothing off CUDA.
pub fn release_unused_memory(device: &Device) {
    #[cfg(feature = "cuda")]
    if let Err(error) = cuda::release_unused_memory(device) {
        tracing::debug!(%error, "could not release the GPU memory pool");
    }
    #[cfg(not(feature = "cuda"))]
    let _ = device;
}

/// Bytes in use on the whole device, or `None` off CUDA.
pub fn memory_used(device: &Device) -> Option<u64> {
    #[cfg(feature = "cuda")]
    {
        let cuda = device.as_cuda_device().ok()?;
        let (free, total) = cuda.cuda_stream().context().mem_get_info().ok()?;
        Some((total - free) as u64)
    }
    #[cfg(not(feature = "cuda"))]
    {
        let _ = device;
        None
    }
}

/// Bytes free on the whole device, or `None` off CUDA.
pub fn memory_free(device: &Device) -> Option<u64> {
    #[cfg(feature = "cuda")]
    {
        let cuda = device.as_cuda_device().ok()?;
        let (free, _) = cuda.cuda_stream().context().mem_get_info().ok()?;
        Some(free as u64)
    }
    #[cfg(not(feature = "cuda"))]
    {
        let _ = device;
        None
    }
}

/// "86" → "8.6".
fn dotted(cap: &str) -> String {
    match cap.len() {
        2.. => format!("{}.{}", &cap[..cap.len() - 1], &cap[cap.len() - 1..]),
        _ => cap.to_owned(),
    }
}
