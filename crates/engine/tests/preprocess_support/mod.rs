//! Shared helpers of the preprocessing tests: fixture paths, the oracle's expectations, image loading.
#![allow(dead_code)] // each test binary uses a different subset of these helpers

use std::path::{Path, PathBuf};

use image::{DynamicImage, ImageDecoder, ImageReader, RgbImage};
use serde_json::Value;
use sha2::{Digest, Sha256};

/// `DEEPREAD_FIXTURES`, else `<workspace root>/../shared/fixtures`.
pub fn fixtures_dir() -> PathBuf {
    let dir = std::env::var_os("DEEPREAD_FIXTURES")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/fixtures"));
    assert!(
        dir.is_dir(),
        "fixtures directory {} is missing (set DEEPREAD_FIXTURES)",
        dir.display()
    );
    dir
}

/// The JSON written by `crates/engine/fixtures/make_preprocess_fixtures.py`.
pub fn expectations() -> Value {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/preprocess/expectations.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap()
}

/// Decode frame 0, apply the EXIF orientation, drop alpha: the official `exif_transpose` + `convert("RGB")`.
pub fn load_rgb(path: &Path) -> RgbImage {
    assert!(path.is_file(), "fixture {} is missing", path.display());
    let mut decoder = ImageReader::open(path)
        .unwrap()
        .with_guessed_format()
        .unwrap()
        .into_decoder()
        .unwrap();
    let orientation = decoder.orientation().unwrap();
    let mut image = DynamicImage::from_decoder(decoder).unwrap();
    image.apply_orientation(orientation);
    image.to_rgb8()
}

/// The source a case describes: one file, a crop of one, or pages joined top to bottom / side by side.
pub fn build_source(how: &Value) -> RgbImage {
    let root = fixtures_dir();
    if let Some(file) = how["file"].as_str() {
        return load_rgb(&root.join(file));
    }
    if let Some(crop) = how.get("crop") {
        let b: Vec<u32> = crop["box"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_u64().unwrap() as u32)
            .collect();
        let page = load_rgb(&root.join(crop["file"].as_str().unwrap()));
        return image::imageops::crop_imm(&page, b[0], b[1], b[2] - b[0], b[3] - b[1]).to_image();
    }
    let vertical = how.get("stack_vertical").is_some();
    let list = if vertical {
        &how["stack_vertical"]
    } else {
        &how["stack_horizontal"]
    };
    let pages: Vec<RgbImage> = list
        .as_array()
        .expect("unknown source kind")
        .iter()
        .map(|p| load_rgb(&root.join(p.as_str().unwrap())))
        .collect();
    let (width, height) = if vertical {
        (pages[0].width(), pages.iter().map(|p| p.height()).sum())
    } else {
        (pages.iter().map(|p| p.width()).sum(), pages[0].height())
    };
    let mut canvas = RgbImage::new(width, height);
    let mut at = 0;
    for page in &pages {
        let (x, y) = if vertical { (0, at) } else { (at, 0) };
        image::imageops::replace(&mut canvas, page, i64::from(x), i64::from(y));
        at += if vertical {
            page.height()
        } else {
            page.width()
        };
    }
    canvas
}

pub fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

pub fn grid_of(value: &Value) -> Option<(u32, u32)> {
    value
        .as_array()
        .map(|g| (g[0].as_u64().unwrap() as u32, g[1].as_u64().unwrap() as u32))
}

pub fn pair(value: &Value) -> (u32, u32) {
    grid_of(value).expect("expected a [a, b] pair")
}
