//! Image preprocessing of DeepSeek-OCR-2 in crop mode (spec deepseek-ocr2.md §3), pixel-exact with the
//! official code: a padded global view plus 0 or 2..=6 stretched local tiles.
//!
//! Output is plain byte buffers (CHW): the resampled pixels themselves, a quarter of what the official `f32`
//! values take to keep and to copy to the GPU. The model normalises them on its device with [`normalise`],
//! value for value, so this stays independent of any tensor library.

mod global_view;
pub(crate) mod resample;
mod tiling;

pub use global_view::{place, Placement};
pub use resample::resize_bicubic;
pub use tiling::{candidate_grids, choose_grid, closest_grid, TileGrid};

use image::RgbImage;

/// Vision patch size and the encoder's spatial downsampling: a view of side S gives (S/16/4)² tokens.
pub const PATCH_SIZE: u32 = 16;
pub const DOWNSAMPLE: u32 = 4;
const CHANNELS: usize = 3;

#[derive(Debug, thiserror::Error)]
pub enum PreprocessError {
    #[error("image has no pixels ({width}x{height})")]
    EmptyImage { width: u32, height: u32 },
    #[error("invalid preprocessing settings: {0}")]
    InvalidConfig(String),
}

/// Preprocessing settings; `Default` gives the official values ([OFF-vllm] `config.py`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PreprocessConfig {
    /// Side of the square global view.
    pub base_size: u32,
    /// Side of each square local tile; images with both sides ≤ this get no tiles.
    pub tile_size: u32,
    pub min_tiles: u32,
    pub max_tiles: u32,
    /// Canvas colour around the global view: `int(0.5 · 255)` per channel.
    pub pad_color: [u8; 3],
}

impl Default for PreprocessConfig {
    fn default() -> Self {
        Self {
            base_size: 1024,
            tile_size: 768,
            min_tiles: 2,
            max_tiles: 6,
            pad_color: [127; 3],
        }
    }
}

impl PreprocessConfig {
    fn validate(&self) -> Result<(), PreprocessError> {
        let invalid = |why: String| Err(PreprocessError::InvalidConfig(why));
        if self.base_size == 0 || self.tile_size == 0 {
            return invalid(format!(
                "view sizes must be positive (base {}, tile {})",
                self.base_size, self.tile_size
            ));
        }
        if self.min_tiles == 0 || self.min_tiles > self.max_tiles {
            return invalid(format!(
                "tile range {}..={} is empty or starts at 0",
                self.min_tiles, self.max_tiles
            ));
        }
        Ok(())
    }

    /// The local tile grid for an image of this size, or `None` when it gets no tiles.
    pub fn grid_for(&self, width: u32, height: u32) -> Option<TileGrid> {
        choose_grid(
            width,
            height,
            self.tile_size,
            self.min_tiles,
            self.max_tiles,
        )
    }

    /// `<image>` placeholders for an image: global tokens + tile tokens + 1 view separator.
    pub fn image_token_count(&self, width: u32, height: u32) -> usize {
        let tiles = self.grid_for(width, height).map_or(0, |g| g.count());
        view_tokens(self.base_size) + tiles * view_tokens(self.tile_size) + 1
    }
}

/// Tokens one square view yields: `ceil(side / 16 / 4)²`, as the official code counts them.
fn view_tokens(side: u32) -> usize {
    let per_axis = (side / PATCH_SIZE).div_ceil(DOWNSAMPLE) as usize;
    per_axis * per_axis
}

/// `<image>` placeholders for an image of this size with the official settings: 256 + 144·tiles + 1.
pub fn image_token_count(width: u32, height: u32) -> usize {
    PreprocessConfig::default().image_token_count(width, height)
}

/// The model's pixel input for one image.
#[derive(Debug, Clone, PartialEq)]
pub struct PreparedImage {
    /// 3 × base × base, CHW, the pixel bytes (the model's values are their [`normalise`]d forms).
    pub global: Vec<u8>,
    /// K × 3 × tile × tile, tiles row-major over the grid; empty when `grid` is `None`.
    pub tiles: Vec<u8>,
    pub grid: Option<TileGrid>,
    /// Number of `<image>` placeholders the prompt needs for this image.
    pub image_tokens: usize,
    pub base_size: u32,
    pub tile_size: u32,
}

impl PreparedImage {
    pub fn tile_count(&self) -> usize {
        self.grid.map_or(0, |g| g.count())
    }
}

/// Preprocess an (already EXIF-oriented) RGB image exactly as the official crop mode does.
pub fn preprocess(
    image: &RgbImage,
    config: &PreprocessConfig,
) -> Result<PreparedImage, PreprocessError> {
    let (width, height) = check_input(image, config)?;
    let grid = config.grid_for(width, height);
    let tiles = grid.map_or_else(Vec::new, |g| local_tiles(image, g, config.tile_size));
    let global = global_view(image, config);
    let image_tokens = config.image_token_count(width, height);
    tracing::debug!(width, height, ?grid, image_tokens, "preprocessed image");
    Ok(PreparedImage {
        global,
        tiles,
        grid,
        image_tokens,
        base_size: config.base_size,
        tile_size: config.tile_size,
    })
}

/// The global view alone, as [`preprocess`] makes it, with no tiles: what an image too small for tiles takes
/// (the global view's tokens and the separator). For reading at the base resolution, without resampling the
/// tiles only to drop them.
pub fn preprocess_global_only(
    image: &RgbImage,
    config: &PreprocessConfig,
) -> Result<PreparedImage, PreprocessError> {
    check_input(image, config)?;
    Ok(PreparedImage {
        global: global_view(image, config),
        tiles: Vec::new(),
        grid: None,
        image_tokens: view_tokens(config.base_size) + 1,
        base_size: config.base_size,
        tile_size: config.tile_size,
    })
}

/// The image's size, once the settings are valid and the image has pixels.
fn check_input(image: &RgbImage, config: &PreprocessConfig) -> Result<(u32, u32), PreprocessError> {
    config.validate()?;
    let (width, height) = image.dimensions();
    if width == 0 || height == 0 {
        return Err(PreprocessError::EmptyImage { width, height });
    }
    Ok((width, height))
}

/// Stretch the whole image to the grid's size (no aspect kept) and cut it into tiles, row-major.
fn local_tiles(image: &RgbImage, grid: TileGrid, tile: u32) -> Vec<u8> {
    let stretched = resize_bicubic(image, tile * grid.cols, tile * grid.rows);
    let plane = tile as usize * tile as usize;
    let mut out = vec![0u8; grid.count() * CHANNELS * plane];
    for (k, chw) in out.chunks_exact_mut(CHANNELS * plane).enumerate() {
        let (col, row) = (k as u32 % grid.cols, k as u32 / grid.cols);
        write_chw(
            &stretched,
            (col * tile, row * tile),
            (tile, tile),
            (0, 0),
            tile,
            chw,
        );
    }
    out
}

/// The contained original on a pad-coloured square canvas.
fn global_view(image: &RgbImage, config: &PreprocessConfig) -> Vec<u8> {
    let side = config.base_size;
    let plane = side as usize * side as usize;
    let mut out = vec![0u8; CHANNELS * plane];
    for (c, channel) in out.chunks_exact_mut(plane).enumerate() {
        channel.fill(config.pad_color[c]);
    }
    let at = place(image.width(), image.height(), side);
    let contained = resize_bicubic(image, at.width, at.height);
    write_chw(
        &contained,
        (0, 0),
        (at.width, at.height),
        (at.x, at.y),
        side,
        &mut out,
    );
    out
}

/// Copy the `size` region of `src` starting at `from` into a CHW canvas of side `side` at `to`.
fn write_chw(
    src: &RgbImage,
    from: (u32, u32),
    size: (u32, u32),
    to: (u32, u32),
    side: u32,
    chw: &mut [u8],
) {
    let side = side as usize;
    let plane = side * side;
    for dy in 0..size.1 {
        for dx in 0..size.0 {
            let pixel = src.get_pixel(from.0 + dx, from.1 + dy).0;
            let at = (to.1 + dy) as usize * side + (to.0 + dx) as usize;
            for (c, &value) in pixel.iter().enumerate() {
                chw[c * plane + at] = value;
            }
        }
    }
}

/// A pixel byte as the model takes it: torchvision `ToTensor` then `Normalize(0.5, 0.5)`, with the same
/// float32 operations.
pub fn normalise(value: u8) -> f32 {
    (f32::from(value) / 255.0 - 0.5) / 0.5
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pad_value_is_not_zero() {
        // §3.4: the pad grey 127 maps to −0.00392, not 0.
        assert!((normalise(127) - (-1.0 / 255.0)).abs() < 1e-7);
        assert_eq!(normalise(0), -1.0);
        assert_eq!(normalise(255), 1.0);
    }

    #[test]
    fn global_only_is_the_global_view_of_the_tiled_preprocessing() {
        // A4 at 144 dpi, with a gradient so that the resampling shows: six tiles in crop mode.
        let page = RgbImage::from_fn(1190, 1684, |x, y| {
            image::Rgb([(x % 256) as u8, (y % 256) as u8, ((x + y) % 256) as u8])
        });
        let config = PreprocessConfig::default();
        let tiled = preprocess(&page, &config).unwrap();
        let alone = preprocess_global_only(&page, &config).unwrap();
        assert_eq!(tiled.tile_count(), 6);
        assert_eq!(alone.global, tiled.global);
        assert!(alone.tiles.is_empty() && alone.grid.is_none());
        // What an image too small for tiles takes.
        assert_eq!(alone.image_tokens, config.image_token_count(1, 1));
        assert_eq!(alone.image_tokens, 256 + 1);
    }

    #[test]
    fn rejects_empty_images_and_bad_settings() {
        let empty = RgbImage::new(0, 10);
        assert!(matches!(
            preprocess(&empty, &PreprocessConfig::default()),
            Err(PreprocessError::EmptyImage { .. })
        ));
        assert!(matches!(
            preprocess_global_only(&empty, &PreprocessConfig::default()),
            Err(PreprocessError::EmptyImage { .. })
        ));
        let bad = PreprocessConfig {
            min_tiles: 7,
            ..PreprocessConfig::default()
        };
        assert!(matches!(
            preprocess(&RgbImage::new(4, 4), &bad),
            Err(PreprocessError::InvalidConfig(_))
        ));
    }
}
