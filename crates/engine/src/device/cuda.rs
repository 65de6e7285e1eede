//! The CUDA side of choosing a device: what the driver says of GPU 0, and whether this build can run on it.

use candle_core::cuda_backend::cudarc::driver::{result, sys, CudaContext, DriverError};
use candle_core::{DType, Device};

use super::notice::card_problem;
use super::{engine_gpu, Gpu, GpuProblem, Placement, BUILD_COMPUTE_CAP};

/// cuInit's answer when the driver is older than the CUDA version the program was built with.
const CUDA_ERROR_INSUFFICIENT_DRIVER: i32 = 35;
/// cuInit's answer when there is no CUDA device.
const CUDA_ERROR_NO_DEVICE: i32 = 100;

pub(super) fn place() -> Placement {
    let cpu = |problem| Placement {
        device: Device::Cpu,
        dtype: DType::F32,
        gpu: None,
        problem,
    };
    let gpu = match probe() {
        Ok(Some(gpu)) => gpu,
        Ok(None) => return cpu(None),
        Err(problem) => return cpu(Some(problem)),
    };
    let build = BUILD_COMPUTE_CAP.and_then(|cap| cap.parse().ok());
    let (major, minor) = gpu.compute_capability;
    if let Some(problem) = card_problem(&gpu.name, major * 10 + minor, build) {
        return cpu(Some(problem));
    }
    match engine_gpu(0) {
        Ok(device) => Placement {
            device,
            dtype: DType::BF16,
            gpu: Some(gpu),
            problem: None,
        },
        Err(error) => cpu(Some(GpuProblem::Driver {
            error: error.to_string(),
        })),
    }
}

/// GPU 0 as the driver describes it; `None` when there is no CUDA device.
fn probe() -> Result<Option<Gpu>, GpuProblem> {
    if let Err(error) = result::init() {
        return match error.0 as i32 {
            CUDA_ERROR_NO_DEVICE => Ok(None),
            CUDA_ERROR_INSUFFICIENT_DRIVER => Err(GpuProblem::OldDriver {
                driver_cuda: driver_cuda().unwrap_or((0, 0)),
            }),
            _ => Err(driver_problem(error)),
        };
    }
    let context = CudaContext::new(0).map_err(driver_problem)?;
    let (major, minor) = context.compute_capability().map_err(driver_problem)?;
    Ok(Some(Gpu {
        name: context.name().map_err(driver_problem)?,
        memory_bytes: context.total_mem().map_err(driver_problem)? as u64,
        compute_capability: (major as u32, minor as u32),
        driver_cuda: driver_cuda().unwrap_or((0, 0)),
    }))
}

/// The newest CUDA version the installed driver supports.
fn driver_cuda() -> Option<(u32, u32)> {
    let mut version = 0;
    // SAFETY: cuDriverGetVersion writes one int and may be called before cuInit.
    let status = unsafe { sys::cuDriverGetVersion(&mut version) };
    let version = version as u32;
    (status == sys::CUresult::CUDA_SUCCESS).then_some((version / 1000, version % 1000 / 10))
}

fn driver_problem(error: DriverError) -> GpuProblem {
    GpuProblem::Driver {
        error: error.to_string(),
    }
}

/// The stream-ordered allocator's pool of `device`, with the release threshold at its maximum: memory a tensor
/// frees stays in the pool for the next allocation. The default threshold (0) hands it back to the driver at
/// every synchronization, and the scheduler synchronizes once a step, so every page's vision activations were
/// mapped afresh (1-2 % of a document's time on the H100, docs/benchmarks.md, job 8).
pub(super) fn keep_freed_memory(device: &Device) -> Result<(), DriverError> {
    let pool = memory_pool(device)?;
    let mut threshold = u64::MAX;
    // SAFETY: `pool` is the device's current pool; the attribute takes a pointer to a u64.
    unsafe {
        sys::cuMemPoolSetAttribute(
            pool,
            sys::CUmemPool_attribute::CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
            (&mut threshold as *mut u64).cast(),
        )
    }
    .result()
}

/// Hands the pool's unused memory back to the driver once the stream's work is done, so that free memory counts it.
pub(super) fn release_unused_memory(device: &Device) -> Result<(), DriverError> {
    let pool = memory_pool(device)?;
    if let Device::Cuda(cuda) = device {
        cuda.cuda_stream().synchronize()?;
    }
    // SAFETY: trimming only releases memory no allocation holds.
    unsafe { sys::cuMemPoolTrimTo(pool, 0) }.result()
}

fn memory_pool(device: &Device) -> Result<sys::CUmemoryPool, DriverError> {
    let Device::Cuda(cuda) = device else {
        return Err(DriverError(sys::CUresult::CUDA_ERROR_INVALID_VALUE));
    };
    let mut pool = std::ptr::null_mut();
    let ordinal = cuda.cuda_stream().context().cu_device();
    // SAFETY: writes one pool handle for a device the context holds.
    unsafe { sys::cuDeviceGetMemPool(&mut pool, ordinal) }.result()?;
    Ok(pool)
}

/// Gives `device`'s stream the highest priority the GPU has: while the vision stream has work waiting too, the
/// GPU starts the decode steps' and prefill chunks' blocks first, so that pages already decoding are not held
/// back by the next page's views.
pub(super) fn put_first(device: &Device) -> Result<(), DriverError> {
    let Device::Cuda(cuda) = device else {
        return Ok(());
    };
    let stream = cuda.cuda_stream();
    stream.context().bind_to_thread()?;
    let (mut least, mut greatest) = (0, 0);
    // SAFETY: writes two ints for the context bound above.
    unsafe { sys::cuCtxGetStreamPriorityRange(&mut least, &mut greatest) }.result()?;
    // SAFETY: a zeroed attribute value is valid; only its priority is read for this attribute.
    let mut value: sys::CUstreamAttrValue = unsafe { std::mem::zeroed() };
    value.priority = greatest;
    // SAFETY: the stream is alive (held by `cuda`) and the value outlives the call.
    unsafe {
        sys::cuStreamSetAttribute(
            stream.cu_stream(),
            sys::CUstreamAttrID::CU_LAUNCH_ATTRIBUTE_PRIORITY,
            &value,
        )
    }
    .result()
}
