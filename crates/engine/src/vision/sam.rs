//! SAM ViT image encoder ("vision tokenizer"): patch embedding, absolute positions, windowed/global blocks, the
//! neck and the two stride-2 downsampling convs (spec §1.2). Activations are channels-last (B, h, w, C) until the
//! neck, where the layout turns NCHW as in the reference.

use std::collections::HashMap;

use candle_core::{DType, Module, Tensor};

use super::dense::{After, Dense};
use super::resize::bicubic_aa_resize;
use super::sam_attention::SamAttention;
use super::windows::window_partition;
use crate::config::SamConfig;
use crate::error::{EngineError, Result};
use crate::layers::norm::LayerNorm;
use crate::weights::Weights;

const PREFIX: &str = "vision_tower.sam_encoder";

/// One transformer block: `x + attn(window(norm1(x)))`, then `x + mlp(norm2(x))`.
#[derive(Debug, Clone)]
struct SamBlock {
    norm1: LayerNorm,
    attn: SamAttention,
    norm2: LayerNorm,
    lin1: Dense,
    lin2: Dense,
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
            norm1: LayerNorm::load(w, &format!("{p}.layer_norm1"), c, eps)?,
            attn: SamAttention::load(w, &format!("{p}.attn"), cfg, table_side, &sides)?,
            norm2: LayerNorm::load(w, &format!("{p}.layer_norm2"), c, eps)?,
            lin1: Dense::load(w, &format!("{p}.mlp.lin1"), c, cfg.mlp_dim, true)?,
            lin2: Dense::load(w, &format!("{p}.mlp.lin2"), cfg.mlp_dim, c, true)?,
            window,
        })
    }

    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let normed = self.norm1.forward(x)?;
        let x = if self.window > 0 {
            let (windows, _) = window_partition(&normed, self.window)?;
            let after = After::WindowedResidual {
                residual: x,
                size: self.window,
            };
            self.attn
                .proj()
                .forward(&self.attn.attend(&windows)?, after)?
        } else {
            let attended = self.attn.attend(&normed)?;
            self.attn.proj().forward(&attended, After::Residual(x))?
        };
        let hidden = self.lin1.forward(&self.norm2.forward(&x)?, After::Gelu)?;
        self.lin2.forward(&hidden, After::Residual(&x))
    }
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
    /// The 16×16 stride-16 patch conv as a linear layer over flattened patches: (C, 3·p·p) and its bias.
    patch_embed: Dense,
    /// Grid side → absolute positions (1, side, side, C), resized from the trained grid once at load.
    pos_embed: HashMap<usize, Tensor>,
    blocks: Vec<SamBlock>,
    neck_conv1: Dense,
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
            patch_embed: Dense::new(patch_weight, Some(patch_bias)),
            pos_embed,
            blocks,
            neck_conv1: Dense::new(neck_conv1, None),
            neck_norm1: LayerNorm::load(w, &format!("{PREFIX}.neck.layer_norm1"), out_c, eps)?,
            neck_conv2: Conv::load(w, &format!("{PREFIX}.neck.conv2"), [out_c, out_c, 3, 3], 1)?,
            neck_norm2: LayerNorm::load(w, &format!("{PREFIX}.neck.layer_norm2"), out_c, eps)?,
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
        let x = self
            .neck_norm1
            .forward(&self.neck_conv1.forward(&x, After::Nothing)?)?;
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
        let x = self.patch_embed.forward(&patches, After::Nothing)?;
        Ok(x.reshape((b, g, g, self.cfg.hidden_size))?)
    }
}
