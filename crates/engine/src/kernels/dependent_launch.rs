//! Launches that let a decode step's next kernel be placed on the SMs while the kernel ahead of it finishes
//! (programmatic dependent launch, compute capability 9.0 and newer). A batch-1 step is about 110 kernels of
//! a few µs each, and without it every one of them waits for the one before to drain before its own blocks
//! are even placed. The kernels launched so wait inside (common.cuh's `follow_previous_kernel`) before they
//! touch memory, so what they compute is unchanged. `DEEPREAD_DEPENDENT_LAUNCH=0` launches them plainly.

use std::ffi::c_void;

use candle_core::cuda_backend::cudarc::driver::sys;
use candle_core::cuda_backend::cudarc::driver::{
    CudaFunction, CudaStream, DeviceRepr, DriverError, LaunchConfig,
};
use candle_core::cuda_backend::CudaDevice;

use crate::error::{EngineError, Result};

/// Whether kernels on `dev` are launched as dependents of the kernel before them: kernels built for compute
/// capability 9.0 or newer (built for less, they hold no wait, so a Hopper card running their PTX must launch
/// them plainly) on such a GPU, unless the environment says not to.
pub(super) fn dependent_launches(dev: &CudaDevice) -> bool {
    let wanted = std::env::var("DEEPREAD_DEPENDENT_LAUNCH").map_or(true, |v| v != "0");
    let built = crate::device::BUILD_COMPUTE_CAP
        .and_then(|cap| cap.parse::<u32>().ok())
        .is_some_and(|cap| cap >= 90);
    let major = dev
        .cuda_stream()
        .context()
        .compute_capability()
        .map_or(0, |(major, _)| major);
    wanted && built && major >= 9
}

/// A kernel's arguments, then its launch: cudarc's `LaunchArgs` with the launch attribute it does not take.
pub(super) struct Launch<'a> {
    stream: &'a CudaStream,
    func: &'a CudaFunction,
    dependent: bool,
    /// Addresses of the arguments, each borrowed for 'a by `arg`.
    args: Vec<*mut c_void>,
}

impl<'a> Launch<'a> {
    pub(super) fn new(stream: &'a CudaStream, func: &'a CudaFunction, dependent: bool) -> Self {
        Self {
            stream,
            func,
            dependent,
            args: Vec::with_capacity(16),
        }
    }

    /// The next argument, by address: it lives as long as the launch (as with cudarc's builder).
    pub(super) fn arg<T: DeviceRepr>(&mut self, value: &'a T) -> &mut Self {
        self.args.push(value as *const T as *mut c_void);
        self
    }

    /// Launches on the stream.
    ///
    /// # Safety
    /// The arguments must be the kernel's parameters in order and type, and every address among them a live
    /// buffer as large as the kernel indexes with this configuration.
    pub(super) unsafe fn launch(mut self, config: LaunchConfig) -> Result<()> {
        let cuda = |e: DriverError| EngineError::Cuda(e.to_string());
        self.stream.context().bind_to_thread().map_err(cuda)?;
        // SAFETY: a zeroed attribute is a valid bit pattern (an id and a union of plain integers).
        let mut attribute: sys::CUlaunchAttribute = unsafe { std::mem::zeroed() };
        attribute.id =
            sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
        attribute.value.programmaticStreamSerializationAllowed = 1;
        let (grid, block) = (config.grid_dim, config.block_dim);
        let launch_config = sys::CUlaunchConfig {
            gridDimX: grid.0,
            gridDimY: grid.1,
            gridDimZ: grid.2,
            blockDimX: block.0,
            blockDimY: block.1,
            blockDimZ: block.2,
            sharedMemBytes: config.shared_mem_bytes,
            hStream: self.stream.cu_stream(),
            attrs: &mut attribute,
            numAttrs: u32::from(self.dependent),
        };
        // SAFETY: the caller vouches for the arguments (above); the configuration and attribute live across
        // the call, and the function belongs to the stream's context.
        unsafe {
            sys::cuLaunchKernelEx(
                &launch_config,
                self.func.cu_function(),
                self.args.as_mut_ptr(),
                std::ptr::null_mut(),
            )
        }
        .result()
        .map_err(cuda)
    }
}
