//! SAM ViT image encoder ("vision tokenizer"): patch embedding, absolute positions, windowed/global blocks, the
//! neck and the two stride-2 downsampling convs (spec §1.2). Activations are channels-last (B, h, w, C) until the
//! neck, where the layout turns NCHW as in the reference.

use std::collections::HashMap;

use candle_core::{DType, Module, Tensor};
use candle_nn::{LayerNorm, Linear};

use super::resize::bicubic_aa_resize;
use super::sam_attention::SamAttention;
use crate::config::SamConfig;
use crate::error::{EngineError, Result};
use crate::layers::linear;
use crate::layers::norm::layer_norm;
use crate::weights::Weights;

const PREFIX: &str = "vision_tower.sam_encoder";

/// One transformer block: `x + attn(window(norm1(x)))`, then `x + mlp(norm2(x))`.
#[derive(Debug, Clone)]
struct SamBlock {
    norm1: LayerNorm,
    attn: SamAttention,
    norm2: LayerNorm,
    lin1: Linear,
    lin2: Linear,
    /// 0 for global attention.
    window: usize,
}

impl SamBlock {
    fn load(w: &Weights, i: usize, cfg: &SamConfig, grids: &[usize]) -> Result<Self> {
        let p = format!("{PREFIX}.layers.{i}");
        let (c, eps) = (cfg.hidden_size, cfg.layer_norm_eps);
        let (window, table_side, sides) = if cfg.is_global(i) {
            (0, cfg.grid(), grids.to_vec())
        } else {
            (cfg.window_size, cfg.window_size, vec![cfg.window_size])
        };
        Ok(Self {
            norm1: layer_norm(w, &format!("{p}.layer_norm1"), c, eps)?,
            attn: SamAttention::load(w, &format!("{p}.attn"), cfg, table_side, &sides)?,
            norm2: layer_norm(w, &format!("{p}.layer_norm2"), c, eps)?,
            lin1: linear(w, &format!("{p}.mlp.lin1"), c, cfg.mlp_dim, true)?,
            lin2: linear(w, &format!("{p}.mlp.lin2"), cfg.mlp_dim, c, true)?,
            window,
        })
    }

    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let (_, h, w, _) = x.dims4()?;
        let normed = self.norm1.forward(x)?;
        let attended = if self.window > 0 {
            let (windows, padded) = window_partition(&normed, self.window)?;
            window_unpartition(&self.attn.forward(&windows)?, self.window, padded, (h, w))?
        } else {
            self.attn.forward(&normed)?
        };
        let x = (x + attended)?;
        // nn.GELU() default: the exact erf form.
        let mlp = self
            .lin2
            .forward(&self.lin1.forward(&self.norm2.forward(&x)?)?.gelu_erf()?)?;
        Ok((x + mlp)?)
    }
}

/// Zero-pad (B, h, w, C) at the bottom/right to multiples of `ws` — after norm1, so padded tokens take part in
/// attention with k/v equal to the qkv bias, as in SAM (spec §7.3) — and cut it into (B·nW, ws, ws, C) windows,
/// row-major.
pub fn window_partition(x: &Tensor, ws: usize) -> Result<(Tensor, (usize, usize))> {
    let (b, h, w, c) = x.dims4()?;
    let (pad_h, pad_w) = ((ws - h % ws) % ws, (ws - w % ws) % ws);
    let x = x.pad_with_zeros(1, 0, pad_h)?.pad_with_zeros(2, 0, pad_w)?;
    let (hp, wp) = (h + pad_h, w + pad_w);
    let windows = x
        .reshape((b, hp / ws, ws, wp / ws, ws, c))?
        .permute((0, 1, 3, 2, 4, 5))?
        .contiguous()?
        .reshape((b * (hp / ws) * (wp / ws), ws, ws, c))?;
    Ok((windows, (hp, wp)))
}

/// Inverse of [`window_partition`], cropping the padding.
pub fn window_unpartition(
    windows: &Tensor,
    ws: usize,
    (hp, wp): (usize, usize),
    (h, w): (usize, usize),
) -> Result<Tensor> {
    let c = windows.dim(3)?;
    let b = windows.dim(0)? / ((hp / ws) * (wp / ws));
    let x = windows
        .reshape((b, hp / ws, wp / ws, ws, ws, c))?
        .permute((0, 1, 3, 2, 4, 5))?
        .contiguous()?
        .reshape((b, hp, wp, c))?;
    Ok(x.narrow(1, 0, h)?.narrow(2, 0, w)?.contiguous()?)
}

/// A bias-free conv2d stored OIHW.
#[derive(Debug, Clone)]
struct Conv {
    weight: Tensor,
    stride: usize,
    padding: usize,
}

impl Conv {
    fn load(w: &Weights, name: &str, shape: [usize; 4], stride: usize) -> Result<Self> {
        // candle's CPU conv2d has no half-precision kernel: on the CPU the convs run in f32 and cast back.
        let dtype = if w.device().is_cpu() {
            DType::F32
        } else {
            w.dtype()
        };
        let weight = w.get_as(&format!("{name}.weight"), &shape, dtype)?;
        Ok(Self {
            weight,
            stride,
            padding: shape[3] / 2,
        })
    }

    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let y = x.to_dtype(self.weight.dtype())?;
        let y = y.conv2d(&self.weight, self.padding, self.stride, 1, 1)?;
        Ok(y.to_dtype(x.dtype())?)
    }
}

/// SAM ViT with neck and downsampling: (B, 3, S, S) → (B, C_out, S/64, S/64).
#[derive(Debug, Clone)]
pub struct SamEncoder {
    cfg: SamConfig,
    /// The 16×16 stride-16 patch conv as a matmul over flattened patches: (C, 3·p·p) and its bias.
    patch_weight: Tensor,
    patch_bias: Tensor,
    /// Grid side → absolute positions (1, side, side, C), resized from the trained grid once at load.
    pos_embed: HashMap<usize, Tensor>,
    blocks: Vec<SamBlock>,
    neck_conv1: Linear,
    neck_norm1: LayerNorm,
    neck_conv2: Conv,
    neck_norm2: LayerNorm,
    down1: Conv,
    down2: Conv,
}

impl SamEncoder {
    /// `view_sizes` are the pixel sizes of the views the model will see (the global view and the tiles).
    pub fn load(w: &Weights, cfg: &SamConfig, view_sizes: &[usize]) -> Result<Self> {
        let (c, p, grid) = (cfg.hidden_size, cfg.patch_size, cfg.grid());
        let grids: Vec<usize> = view_sizes.iter().map(|s| s / p).collect();
        let patch_weight = w
            .get(
                &format!("{PREFIX}.patch_embed.projection.weight"),
                &[c, 3, p, p],
            )?
            .reshape((c, 3 * p * p))?;
        let patch_bias = w.get(&format!("{PREFIX}.patch_embed.projection.bias"), &[c])?;

        // interpolate_pos_encoding: bicubic antialiased in f32, then cast (spec §7.1).
        let trained = w.get_f32_cpu(&format!("{PREFIX}.pos_embed"), &[1, grid, grid, c])?;
        let trained_vec = trained.flatten_all()?.to_vec1::<f32>()?;
        let mut pos_embed = HashMap::new();
        for &side in &grids {
            let data = if side == grid {
                trained_vec.clone()
            } else {
                bicubic_aa_resize(&trained_vec, (grid, grid, c), side, side)
            };
            let t = Tensor::from_vec(data, (1, side, side, c), &candle_core::Device::Cpu)?;
            pos_embed.insert(side, t.to_dtype(w.dtype())?.to_device(w.device())?);
        }

        let blocks = (0..cfg.num_layers)
            .map(|i| SamBlock::load(w, i, cfg, &grids))
            .collect::<Result<Vec<_>>>()?;
        let (out_c, eps) = (cfg.output_channels, cfg.layer_norm_eps);
        let [d1, d2] = cfg.downsample_channels;
        let neck_conv1 = w
            .get(&format!("{PREFIX}.neck.conv1.weight"), &[out_c, c, 1, 1])?
            .reshape((out_c, c))?;
        Ok(Self {
            cfg: cfg.clone(),
            patch_weight,
            patch_bias,
            pos_embed,
            blocks,
            neck_conv1: Linear::new(neck_conv1, None),
            neck_norm1: layer_norm(w, &format!("{PREFIX}.neck.layer_norm1"), out_c, eps)?,
            neck_conv2: Conv::load(w, &format!("{PREFIX}.neck.conv2"), [out_c, out_c, 3, 3], 1)?,
            neck_norm2: layer_norm(w, &format!("{PREFIX}.neck.layer_norm2"), out_c, eps)?,
            down1: Conv::load(w, &format!("{PREFIX}.proj.conv1"), [d1, out_c, 3, 3], 2)?,
            down2: Conv::load(w, &format!("{PREFIX}.proj.conv2"), [d2, d1, 3, 3], 2)?,
        })
    }

    /// The absolute position table used for a `side`×`side` grid (exposed for the parity tests).
    pub fn pos_embed(&self, side: usize) -> Option<&Tensor> {
        self.pos_embed.get(&side)
    }

    /// Block `layer`'s gathered relative-position tables (Rh, Rw) for a grid side (exposed for the parity tests).
    pub fn rel_pos_tables(&self, layer: usize, side: usize) -> Option<&(Tensor, Tensor)> {
        self.blocks.get(layer)?.attn.rel_pos_tables(side)
    }

    /// (B, 3, S, S) normalised pixels → (B, C_out, S/64, S/64).
    pub fn forward(&self, pixels: &Tensor) -> Result<Tensor> {
        let (b, ch, s, s2) = pixels.dims4()?;
        let p = self.cfg.patch_size;
        if ch != 3 || s != s2 || s % p != 0 {
            return Err(EngineError::Input(format!(
                "a view must be 3×S×S with S a multiple of {p}, got {ch}×{s}×{s2}"
            )));
        }
        let g = s / p;
        let pos = self.pos_embed.get(&g).ok_or_else(|| {
            EngineError::Input(format!(
                "no SAM position table for a {s}×{s} view (this model was loaded for other sizes)"
            ))
        })?;
        let mut x = self.patch_embed(pixels, b, g)?.broadcast_add(pos)?;
        for block in &self.blocks {
            x = block.forward(&x)?;
        }
        // The neck's LayerNorm2d normalises over channels, i.e. over the last dim while still channels-last.
        let x = self.neck_norm1.forward(&self.neck_conv1.forward(&x)?)?;
        let x = x.permute((0, 3, 1, 2))?.contiguous()?;
        let x = self.neck_conv2.forward(&x)?;
        let x = self
            .neck_norm2
            .forward(&x.permute((0, 2, 3, 1))?.contiguous()?)?
            .permute((0, 3, 1, 2))?
            .contiguous()?;
        self.down2.forward(&self.down1.forward(&x)?)
    }

    /// Conv2d(3→C, k=p, s=p) as one matmul over non-overlapping patches; channels-last (B, g, g, C) out.
    fn patch_embed(&self, pixels: &Tensor, b: usize, g: usize) -> Result<Tensor> {
        let p = self.cfg.patch_size;
        let patches = pixels
            .reshape((b, 3, g, p, g, p))?
            .permute((0, 2, 4, 1, 3, 5))?
            .contiguous()?
            .reshape((b * g * g, 3 * p * p))?;
        let x = patches
            .matmul(&self.patch_weight.t()?)?
            .broadcast_add(&self.patch_bias)?;
        Ok(x.reshape((b, g, g, self.cfg.hidden_size))?)
    }
}
