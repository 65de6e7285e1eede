//! Many pages for the tiny model: the oracle's two, then pages of other images and tile counts with the same
//! prompt text.

use deepread_engine::engine::{Engine, PageInput};

use super::tiny_oracle::{page_image, page_input};

/// The oracle's two pages, then pages of other images and tile counts with the same prompt text.
pub fn pages(engine: &Engine, count: usize) -> Vec<PageInput> {
    let config = engine.model().config();
    let template = page_input(0).prompt_ids;
    let image_token = config.image_token_id;
    let text: Vec<u32> = template
        .iter()
        .skip(1)
        .copied()
        .filter(|&id| id != image_token)
        .collect();
    (0..count)
        .map(|i| match i {
            0 | 1 => page_input(i),
            _ => {
                let image = page_image(i % 4, 100 + 7 * i as u32);
                let mut prompt_ids = vec![template[0]];
                prompt_ids.resize(1 + image.image_tokens(config), image_token);
                prompt_ids.extend(&text);
                PageInput {
                    prompt_ids,
                    image: Some(image),
                }
            }
        })
        .collect()
}
