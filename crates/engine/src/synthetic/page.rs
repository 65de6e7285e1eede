//! A synthetic page, as `shared/gpu/hf_reference.py` feeds the transformers oracle: BOS, the `<image>` run of a
//! global view and `crops` tiles, then the layout prompt; pixels of a fixed pattern. For benchmarks and
//! full-size runs, where the speed and the scheduling do not depend on what the page shows.

use crate::config::ModelConfig;
use crate::engine::PageInput;
use crate::model::PageImage;
use crate::vision::TILE_SIZE;

/// "<|grounding|>Convert the document to markdown." after the image run (shared/fixtures/tokenizer).
pub const LAYOUT_PROMPT_IDS: [u32; 9] = [201, 128820, 21842, 270, 4940, 304, 2121, 7919, 16];

/// Page `variant` (its pixels differ from every other variant's) with `crops` tiles. The layout prompt's ids are
/// folded into the vocabulary so that tiny test models, with a few hundred ids, take the same prompt.
pub fn layout_page(config: &ModelConfig, crops: usize, variant: usize) -> PageInput {
    let base = config.sam.image_size;
    let image = PageImage {
        global: pixels(3 * base * base, variant),
        tiles: pixels(crops * 3 * TILE_SIZE * TILE_SIZE, variant),
        num_tiles: crops,
        base_size: base,
        tile_size: TILE_SIZE,
    };
    let text = &config.text;
    let mut prompt_ids = vec![text.bos_token_id];
    prompt_ids.resize(1 + image.image_tokens(config), config.image_token_id);
    prompt_ids.extend(
        LAYOUT_PROMPT_IDS
            .iter()
            .map(|&id| id % text.vocab_size as u32)
            .filter(|&id| id != config.image_token_id),
    );
    PageInput {
        prompt_ids,
        image: Some(image),
    }
}

/// A fixed pattern of pixel bytes, shifted by `variant`.
fn pixels(n: usize, variant: usize) -> Vec<u8> {
    (0..n)
        .map(|i| ((i * 7919 + variant * 104_729) % 255) as u8)
        .collect()
}
