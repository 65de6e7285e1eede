//! Decoder layers and the whole LM: embeddings, layers, final norm, separate lm_head (spec §1.5).

use candle_core::{DType, Module, Tensor};
use candle_nn::Embedding;

use super::attention::{CausalMasks, TextAttention};
use super::fused_decode::FusedDecoder;
use super::kv_cache::SequenceCache;
use super::moe::Experts;
use super::moe::Moe;
use crate::config::TextConfig;
use crate::error::{EngineError, Result};
use crate::layers::linear;
use crate::layers::mlp::SwiGlu;
use crate::layers::norm::RmsNorm;
use crate::layers::proj::Proj;
use crate::layers::rope::Rotary;
use crate::quant::{Int8Experts, Int8Weights};
use crate::weights::Weights;

const PREFIX: &str = "language_model";

#[derive(Debug, Clone)]
pub(super) enum FeedForward {
    Dense(SwiGlu),
    Sparse(Moe),
}

#[derive(Debug, Clone)]
pub(super) struct DecoderLayer {
    pub(super) input_norm: RmsNorm,
    pub(super) attn: TextAttention,
    pub(super) post_norm: RmsNorm,
    pub(super) ffn: FeedForward,
}

impl DecoderLayer {
    fn load(w: &Weights, i: usize, cfg: &TextConfig) -> Result<Self> {
        let p = format!("{PREFIX}.layers.{i}");
        let h = cfg.hidden_size;
        let ffn = if cfg.sparse_layers[i] {
            FeedForward::Sparse(Moe::load(w, &format!("{p}.mlp"), cfg)?)
        } else {
            FeedForward::Dense(SwiGlu::load(
                w,
                &format!("{p}.mlp"),
                h,
                cfg.intermediate_size,
            )?)
        };
        Ok(Self {
            input_norm: RmsNorm::load(w, &format!("{p}.input_layernorm"), h, cfg.rms_norm_eps)?,
            attn: TextAttention::load(w, &format!("{p}.self_attn"), i, cfg)?,
            post_norm: RmsNorm::load(
                w,
                &format!("{p}.post_attention_layernorm"),
                h,
                cfg.rms_norm_eps,
            )?,
            ffn,
        })
    }

    fn forward(
        &self,
        x: &Tensor,
        cos: &Tensor,
        sin: &Tensor,
        caches: &mut [&mut SequenceCache],
        masks: &CausalMasks,
        fused: Option<&FusedDecoder>,
    ) -> Result<Tensor> {
        let x = (x + self
            .attn
            .forward(&self.input_norm.forward(x)?, cos, sin, caches, masks)?)?;
        let normed = self.post_norm.forward(&x)?;
        let ffn = match &self.ffn {
            FeedForward::Dense(mlp) => mlp.forward(&normed)?,
            FeedForward::Sparse(moe) => {
                let (b, t, h) = normed.dims3()?;
                let rows = normed.reshape((b * t, h))?;
                let out = match fused {
                    Some(fused) => fused.moe(moe, &rows, None)?,
                    None => moe.forward(&rows)?,
                };
                out.reshape((b, t, h))?
            }
        };
        Ok((x + ffn)?)
    }
}

/// A pass over the language model's weights: what each projection and each layer's routed experts become.
pub(super) trait WeightPass {
    fn projection(&mut self, name: &str, proj: &Proj) -> Result<Proj>;
    fn experts(&mut self, name: &str, experts: &Experts) -> Result<Experts>;
}

/// Dense weights to int8.
struct Quantize<'a>(&'a mut Int8Weights);

impl WeightPass for Quantize<'_> {
    fn projection(&mut self, name: &str, proj: &Proj) -> Result<Proj> {
        proj.to_int8(self.0, name)
    }

    fn experts(&mut self, name: &str, experts: &Experts) -> Result<Experts> {
        let Experts::Dense { gate_up, down } = experts else {
            return Ok(experts.clone());
        };
        Ok(Int8Experts::new(self.0, name, gate_up, down)?
            .map_or_else(|| experts.clone(), Experts::Int8))
    }
}

/// int8 weights to dense ones in a dtype.
struct Dequantize(DType);

impl WeightPass for Dequantize {
    fn projection(&mut self, _name: &str, proj: &Proj) -> Result<Proj> {
        proj.dequantized(self.0)
    }

    fn experts(&mut self, _name: &str, experts: &Experts) -> Result<Experts> {
        let Experts::Int8(q) = experts else {
            return Ok(experts.clone());
        };
        let (gate_up, down) = q.dequantized(self.0)?;
        Ok(Experts::Dense { gate_up, down })
    }
}

/// The language model.
#[derive(Debug, Clone)]
pub struct TextModel {
    cfg: TextConfig,
    embed_tokens: Embedding,
    pub(super) layers: Vec<DecoderLayer>,
    pub(super) norm: RmsNorm,
    pub(super) lm_head: Proj,
    pub(super) rotary: Rotary,
    /// Set by [`Self::quantize`]: the projections and experts are int8.
    int8: bool,
}

impl TextModel {
    pub fn load(w: &Weights, cfg: &TextConfig) -> Result<Self> {
        let (v, h) = (cfg.vocab_size, cfg.hidden_size);
        let embeddings = w.get(&format!("{PREFIX}.embed_tokens.weight"), &[v, h])?;
        Ok(Self {
            embed_tokens: Embedding::new(embeddings, h),
            layers: (0..cfg.num_layers)
                .map(|i| DecoderLayer::load(w, i, cfg))
                .collect::<Result<_>>()?,
            norm: RmsNorm::load(w, &format!("{PREFIX}.norm"), h, cfg.rms_norm_eps)?,
            lm_head: linear(w, "lm_head", h, v, false)?.into(),
            rotary: Rotary::new(cfg.rope_theta, cfg.head_dim(), w.device(), w.dtype()),
            cfg: cfg.clone(),
            int8: false,
        })
    }

    pub fn config(&self) -> &TextConfig {
        &self.cfg
    }

    /// Every projection, expert and the lm_head in int8, each named for its place in `int8`; the
    /// embeddings and norms stay as they are. Each layer's dense weights are let go as it is done.
    pub fn quantize(&mut self, int8: &mut Int8Weights) -> Result<()> {
        self.map_weights(&mut Quantize(int8))?;
        self.int8 = true;
        Ok(())
    }

    /// The int8 weights dequantized to the model's dtype: what int8 rounding alone does to the model, run on
    /// the kernels of dense weights (a check's oracle).
    pub fn dequantize(&mut self) -> Result<()> {
        let dtype = self.embedding_table().dtype();
        self.map_weights(&mut Dequantize(dtype))?;
        self.int8 = false;
        Ok(())
    }

    /// Every projection and every layer's routed experts replaced by what `pass` makes of them.
    fn map_weights(&mut self, pass: &mut dyn WeightPass) -> Result<()> {
        for (i, layer) in self.layers.iter_mut().enumerate() {
            let name = format!("lm.{i}");
            let attn = format!("{name}.attn");
            layer
                .attn
                .map_projections(&attn, &mut |n, p| pass.projection(n, p))?;
            match &mut layer.ffn {
                FeedForward::Dense(mlp) => {
                    let mlp_name = format!("{name}.mlp");
                    mlp.map_projections(&mlp_name, &mut |n, p| pass.projection(n, p))?
                }
                FeedForward::Sparse(moe) => moe.map_weights(&format!("{name}.moe"), pass)?,
            }
        }
        self.lm_head = pass.projection("lm_head", &self.lm_head)?;
        Ok(())
    }

    /// Whether [`Self::quantize`] made the weights int8.
    pub fn is_int8(&self) -> bool {
        self.int8
    }

    /// The token embedding table (V, H).
    pub(super) fn embedding_table(&self) -> &Tensor {
        self.embed_tokens.embeddings()
    }

    /// Token embeddings (T, H) for `ids`.
    pub fn embed(&self, ids: &[u32]) -> Result<Tensor> {
        if let Some(&bad) = ids.iter().find(|&&id| id as usize >= self.cfg.vocab_size) {
            return Err(EngineError::Input(format!(
                "token id {bad} is outside the model's vocabulary of {}",
                self.cfg.vocab_size
            )));
        }
        let ids = Tensor::new(ids, self.embedding_table().device())?;
        Ok(self.embed_tokens.forward(&ids)?)
    }

    /// Run `x` (B, T, H) — row b continuing sequence `caches[b]` — through every layer and the final norm.
    /// Returns the normed hidden states (B, T, H); the caches grow by T.
    pub fn forward_hidden(&self, x: &Tensor, caches: &mut [&mut SequenceCache]) -> Result<Tensor> {
        self.forward_hidden_with(x, caches, None)
    }

    /// [`Self::forward_hidden`], with the MoE layers on the fused kernels when `fused` is given.
    pub fn forward_hidden_with(
        &self,
        x: &Tensor,
        caches: &mut [&mut SequenceCache],
        fused: Option<&FusedDecoder>,
    ) -> Result<Tensor> {
        let (b, t, _) = x.dims3()?;
        if caches.len() != b {
            return Err(EngineError::Input(format!(
                "{b} sequences but {} caches",
                caches.len()
            )));
        }
        let positions: Vec<Vec<usize>> = caches
            .iter()
            .map(|c| (c.len()..c.len() + t).collect())
            .collect();
        if let Some(max) = positions.iter().filter_map(|p| p.last()).max() {
            if *max >= self.cfg.max_position_embeddings {
                return Err(EngineError::Input(format!(
                    "position {max} exceeds max_position_embeddings {}",
                    self.cfg.max_position_embeddings
                )));
            }
        }
        let (cos, sin) = self.rotary.cos_sin(&positions)?;
        let pasts = caches.iter().map(|c| c.len()).collect();
        let masks = CausalMasks::new(t, pasts, x.device(), x.dtype());
        let mut x = x.clone();
        for layer in &self.layers {
            x = layer.forward(&x, &cos, &sin, caches, &masks, fused)?;
        }
        Ok(self.norm.forward(&x)?)
    }

    /// lm_head on hidden states, logits in f32.
    pub fn logits(&self, hidden: &Tensor) -> Result<Tensor> {
        Ok(self.lm_head.forward(hidden)?.to_dtype(DType::F32)?)
    }

    /// A cache for one sequence with room for `capacity` positions before it grows.
    pub fn new_cache(&self, capacity: usize) -> SequenceCache {
        SequenceCache::new(self.cfg.num_layers, capacity)
    }
}
