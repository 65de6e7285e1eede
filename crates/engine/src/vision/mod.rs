//! The vision half: SAM → encoder queries → projector, and the per-image embedding order.

pub mod dense;
pub mod encoder;
pub mod pixels;
pub mod projector;
pub mod resize;
pub mod sam;
pub mod sam_attention;
pub mod windows;

use candle_core::Tensor;

use crate::config::ModelConfig;
use crate::error::Result;
use crate::weights::Weights;
use encoder::VisionEncoder;
use pixels::PixelValues;
use projector::Projector;
use sam::SamEncoder;

/// The pixel size of a local tile in crop mode (spec §3, `IMAGE_SIZE`): SAM's tables are prepared for it at load.
pub const TILE_SIZE: usize = 768;

/// SAM + encoder + projector + the view separator.
#[derive(Debug, Clone)]
pub struct VisionTower {
    pub sam: SamEncoder,
    pub encoder: VisionEncoder,
    pub projector: Projector,
    pixels: PixelValues,
    /// Appended once per image, after the global view's tokens.
    view_separator: Tensor,
}

impl VisionTower {
    pub fn load(w: &Weights, cfg: &ModelConfig) -> Result<Self> {
        let view_sizes = [cfg.sam.image_size, TILE_SIZE];
        Ok(Self {
            sam: SamEncoder::load(w, &cfg.sam, &view_sizes)?,
            encoder: VisionEncoder::load(w, &cfg.encoder)?,
            projector: Projector::load(w, cfg.encoder.hidden_size, cfg.text.hidden_size)?,
            pixels: PixelValues::new(w.device(), w.dtype())?,
            view_separator: w.get("view_separator", &[cfg.text.hidden_size])?,
        })
    }

    /// `count` views of side `size` as flat CHW pixel bytes → (count, 3, size, size), normalised.
    pub fn views(&self, bytes: &[u8], count: usize, size: usize) -> Result<Tensor> {
        self.pixels.views(bytes, count, size)
    }

    /// Views (B, 3, S, S) → projected query embeddings (B, N, hidden).
    pub fn embed_views(&self, pixels: &Tensor) -> Result<Tensor> {
        let queries = self.encoder.forward(&self.sam.forward(pixels)?)?;
        self.projector.forward(&queries)
    }

    /// One image's embeddings in the order the prompt expects: every tile's tokens (tile-major, row-major crop
    /// order), then the global view's, then the separator (spec §3, §7.7). `tiles` is (K, 3, 768, 768) or None.
    pub fn image_embeddings(&self, global: &Tensor, tiles: Option<&Tensor>) -> Result<Tensor> {
        let mut views = Vec::with_capacity(2);
        if let Some(tiles) = tiles {
            views.push(self.embed_views(tiles)?);
        }
        views.push(self.embed_views(global)?);
        self.assemble(&views)
    }

    /// The image's embeddings from its views' [`Self::embed_views`] outputs, tiles first and the global view
    /// last: the rows in order, then the separator.
    fn assemble(&self, views: &[Tensor]) -> Result<Tensor> {
        let hidden = self.view_separator.dim(0)?;
        let mut parts = views
            .iter()
            .map(|v| Ok(v.reshape(((), hidden))?))
            .collect::<Result<Vec<_>>>()?;
        parts.push(self.view_separator.unsqueeze(0)?);
        Ok(Tensor::cat(&parts, 0)?)
    }
}
