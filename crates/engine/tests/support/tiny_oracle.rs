//! The tiny oracle fixtures (fixtures/make_fixtures.py): where they are, the recorded run's metadata, and the
//! pages it was run on.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use deepread_engine::engine::PageInput;
use deepread_engine::model::PageImage;
use serde_json::Value;

#[path = "pixel_hash.rs"]
mod pixel_hash;
use pixel_hash::hash_pixels;

pub fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

pub fn meta() -> &'static Value {
    static M: OnceLock<Value> = OnceLock::new();
    M.get_or_init(|| {
        let text = std::fs::read_to_string(fixtures().join("tiny_reference/meta.json")).unwrap();
        serde_json::from_str(&text).unwrap()
    })
}

pub fn page_image(n_tiles: usize, seed: u32) -> PageImage {
    PageImage {
        global: hash_pixels(seed, 1, 1024),
        tiles: if n_tiles > 0 {
            hash_pixels(seed + 1, n_tiles, 768)
        } else {
            Vec::new()
        },
        num_tiles: n_tiles,
        base_size: 1024,
        tile_size: 768,
    }
}

pub fn ids(v: &Value) -> Vec<u32> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_u64().unwrap() as u32)
        .collect()
}

pub fn page_input(page: usize) -> PageInput {
    let p = &meta()["pages"][page];
    PageInput {
        prompt_ids: ids(&p["prompt_ids"]),
        image: Some(page_image(
            p["n_tiles"].as_u64().unwrap() as usize,
            p["seed"].as_u64().unwrap() as u32,
        )),
    }
}
