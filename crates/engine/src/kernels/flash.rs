//! Flash attention (flash_attention.cu) for the long attentions of a page: SAM's global and windowed
//! attention with its decomposed relative-position bias, the Qwen2 encoder's causal-flow mask and the LM's
//! prompt. Scores are never materialised; softmax runs in f32 and P·V in bf16 with f32 sums, like the
//! reference's fused SDPA. Off CUDA, in f32 or at other head dims, callers keep the straightforward path.

use candle_core::cuda_backend::cudarc::driver::{LaunchConfig, PushKernelArg};
use candle_core::{DType, Device, Tensor};

use super::buffers::strided;
use crate::error::{EngineError, Result};

const PTX: &str = include_str!(concat!(env!("OUT_DIR"), "/flash_attention.ptx"));

/// SAM's decomposed relative-position bias: key j of a `cols`-wide grid adds `h[.., j / cols] + w[.., j % cols]`
/// to the score. `h`: (B, heads, q_len, rows), `w`: (B, heads, q_len, cols), last dims contiguous.
pub struct RelPosBias<'a> {
    pub h: &'a Tensor,
    pub w: &'a Tensor,
    pub cols: usize,
}

/// Which keys a query sees: key j is visible to query i iff `j < visible_prefix` or j ≤ i + (kv_len − q_len).
#[derive(Clone, Copy)]
pub enum Visibility {
    All,
    Causal,
    /// The first n keys to every query, the rest causally (the Qwen2 encoder's image tokens and queries).
    PrefixThenCausal(usize),
}

/// softmax(q·kᵀ·scale + bias, masked)·v. `q`: (B, heads, q_len, hd), `k`/`v`: (B, kv_heads, kv_len, hd), any
/// strides with the last dim contiguous. Returns (B, q_len, heads, hd) contiguous, or None where the kernel
/// does not apply (not CUDA, not bf16, head dim other than 64 or 128).
pub fn flash_attention(
    q: &Tensor,
    k: &Tensor,
    v: &Tensor,
    bias: Option<RelPosBias<'_>>,
    scale: f64,
    visibility: Visibility,
) -> Result<Option<Tensor>> {
    let (Device::Cuda(dev), DType::BF16) = (q.device(), q.dtype()) else {
        return Ok(None);
    };
    let (batch, heads, q_len, hd) = q.dims4()?;
    let (_, kv_heads, kv_len, _) = k.dims4()?;
    let Some(shape) = TileShape::for_head_dim(hd) else {
        return Ok(None);
    };
    let name = format!("flash_attention_hd{hd}_bf16");
    let func = dev.get_or_load_custom_func(&name, "deepread_flash_attention", PTX)?;
    let out = Tensor::zeros((batch, q_len, heads, hd), DType::BF16, q.device())?;
    let (q_p, q_s) = strided(q)?;
    let (k_p, k_s) = strided(k)?;
    let (v_p, v_s) = strided(v)?;
    let (o_p, o_s) = {
        // The output as (B, heads, q_len, hd) strides over its (B, q_len, heads, hd) buffer.
        let (p, s) = strided(&out)?;
        (p, [s[0], s[2], s[1]])
    };
    let (bh_p, bh_s, bw_p, bw_s, cols) = match &bias {
        Some(b) => {
            let (hp, hs) = strided(b.h)?;
            let (wp, ws) = strided(b.w)?;
            (hp, hs, wp, ws, b.cols as i32)
        }
        None => (0, [0; 3], 0, [0; 3], 1),
    };
    let visible_prefix = match visibility {
        Visibility::All => kv_len,
        Visibility::Causal => 0,
        Visibility::PrefixThenCausal(n) => n,
    } as i32;
    let ints = [batch, heads, kv_heads, q_len, kv_len].map(|n| n as i32);
    let scale = scale as f32;
    let stream = dev.cuda_stream();
    let mut launch = stream.launch_builder(&func);
    launch
        .arg(&q_p)
        .arg(&k_p)
        .arg(&v_p)
        .arg(&o_p)
        .arg(&bh_p)
        .arg(&bw_p);
    for n in &ints {
        launch.arg(n);
    }
    for s in q_s.iter().chain(&k_s).chain(&v_s).chain(&o_s) {
        launch.arg(s);
    }
    for s in bh_s.iter().chain(&bw_s) {
        launch.arg(s);
    }
    launch.arg(&cols).arg(&scale).arg(&visible_prefix);
    let config = LaunchConfig {
        grid_dim: (
            (q_len as u32).div_ceil(shape.block_q),
            heads as u32,
            batch as u32,
        ),
        block_dim: (shape.threads, 1, 1),
        shared_mem_bytes: 0,
    };
    // SAFETY: the arguments follow flash_attention.cu's parameter list; every pointer addresses a live
    // buffer that the strides and lengths above stay inside (they come from the tensors' own layouts).
    unsafe { launch.launch(config) }.map_err(|e| EngineError::Cuda(e.to_string()))?;
    Ok(Some(out))
}

/// The launch shape the kernel was written for at each head dim (see flash_attention.cu).
struct TileShape {
    block_q: u32,
    threads: u32,
}

impl TileShape {
    fn for_head_dim(hd: usize) -> Option<Self> {
        match hd {
            64 => Some(Self {
                block_q: 128,
                threads: 256,
            }),
            128 => Some(Self {
                block_q: 64,
                threads: 128,
            }),
            _ => None,
        }
    }
}
