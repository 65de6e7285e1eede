//! Device buffers as the kernels see them: a tensor's address (contiguous, or with its strides) and fresh
//! uninitialised outputs.

use candle_core::backend::BackendStorage;
use candle_core::cuda_backend::cudarc::driver::DevicePtr;
use candle_core::cuda_backend::{CudaDevice, CudaStorage};
use candle_core::op::BackpropOp;
use candle_core::{DType, Shape, Storage, Tensor};
use half::bf16;

use crate::error::{EngineError, Result};

/// An uninitialised tensor a kernel will fill.
pub fn empty(dev: &CudaDevice, shape: impl Into<Shape>, dtype: DType) -> Result<Tensor> {
    let shape = shape.into();
    let n = shape.elem_count();
    // SAFETY: the memory is fully written by the kernel before anything reads it.
    let storage = unsafe {
        match dtype {
            DType::BF16 => CudaStorage::wrap_cuda_slice(dev.alloc::<bf16>(n)?, dev.clone()),
            DType::F32 => CudaStorage::wrap_cuda_slice(dev.alloc::<f32>(n)?, dev.clone()),
            DType::U32 => CudaStorage::wrap_cuda_slice(dev.alloc::<u32>(n)?, dev.clone()),
            other => return Err(EngineError::Cuda(format!("no kernel buffers of {other:?}"))),
        }
    };
    Ok(Tensor::from_storage(
        Storage::Cuda(storage),
        shape,
        BackpropOp::none(),
        false,
    ))
}

/// The address of an optional input, 0 (the kernels' "none") without one.
pub fn optional_address(t: Option<&Tensor>) -> Result<u64> {
    Ok(t.map(address).transpose()?.unwrap_or(0))
}

/// The device address of a contiguous CUDA tensor's first element.
pub fn address(t: &Tensor) -> Result<u64> {
    let (storage, layout) = t.storage_and_layout();
    if !layout.is_contiguous() {
        return Err(EngineError::Cuda(
            "a kernel was given a non-contiguous tensor".into(),
        ));
    }
    let Storage::Cuda(s) = &*storage else {
        return Err(EngineError::Cuda(
            "a kernel was given a tensor off the GPU".into(),
        ));
    };
    let stream = s.device.cuda_stream();
    let base = match s.dtype() {
        DType::BF16 => s.as_cuda_slice::<bf16>()?.device_ptr(&stream).0,
        DType::F32 => s.as_cuda_slice::<f32>()?.device_ptr(&stream).0,
        DType::U32 => s.as_cuda_slice::<u32>()?.device_ptr(&stream).0,
        // int8 rows (crate::quant::Int8Matrix).
        DType::U8 => s.as_cuda_slice::<u8>()?.device_ptr(&stream).0,
        other => {
            return Err(EngineError::Cuda(format!(
                "a kernel was given a {other:?} tensor"
            )))
        }
    };
    Ok(base + (layout.start_offset() * s.dtype().size_in_bytes()) as u64)
}

/// The device address of a bf16 CUDA tensor's first element and its element strides over the first three
/// of four dims; the last must be contiguous.
pub fn strided(t: &Tensor) -> Result<(u64, [i64; 3])> {
    let (storage, layout) = t.storage_and_layout();
    let stride = layout.stride();
    if stride.len() != 4 || stride[3] != 1 {
        return Err(EngineError::Cuda(
            "a strided kernel argument must be 4-d with a contiguous last dim".into(),
        ));
    }
    let Storage::Cuda(s) = &*storage else {
        return Err(EngineError::Cuda(
            "a kernel was given a tensor off the GPU".into(),
        ));
    };
    if s.dtype() != DType::BF16 {
        return Err(EngineError::Cuda(
            "a strided kernel argument must be bf16".into(),
        ));
    }
    let stream = s.device.cuda_stream();
    let base = s.as_cuda_slice::<bf16>()?.device_ptr(&stream).0;
    let address = base + (layout.start_offset() * DType::BF16.size_in_bytes()) as u64;
    Ok((address, [stride[0], stride[1], stride[2]].map(|n| n as i64)))
}
