//! The vision encoders' kernels (vision.cu) as tensor functions. Each returns None where it does not apply
//! (off CUDA, not bf16, widths not a multiple of 8, head dim other than 64), and the caller keeps candle's ops.

use candle_core::cuda_backend::cudarc::driver::{LaunchArgs, LaunchConfig, PushKernelArg};
use candle_core::cuda_backend::CudaDevice;
use candle_core::{DType, Device, Tensor};

use super::buffers::{address, empty, optional_address, strided};
use crate::error::{EngineError, Result};

const PTX: &str = include_str!(concat!(env!("OUT_DIR"), "/vision.ptx"));
/// vision.cu's THREADS, REL_THREADS, REL_MAX_SIDE and LN_CHUNKS.
const THREADS: u32 = 256;
const REL_THREADS: u32 = 256;
const REL_MAX_SIDE: usize = 64;
const LN_MAX_COLS: usize = 32 * 8 * 4;

/// What follows a linear layer's matmul, in this order: the bias, the exact GELU, the residual add. With
/// `windows`, the matmul's rows are SAM windows of the residual's grid and come out merged into it.
#[derive(Default)]
pub struct Epilogue<'a> {
    pub bias: Option<&'a Tensor>,
    pub gelu: bool,
    pub residual: Option<&'a Tensor>,
    pub windows: Option<WindowGrid>,
}

/// A (B, h, w) token grid cut into `size`×`size` windows, zero-padded at the bottom and right.
#[derive(Clone, Copy, Debug)]
pub struct WindowGrid {
    pub h: usize,
    pub w: usize,
    pub size: usize,
}

impl WindowGrid {
    /// Windows per image.
    pub fn count(&self) -> usize {
        self.h.div_ceil(self.size) * self.w.div_ceil(self.size)
    }
}

/// `y` (rows, cols) through `then`: (rows, cols), or with windows the residual's (grid tokens, cols).
pub fn linear_epilogue(y: &Tensor, then: &Epilogue<'_>) -> Result<Option<Tensor>> {
    let Some(dev) = bf16_cuda(y) else {
        return Ok(None);
    };
    let (rows, cols) = y.dims2()?;
    if cols % 8 != 0 || !y.is_contiguous() {
        return Ok(None);
    }
    let bias_ok = then.bias.is_none_or(|b| b.elem_count() == cols);
    let out_rows = match (then.windows, then.residual) {
        (Some(_), None) => {
            return Err(EngineError::Input(
                "merging windows needs the grid they came from".into(),
            ))
        }
        (Some(_), Some(res)) => res.elem_count() / cols,
        (None, _) => rows,
    };
    if !bias_ok
        || then
            .residual
            .is_some_and(|r| r.elem_count() != out_rows * cols)
    {
        return Err(EngineError::Input(format!(
            "a linear layer's epilogue got a bias or residual of another width than its {cols} columns"
        )));
    }
    let bias = optional_address(then.bias)?;
    let residual = optional_address(then.residual)?;
    let out = empty(&dev, (out_rows, cols), DType::BF16)?;
    let (y_p, out_p) = (address(y)?, address(&out)?);
    let grid = then.windows.unwrap_or(WindowGrid {
        h: 0,
        w: 0,
        size: 0,
    });
    let (rows_i, cols_i, gelu) = (out_rows as i64, cols as i32, then.gelu as i32);
    let [h, w, ws] = [grid.h, grid.w, grid.size].map(|n| n as i32);
    let func = load(&dev, "linear_epilogue_bf16")?;
    let stream = dev.cuda_stream();
    let mut launch = stream.launch_builder(&func);
    launch
        .arg(&y_p)
        .arg(&bias)
        .arg(&residual)
        .arg(&out_p)
        .arg(&rows_i)
        .arg(&cols_i)
        .arg(&gelu)
        .arg(&h)
        .arg(&w)
        .arg(&ws);
    run(launch, elementwise(out_rows * cols / 8), THREADS)?;
    Ok(Some(out))
}

/// (B, h, w, C) → (B·windows, size, size, C), zeros past the grid.
pub fn window_split(x: &Tensor, size: usize) -> Result<Option<Tensor>> {
    let Some(dev) = bf16_cuda(x) else {
        return Ok(None);
    };
    let (b, h, w, c) = x.dims4()?;
    if c % 8 != 0 || !x.is_contiguous() {
        return Ok(None);
    }
    let windows = b * WindowGrid { h, w, size }.count();
    let out = empty(&dev, (windows, size, size, c), DType::BF16)?;
    let (x_p, out_p) = (address(x)?, address(&out)?);
    let rows = (windows * size * size) as i64;
    let [c_i, h_i, w_i, ws] = [c, h, w, size].map(|n| n as i32);
    let func = load(&dev, "window_split_bf16")?;
    let stream = dev.cuda_stream();
    let mut launch = stream.launch_builder(&func);
    launch
        .arg(&x_p)
        .arg(&out_p)
        .arg(&rows)
        .arg(&c_i)
        .arg(&h_i)
        .arg(&w_i)
        .arg(&ws);
    run(launch, elementwise(rows as usize * c / 8), THREADS)?;
    Ok(Some(out))
}

/// SAM's relative-position terms from the unscaled `q` (B, heads, h·w, 64), any strides with the last dim
/// contiguous, and the gathered tables Rh (h, h, 64), Rw (w, w, 64): q·Rh (B, heads, h·w, h) and q·Rw
/// (B, heads, h·w, w). None where the kernel does not take them (rows or tables not 16-byte aligned, say),
/// for the caller's own path.
pub fn rel_pos_terms(
    q: &Tensor,
    rh: &Tensor,
    rw: &Tensor,
    h: usize,
    w: usize,
) -> Result<Option<(Tensor, Tensor)>> {
    let Some(dev) = bf16_cuda(q) else {
        return Ok(None);
    };
    let (b, heads, n, hd) = q.dims4()?;
    if hd != 64 || n != h * w || n == 0 || h > REL_MAX_SIDE || w > REL_MAX_SIDE {
        return Ok(None);
    }
    if rh.dims() != [h, h, hd] || rw.dims() != [w, w, hd] {
        return Err(EngineError::Input(format!(
            "relative-position tables {:?} and {:?} for a {h}×{w} grid",
            rh.dims(),
            rw.dims()
        )));
    }
    let (q_p, [q_batch, q_head, q_row]) = strided(q)?;
    let (rh_p, rw_p) = (address(rh)?, address(rw)?);
    // The kernel reads the query rows and the tables in 16-byte pieces.
    let aligned = [q_p, rh_p, rw_p].iter().all(|p| p % 16 == 0)
        && [q_batch, q_head, q_row].iter().all(|s| s % 8 == 0);
    if !aligned {
        return Ok(None);
    }
    let out_h = empty(&dev, (b, heads, n, h), DType::BF16)?;
    let out_w = empty(&dev, (b, heads, n, w), DType::BF16)?;
    let (oh_p, ow_p) = (address(&out_h)?, address(&out_w)?);
    let [heads_i, h_i, w_i] = [heads, h, w].map(|n| n as i32);
    let func = load(&dev, "rel_pos_terms_hd64_bf16")?;
    let stream = dev.cuda_stream();
    let mut launch = stream.launch_builder(&func);
    launch
        .arg(&q_p)
        .arg(&q_batch)
        .arg(&q_head)
        .arg(&q_row)
        .arg(&rh_p)
        .arg(&rw_p)
        .arg(&oh_p)
        .arg(&ow_p)
        .arg(&heads_i)
        .arg(&h_i)
        .arg(&w_i);
    let heads_a_block = REL_THREADS as usize / h.max(w);
    let head_blocks = heads.div_ceil(heads_a_block) as u32;
    run(launch, ((h + w) as u32, head_blocks, b as u32), REL_THREADS)?;
    Ok(Some((out_h, out_w)))
}

/// The rotary embedding of `heads` heads of a fused projection's output, read in place: `qkv` (B, T, width)
/// contiguous with the heads' columns from `first`, cos/sin contiguous, (T, hd/2) shared by the rows or
/// (B, T, hd/2) a row each → (B, heads, T, hd) contiguous, bit for bit candle's `rope` of the same heads
/// copied out.
pub fn rope_heads(
    qkv: &Tensor,
    first: usize,
    heads: usize,
    head_dim: usize,
    cos: &Tensor,
    sin: &Tensor,
) -> Result<Option<Tensor>> {
    let Some(dev) = bf16_cuda(qkv) else {
        return Ok(None);
    };
    let (b, t, width) = qkv.dims3()?;
    let half = head_dim / 2;
    let cos_batch = match cos.dims() {
        [ct, ch] | [1, ct, ch] if (*ct, *ch) == (t, half) => 0,
        [cb, ct, ch] if (*cb, *ct, *ch) == (b, t, half) => t * half,
        _ => return Ok(None),
    };
    let tables_fit = [cos, sin]
        .iter()
        .all(|c| c.dims() == cos.dims() && c.is_contiguous() && c.dtype() == DType::BF16);
    if !qkv.is_contiguous() || !tables_fit || !head_dim.is_multiple_of(2) {
        return Ok(None);
    }
    if first + heads * head_dim > width {
        return Err(EngineError::Input(format!(
            "{heads} heads of {head_dim} from column {first} run past a {width}-wide projection"
        )));
    }
    let out = empty(&dev, (b, heads, t, head_dim), DType::BF16)?;
    let pairs = (b * heads * t * half) as i64;
    let [t_i, heads_i, hd_i, width_i, first_i] =
        [t, heads, head_dim, width, first].map(|n| n as i32);
    let cos_batch = cos_batch as i64;
    let func = load(&dev, "rope_heads_bf16")?;
    let stream = dev.cuda_stream();
    let mut launch = stream.launch_builder(&func);
    let ptrs = [address(qkv)?, address(cos)?, address(sin)?, address(&out)?];
    for p in &ptrs {
        launch.arg(p);
    }
    launch
        .arg(&pairs)
        .arg(&t_i)
        .arg(&heads_i)
        .arg(&hd_i)
        .arg(&width_i)
        .arg(&first_i)
        .arg(&cos_batch);
    run(launch, elementwise(pairs as usize), THREADS)?;
    Ok(Some(out))
}

/// `nn.LayerNorm` over the last dim of a contiguous `x` with its weight and bias, or None where the kernel does
/// not apply (off CUDA, not bf16, a width not a multiple of 8 or past 1,024).
pub fn layer_norm(x: &Tensor, weight: &Tensor, bias: &Tensor, eps: f64) -> Result<Option<Tensor>> {
    let Some(dev) = bf16_cuda(x) else {
        return Ok(None);
    };
    let cols = x.dim(candle_core::D::Minus1)?;
    let params_fit = [weight, bias]
        .iter()
        .all(|p| p.dims() == [cols] && p.is_contiguous() && p.dtype() == DType::BF16);
    if !x.is_contiguous() || !params_fit || cols % 8 != 0 || cols > LN_MAX_COLS {
        return Ok(None);
    }
    let rows = x.elem_count() / cols;
    let out = empty(&dev, x.shape().clone(), DType::BF16)?;
    let func = load(&dev, "layer_norm_bf16")?;
    let stream = dev.cuda_stream();
    let mut launch = stream.launch_builder(&func);
    let ptrs = [
        address(x)?,
        address(weight)?,
        address(bias)?,
        address(&out)?,
    ];
    for p in &ptrs {
        launch.arg(p);
    }
    let (rows_i, cols_i, eps_f) = (rows as i64, cols as i32, eps as f32);
    launch.arg(&rows_i).arg(&cols_i).arg(&eps_f);
    let warps_per_block = THREADS / 32;
    run(
        launch,
        ((rows as u32).div_ceil(warps_per_block), 1, 1),
        THREADS,
    )?;
    Ok(Some(out))
}

fn bf16_cuda(t: &Tensor) -> Option<CudaDevice> {
    match (t.device(), t.dtype()) {
        (Device::Cuda(dev), DType::BF16) => Some(dev.clone()),
        _ => None,
    }
}

fn load(
    dev: &CudaDevice,
    name: &str,
) -> Result<candle_core::cuda_backend::cudarc::driver::CudaFunction> {
    Ok(dev
        .get_or_load_custom_func(name, "deepread_vision", PTX)?
        .into_cuda_function())
}

/// Blocks of THREADS covering `items` work items.
fn elementwise(items: usize) -> (u32, u32, u32) {
    ((items as u32).div_ceil(THREADS), 1, 1)
}

fn run(mut launch: LaunchArgs<'_>, grid_dim: (u32, u32, u32), threads: u32) -> Result<()> {
    let config = LaunchConfig {
        grid_dim,
        block_dim: (threads, 1, 1),
        shared_mem_bytes: 0,
    };
    // SAFETY: the arguments follow vision.cu's parameter lists; every pointer addresses a live bf16 buffer of
    // the shape checked above, and the kernels index within those shapes.
    unsafe { launch.launch(config) }
        .map(|_| ())
        .map_err(|e| EngineError::Cuda(e.to_string()))
}
