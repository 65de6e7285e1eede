//! SAM's multi-head attention with decomposed relative positions (MViTv2 style), spec §1.2 and §7.2/§7.4.

use std::collections::HashMap;

use candle_core::{DType, Tensor};

use super::dense::{After, Dense};
use super::resize::linear_resize_rows;
use crate::config::SamConfig;
use crate::error::Result;
use crate::layers::softmax_f32;
use crate::weights::Weights;

/// Score matrices larger than this many elements are computed a few heads at a time, to bound the memory of
/// global attention (12 heads × 4096² scores at 1024²).
const SCORE_CHUNK_ELEMS: usize = 1 << 26;

/// One SAM attention block; `rel_h`/`rel_w` hold the gathered `(q, k, head_dim)` tables per grid side.
#[derive(Debug, Clone)]
pub struct SamAttention {
    qkv: Dense,
    proj: Dense,
    num_heads: usize,
    head_dim: usize,
    /// Grid side → (Rh, Rw), each (side, side, head_dim): `R[q, k] = rel_pos[q − k + side − 1]` after the table
    /// was resized to `2·side − 1` rows. Precomputed for every side this block will see.
    rel: HashMap<usize, (Tensor, Tensor)>,
}

impl SamAttention {
    /// `sides` lists the grid sides this block attends over (the window size, or the full grids of the global
    /// view and of the tiles for a global block).
    pub fn load(
        w: &Weights,
        prefix: &str,
        cfg: &SamConfig,
        table_side: usize,
        sides: &[usize],
    ) -> Result<Self> {
        let (c, hd) = (cfg.hidden_size, cfg.head_dim());
        let rows = 2 * table_side - 1;
        let rel_pos_h = w.get_f32_cpu(&format!("{prefix}.rel_pos_h"), &[rows, hd])?;
        let rel_pos_w = w.get_f32_cpu(&format!("{prefix}.rel_pos_w"), &[rows, hd])?;
        let mut rel = HashMap::new();
        for &side in sides {
            let rh = rel_pos_gathered(&rel_pos_h, side)?
                .to_dtype(w.dtype())?
                .to_device(w.device())?;
            let rw = rel_pos_gathered(&rel_pos_w, side)?
                .to_dtype(w.dtype())?
                .to_device(w.device())?;
            rel.insert(side, (rh, rw));
        }
        Ok(Self {
            qkv: Dense::load(w, &format!("{prefix}.qkv"), c, 3 * c, cfg.qkv_bias)?,
            proj: Dense::load(w, &format!("{prefix}.proj"), c, c, true)?,
            num_heads: cfg.num_heads,
            head_dim: hd,
            rel,
        })
    }

    /// The attention over `x` (B, h, w, C), h == w, with the heads merged but before the output projection
    /// ([`Self::proj`], which the block fuses with its residual add): (B, h, w, C).
    pub fn attend(&self, x: &Tensor) -> Result<Tensor> {
        let (b, h, w, c) = x.dims4()?;
        let (nh, hd) = (self.num_heads, self.head_dim);
        // The 3·C output rows are ordered [q | k | v], each heads × head_dim.
        let qkv = self
            .qkv
            .forward(x, After::Nothing)?
            .reshape((b, h * w, 3, nh, hd))?
            .permute((2, 0, 3, 1, 4))?;
        // Strided views, not copies: the GPU kernels read strides (`get` would copy each out).
        let part = |i: usize| qkv.narrow(0, i, 1)?.squeeze(0);
        let (q, k, v) = (part(0)?, part(1)?, part(2)?);
        Ok(match self.fused_attention(&q, &k, &v, h, w)? {
            Some(out) => out.reshape((b, h, w, c))?,
            None => self
                .attention(&q, &k, &v, h, w)?
                .reshape((b, nh, h, w, hd))?
                .permute((0, 2, 3, 1, 4))?
                .reshape((b, h, w, c))?,
        })
    }

    /// The output projection.
    pub fn proj(&self) -> &Dense {
        &self.proj
    }

    /// Scores materialised a few heads at a time: (B, heads, h·w, hd) → (B·heads, h·w, hd).
    fn attention(&self, q: &Tensor, k: &Tensor, v: &Tensor, h: usize, w: usize) -> Result<Tensor> {
        let (b, nh, n, hd) = q.dims4()?;
        let flat = |t: &Tensor| t.reshape((b * nh, n, hd))?.contiguous();
        let (q, k, v) = (flat(q)?, flat(k)?, flat(v)?);
        let (rh, rw) = self.rel_tables(h, w)?;
        let scale = (hd as f64).powf(-0.5);
        let chunk = (SCORE_CHUNK_ELEMS / (n * n)).max(1);
        let mut outs = Vec::new();
        for start in (0..b * nh).step_by(chunk) {
            let len = chunk.min(b * nh - start);
            let qc = q.narrow(0, start, len)?;
            let scores = (qc.clone() * scale)?.matmul(&k.narrow(0, start, len)?.t()?)?;
            let (rel_h, rel_w) = rel_pos_terms(&qc, rh, rw, h, w)?;
            let bias = rel_h
                .reshape((len, h, w, h))?
                .unsqueeze(4)?
                .broadcast_add(&rel_w.reshape((len, h, w, w))?.unsqueeze(3)?)?
                .reshape((len, n, n))?;
            let probs = softmax_f32(&(scores + bias)?)?;
            outs.push(probs.matmul(&v.narrow(0, start, len)?)?);
        }
        Ok(Tensor::cat(&outs, 0)?)
    }

    /// Flash attention with the bias terms added inside the kernel (CUDA, bf16): (B, h·w, heads, hd), or None.
    #[cfg(feature = "cuda")]
    fn fused_attention(
        &self,
        q: &Tensor,
        k: &Tensor,
        v: &Tensor,
        h: usize,
        w: usize,
    ) -> Result<Option<Tensor>> {
        use crate::kernels::{
            flash_attention, rel_pos_terms as fused_terms, RelPosBias, Visibility,
        };
        if q.dtype() != DType::BF16 || !q.device().is_cuda() {
            return Ok(None);
        }
        let (b, nh, n, hd) = q.dims4()?;
        let (rh, rw) = self.rel_tables(h, w)?;
        let (rel_h, rel_w) = match fused_terms(q, rh, rw, h, w)? {
            Some(terms) => terms,
            None => {
                let (rel_h, rel_w) = rel_pos_terms(&q.reshape((b * nh, n, hd))?, rh, rw, h, w)?;
                (rel_h.reshape((b, nh, n, h))?, rel_w.reshape((b, nh, n, w))?)
            }
        };
        let bias = RelPosBias {
            h: &rel_h,
            w: &rel_w,
            cols: w,
        };
        let scale = (hd as f64).powf(-0.5);
        flash_attention(q, k, v, Some(bias), scale, Visibility::All)
    }

    #[cfg(not(feature = "cuda"))]
    fn fused_attention(
        &self,
        _q: &Tensor,
        _k: &Tensor,
        _v: &Tensor,
        _h: usize,
        _w: usize,
    ) -> Result<Option<Tensor>> {
        Ok(None)
    }

    /// The gathered (Rh, Rw) tables for a grid side, if this block was prepared for it.
    pub fn rel_pos_tables(&self, side: usize) -> Option<&(Tensor, Tensor)> {
        self.rel.get(&side)
    }

    fn rel_tables(&self, h: usize, w: usize) -> Result<(&Tensor, &Tensor)> {
        let (rh, _) = self.rel.get(&h).ok_or_else(|| unsupported_side(h))?;
        let (_, rw) = self.rel.get(&w).ok_or_else(|| unsupported_side(w))?;
        Ok((rh, rw))
    }
}

fn unsupported_side(side: usize) -> crate::error::EngineError {
    crate::error::EngineError::Input(format!(
        "SAM attention over a {side}-wide grid: the view size does not match the global view or the tile size"
    ))
}

/// `get_rel_pos` for equal query/key sizes: resize the table to `2·side − 1` rows (linear, the identity when the
/// size already matches), then gather `R[q, k] = table[q − k + side − 1]` → (side, side, head_dim).
fn rel_pos_gathered(table: &Tensor, side: usize) -> Result<Tensor> {
    let (rows, hd) = table.dims2()?;
    let src = table.flatten_all()?.to_vec1::<f32>()?;
    let resized = linear_resize_rows(&src, (rows, hd), 2 * side - 1);
    let mut out = Vec::with_capacity(side * side * hd);
    for q in 0..side {
        for k in 0..side {
            let r = q + side - 1 - k;
            out.extend_from_slice(&resized[r * hd..(r + 1) * hd]);
        }
    }
    Ok(Tensor::from_vec(out, (side, side, hd), &candle_core::Device::Cpu)?.to_dtype(DType::F32)?)
}

/// The two terms of the decomposed bias `bias[(qh,qw),(kh,kw)] = q·Rh[qh,kh] + q·Rw[qw,kw]`, computed from the
/// *unscaled* q (spec §7.4). `q`: (n, h·w, d) → rel_h (n, h·w, h) and rel_w (n, h·w, w), contiguous.
fn rel_pos_terms(
    q: &Tensor,
    rh: &Tensor,
    rw: &Tensor,
    h: usize,
    w: usize,
) -> Result<(Tensor, Tensor)> {
    let (n, _, d) = q.dims3()?;
    let q = q.reshape((n, h, w, d))?;
    // rel_h[n, qh, qw, kh] = Σ_c q[n, qh, qw, c] · Rh[qh, kh, c]: a batched matmul over qh.
    let qh = q
        .permute((1, 0, 2, 3))?
        .reshape((h, n * w, d))?
        .contiguous()?;
    let rel_h = qh
        .matmul(&rh.t()?)?
        .reshape((h, n, w, h))?
        .permute((1, 0, 2, 3))?
        .contiguous()?
        .reshape((n, h * w, h))?;
    // rel_w[n, qh, qw, kw] = Σ_c q[n, qh, qw, c] · Rw[qw, kw, c]: a batched matmul over qw.
    let qw = q
        .permute((2, 0, 1, 3))?
        .reshape((w, n * h, d))?
        .contiguous()?;
    let rel_w = qw
        .matmul(&rw.t()?)?
        .reshape((w, n, h, w))?
        .permute((1, 2, 0, 3))?
        .contiguous()?
        .reshape((n, h * w, w))?;
    Ok((rel_h, rel_w))
}
