//! The whole DeepSeek-OCR-2 model: loading, image features, prompt embeddings, prompt logits.

use std::path::Path;

use candle_core::{DType, Device, Tensor};

use crate::config::ModelConfig;
use crate::device::{hand_over, side_stream};
use crate::error::{EngineError, Result};
use crate::lm::{FusedDecoder, SequenceCache, TextModel};
use crate::quant::{checkpoint_source, Int8Weights, WeightFormat, INT8_CACHE};
use crate::vision::{VisionTower, TILE_SIZE};
use crate::weights::{TensorSpec, WeightLayout, Weights};

/// One image's preprocessed views, as the preprocessing produces them (pixel bytes, CHW, flat).
#[derive(Debug, Clone, PartialEq)]
pub struct PageImage {
    /// 3 × `base_size` × `base_size` pixel bytes, CHW (normalised on the device, [`crate::preprocess::normalise`]).
    pub global: Vec<u8>,
    /// `num_tiles` × 3 × `tile_size` × `tile_size` pixel bytes, row-major crop order; empty when there are no tiles.
    pub tiles: Vec<u8>,
    pub num_tiles: usize,
    pub base_size: usize,
    pub tile_size: usize,
}

impl PageImage {
    /// `<image>` placeholders this image fills: 256 for the global view, 144 per tile, 1 separator (at the real
    /// geometry; computed from the patch grid for any config).
    pub fn image_tokens(&self, cfg: &ModelConfig) -> usize {
        let per_view = |size: usize| {
            let side = size / cfg.sam.patch_size / 4;
            side * side
        };
        per_view(self.base_size) + self.num_tiles * per_view(self.tile_size) + 1
    }
}

impl From<crate::preprocess::PreparedImage> for PageImage {
    /// The preprocessing's output, as the model takes it.
    fn from(p: crate::preprocess::PreparedImage) -> Self {
        Self {
            num_tiles: p.tile_count(),
            global: p.global,
            tiles: p.tiles,
            base_size: p.base_size as usize,
            tile_size: p.tile_size as usize,
        }
    }
}

/// A loaded model on one device in one dtype.
#[derive(Debug, Clone)]
pub struct Model {
    config: ModelConfig,
    vision: VisionTower,
    text: TextModel,
    device: Device,
    /// Where the vision tower's weights live and its work runs: a second stream of the same GPU, or `device`.
    vision_device: Device,
    dtype: DType,
}

impl Model {
    /// Load `dir` (config.json + safetensors, official or transformers-native names; or llama.cpp's GGUF pair)
    /// onto `device` in `dtype`. Every tensor the config implies must be present with its shape, and no other
    /// tensor may be.
    pub fn load(dir: &Path, device: &Device, dtype: DType) -> Result<Self> {
        let weights = Weights::open(dir, device, dtype)?;
        // llama.cpp's GGUF pair comes without a config.json: it is DeepSeek-OCR-2's, as its metadata must say.
        let config = if weights.is_llama_cpp() && !dir.join("config.json").is_file() {
            ModelConfig::deepseek_ocr2()
        } else {
            ModelConfig::from_dir(dir)?
        };
        weights.check_config(&config)?;
        let model = Self::from_weights(config, &weights)?;
        weights.finish()?;
        tracing::info!(dir = %dir.display(), layout = ?weights.layout(), ?dtype, "model loaded");
        Ok(model)
    }

    /// [`Self::load`] with the language model's weights in `format`. int8 weights are read from
    /// [`INT8_CACHE`] in `dir` where an earlier load of the same checkpoint left them, else quantized now and
    /// written there (a directory that cannot be written to only costs the next load the same work).
    pub fn load_as(
        dir: &Path,
        device: &Device,
        dtype: DType,
        format: WeightFormat,
    ) -> Result<Self> {
        let model = Self::load(dir, device, dtype)?;
        match format {
            WeightFormat::Dense => Ok(model),
            WeightFormat::Int8 => {
                let cache = dir.join(INT8_CACHE);
                model.into_int8(Some(&cache), &checkpoint_source(dir)?)
            }
        }
    }

    /// The model with its language model's weights in int8 (see [`crate::quant`]): read from the GGUF file
    /// `cache` where it was made from the checkpoint `source`, else quantized now and written there.
    pub fn into_int8(mut self, cache: Option<&Path>, source: &str) -> Result<Self> {
        let started = std::time::Instant::now();
        let mut int8 = Int8Weights::open(cache, source, &self.device);
        self.text.quantize(&mut int8)?;
        if let Err(error) = int8.save() {
            tracing::warn!(%error, "int8 weights could not be cached; the next load quantizes again");
        }
        let quantized = int8.quantized();
        drop(int8);
        // The dense matrices went back to the allocator's pool; hand them to the device, so that what the
        // device reports in use is what int8 holds.
        crate::device::release_unused_memory(&self.device);
        tracing::info!(
            quantized,
            seconds = started.elapsed().as_secs_f64(),
            "language model in int8"
        );
        Ok(self)
    }

    /// The model with its int8 weights dequantized to its dtype ([`TextModel::dequantize`]).
    pub fn into_dequantized(mut self) -> Result<Self> {
        self.text.dequantize()?;
        Ok(self)
    }

    /// A model of `config` with seeded random weights (see [`Weights::random`]), for benchmarks.
    pub fn random(config: ModelConfig, device: &Device, dtype: DType, seed: u64) -> Result<Self> {
        Self::from_weights(config, &Weights::random(device, dtype, seed)?)
    }

    /// Every tensor a model of `config` takes (internal names, in the order it takes them), found by building
    /// one from placeholders: the list of what a checkpoint of this config must hold, and nothing else.
    pub fn tensor_specs(config: &ModelConfig) -> Result<Vec<TensorSpec>> {
        // bf16 halves what the load-time concatenations of stacked projections allocate.
        let weights = Weights::placeholders(DType::BF16);
        Self::from_weights(config.clone(), &weights)?;
        Ok(weights.requested())
    }

    fn from_weights(config: ModelConfig, w: &Weights) -> Result<Self> {
        let vision_device = side_stream(w.device())?;
        let vision = VisionTower::load(&w.on_device(&vision_device), &config)?;
        let text = TextModel::load(w, &config.text)?;
        Ok(Self {
            config,
            vision,
            text,
            device: w.device().clone(),
            vision_device,
            dtype: w.dtype(),
        })
    }

    /// The checkpoint layout of a model directory, without loading it.
    pub fn weight_layout(dir: &Path) -> Result<WeightLayout> {
        Ok(Weights::open(dir, &Device::Cpu, DType::F32)?.layout())
    }

    pub fn config(&self) -> &ModelConfig {
        &self.config
    }
    pub fn device(&self) -> &Device {
        &self.device
    }
    pub fn dtype(&self) -> DType {
        self.dtype
    }
    pub fn vision(&self) -> &VisionTower {
        &self.vision
    }
    pub fn text(&self) -> &TextModel {
        &self.text
    }

    /// A (B, 3, S, S) tensor of normalised pixels in the model dtype on the vision tower's device, from flat
    /// CHW pixel bytes.
    pub fn views_tensor(&self, pixels: &[u8], count: usize, size: usize) -> Result<Tensor> {
        if pixels.len() != count * 3 * size * size {
            return Err(EngineError::Input(format!(
                "{} pixel values for {count} view(s) of 3×{size}×{size}",
                pixels.len()
            )));
        }
        self.vision.views(pixels, count, size)
    }

    /// The embeddings one image contributes to the prompt: (tiles·144 + 256 + 1, hidden) at the real geometry,
    /// on the model's device.
    pub fn image_features(&self, image: &PageImage) -> Result<Tensor> {
        hand_over(self.see(image)?, &self.device)
    }

    /// [`Self::image_features`] left on the vision tower's device, its work done: what a reading's vision
    /// thread hands to the decoding one ([`hand_over`]).
    pub fn see(&self, image: &PageImage) -> Result<Tensor> {
        check_tile_size(image)?;
        let global = self.views_tensor(&image.global, 1, image.base_size)?;
        let tiles = if image.num_tiles > 0 {
            Some(self.views_tensor(&image.tiles, image.num_tiles, image.tile_size)?)
        } else {
            None
        };
        let features = self.vision.image_embeddings(&global, tiles.as_ref())?;
        self.vision_device.synchronize()?;
        Ok(features)
    }

    /// Prompt embeddings (L, hidden): token embeddings with the `<image>` positions replaced, in order, by the
    /// rows of `image` (spec §3, "written sequentially").
    pub fn input_embeddings(&self, ids: &[u32], image: Option<&Tensor>) -> Result<Tensor> {
        let tokens = self.text.embed(ids)?;
        let image_token = self.config.image_token_id;
        let placeholders = ids.iter().filter(|&&id| id == image_token).count();
        let rows = image.map_or(Ok(0), |t| t.dim(0))?;
        if placeholders != rows {
            return Err(EngineError::Input(format!(
                "the prompt has {placeholders} <image> tokens (id {image_token}) but the image gives {rows} embeddings"
            )));
        }
        let Some(image) = image else {
            return Ok(tokens);
        };
        // One gather over [tokens; image]: position p takes its own row, or the next image row.
        let len = ids.len();
        let mut next = 0u32;
        let index: Vec<u32> = ids
            .iter()
            .enumerate()
            .map(|(p, &id)| {
                if id == image_token {
                    next += 1;
                    len as u32 + next - 1
                } else {
                    p as u32
                }
            })
            .collect();
        let all = Tensor::cat(&[&tokens, &image.to_dtype(tokens.dtype())?], 0)?;
        Ok(all.index_select(&Tensor::new(index.as_slice(), &self.device)?, 0)?)
    }

    /// Run a prompt's embeddings (L, hidden) through the LM into a fresh cache; returns the final hidden states
    /// (L, hidden) and the cache, ready for decoding.
    pub fn prefill(&self, embeds: &Tensor, capacity: usize) -> Result<(Tensor, SequenceCache)> {
        self.prefill_with(embeds, capacity, None)
    }

    /// [`Self::prefill`], with the MoE layers on the fused kernels when `fused` is given.
    pub fn prefill_with(
        &self,
        embeds: &Tensor,
        capacity: usize,
        fused: Option<&FusedDecoder>,
    ) -> Result<(Tensor, SequenceCache)> {
        let mut cache = self.text.new_cache(capacity.max(embeds.dim(0)?));
        let hidden =
            self.text
                .forward_hidden_with(&embeds.unsqueeze(0)?, &mut [&mut cache], fused)?;
        Ok((hidden.squeeze(0)?, cache))
    }

    /// Logits (L, vocab) in f32 at every prompt position.
    pub fn prompt_logits(&self, embeds: &Tensor) -> Result<Tensor> {
        let (hidden, _) = self.prefill(embeds, embeds.dim(0)?)?;
        self.text.logits(&hidden)
    }
}

fn check_tile_size(image: &PageImage) -> Result<()> {
    if image.num_tiles > 0 && image.tile_size != TILE_SIZE {
        return Err(EngineError::Input(format!(
            "tiles of {0}×{0} pixels; DeepSeek-OCR-2 tiles are {TILE_SIZE}×{TILE_SIZE}",
            image.tile_size
        )));
    }
    Ok(())
}
