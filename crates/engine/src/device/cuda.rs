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
