//! decode.cu's RMSNorm and SwiGLU activation for the straightforward layers (the vision encoder, the LM's
//! prompt pass), where candle would spend ten launches on a norm and a strided copy on the gate/up split; and
//! int8 rows dequantized for the prompt pass's products. Each returns None off CUDA or in a dtype the kernels
//! are not built for.

use candle_core::cuda_backend::cudarc::driver::{LaunchConfig, PushKernelArg};
use candle_core::cuda_backend::CudaDevice;
use candle_core::{DType, Device, Tensor};

use super::buffers::{address, empty};
use super::launch::{dtype_suffix, MAX_GRID_Y, PTX};
use crate::error::{EngineError, Result};

const THREADS: u32 = 256;

/// RMSNorm over the last dim of a contiguous `x`, in the reference's order (normalise in f32, round, scale).
pub fn rms_norm(x: &Tensor, weight: &Tensor, eps: f64) -> Result<Option<Tensor>> {
    let Some((dev, suffix)) = kernel_dtype(x) else {
        return Ok(None);
    };
    if !x.is_contiguous() || weight.dtype() != x.dtype() {
        return Ok(None);
    }
    let h = x.dim(candle_core::D::Minus1)?;
    let rows = x.elem_count() / h;
    let out = empty(&dev, x.shape().clone(), x.dtype())?;
    let (x_p, w_p, out_p) = (address(x)?, address(weight)?, address(&out)?);
    let (none, h_i, eps_f) = (0u64, h as i32, eps as f32);
    let func = load(&dev, "rms_norm", suffix)?;
    let stream = dev.cuda_stream();
    let mut launch = stream.launch_builder(&func);
    launch
        .arg(&x_p)
        .arg(&none)
        .arg(&w_p)
        .arg(&none)
        .arg(&out_p)
        .arg(&h_i)
        .arg(&eps_f);
    let row_cache = (h * std::mem::size_of::<f32>()) as u32;
    let config = LaunchConfig {
        grid_dim: (rows as u32, 1, 1),
        block_dim: (THREADS, 1, 1),
        shared_mem_bytes: row_cache,
    };
    // SAFETY: decode.cu's rms_norm parameters; x, weight and out are live contiguous buffers of rows × h and
    // h elements, the two null pointers switch off the residual add.
    unsafe { launch.launch(config) }.map_err(|e| EngineError::Cuda(e.to_string()))?;
    Ok(Some(out))
}

/// silu(gate) · up of a contiguous fused projection (.., 2I), gate first → (.., I).
pub fn silu_mul(gate_up: &Tensor) -> Result<Option<Tensor>> {
    let Some((dev, suffix)) = kernel_dtype(gate_up) else {
        return Ok(None);
    };
    if !gate_up.is_contiguous() {
        return Ok(None);
    }
    let mut dims = gate_up.dims().to_vec();
    let Some(last) = dims.last_mut() else {
        return Ok(None);
    };
    let inter = *last / 2;
    *last = inter;
    let rows = gate_up.elem_count() / (2 * inter);
    // silu_mul puts rows on the grid's y axis.
    if rows > MAX_GRID_Y as usize {
        return Ok(None);
    }
    let out = empty(&dev, dims, gate_up.dtype())?;
    let (gu_p, out_p, i_i) = (address(gate_up)?, address(&out)?, inter as i32);
    let func = load(&dev, "silu_mul", suffix)?;
    let stream = dev.cuda_stream();
    let mut launch = stream.launch_builder(&func);
    launch.arg(&gu_p).arg(&out_p).arg(&i_i);
    let config = LaunchConfig {
        grid_dim: ((inter as u32).div_ceil(THREADS), rows as u32, 1),
        block_dim: (THREADS, 1, 1),
        shared_mem_bytes: 0,
    };
    // SAFETY: decode.cu's silu_mul parameters; gate_up holds rows × 2I elements and out rows × I.
    unsafe { launch.launch(config) }.map_err(|e| EngineError::Cuda(e.to_string()))?;
    Ok(Some(out))
}

/// int8 rows (u8 (…, row bytes), `crate::quant::Int8Matrix`'s layout) of `k` weights each, in `dtype`:
/// (rows, k), one launch.
pub fn dequantize_int8(rows: &Tensor, k: usize, dtype: DType) -> Result<Option<Tensor>> {
    let (Device::Cuda(dev), Some(suffix)) = (rows.device(), dtype_suffix(dtype)) else {
        return Ok(None);
    };
    let n = rows.elem_count() / crate::quant::row_bytes(k);
    let out = empty(dev, (n, k), dtype)?;
    let (w_p, out_p, n_u, k_i) = (address(rows)?, address(&out)?, n as u64, k as i32);
    let func = load(dev, "dequantize_int8", suffix)?;
    let stream = dev.cuda_stream();
    let mut launch = stream.launch_builder(&func);
    launch.arg(&w_p).arg(&out_p).arg(&n_u).arg(&k_i);
    let threads = (n * (k / 16)) as u32;
    let config = LaunchConfig {
        grid_dim: (threads.div_ceil(THREADS), 1, 1),
        block_dim: (THREADS, 1, 1),
        shared_mem_bytes: 0,
    };
    // SAFETY: decode.cu's dequantize_int8 parameters; rows holds n rows of row_bytes(k) bytes (k a multiple of
    // 32, checked when the matrix was made), out n × k elements, a thread per 16 weights.
    unsafe { launch.launch(config) }.map_err(|e| EngineError::Cuda(e.to_string()))?;
    Ok(Some(out))
}

fn kernel_dtype(t: &Tensor) -> Option<(CudaDevice, &'static str)> {
    let Device::Cuda(dev) = t.device() else {
        return None;
    };
    Some((dev.clone(), dtype_suffix(t.dtype())?))
}

fn load(
    dev: &CudaDevice,
    name: &str,
    suffix: &str,
) -> Result<candle_core::cuda_backend::cudarc::driver::CudaFunction> {
    Ok(dev
        .get_or_load_custom_func(&format!("{name}_{suffix}"), "deepread_decode", PTX)?
        .into_cuda_function())
}
