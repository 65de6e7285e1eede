//! Pixel parity of `preprocess` with the official DeepSeek-OCR-2 preprocessing (Pillow), on real pages.
//!
//! Expectations come from `crates/engine/fixtures/make_preprocess_fixtures.py` (Pillow 13.0.0 running
//! the official steps, cross-checked against transformers 5.23.0's `DeepseekOcr2ImageProcessorPil`).

mod preprocess_support;

use deepread_engine::preprocess::{normalise, place, preprocess, PreparedImage, PreprocessConfig};
use preprocess_support::{build_source, expectations, grid_of, pair, sha256_hex};
use serde_json::Value;

/// Compare one view with the oracle, its bytes and the normalised values the model takes of them; on a
/// mismatch, say where (first differing band, first differing sample).
fn check_view(case: &str, view: &str, bytes: &[u8], side: usize, expected: &Value) {
    let plane = side * side;
    let mut sample_errors = Vec::new();
    for s in expected["samples_c_y_x_u8_f32"].as_array().unwrap() {
        let s = s.as_array().unwrap();
        let (c, y, x) = (
            s[0].as_u64().unwrap() as usize,
            s[1].as_u64().unwrap() as usize,
            s[2].as_u64().unwrap() as usize,
        );
        let (want_u8, want_f32) = (s[3].as_u64().unwrap() as u8, s[4].as_f64().unwrap() as f32);
        let got = normalise(bytes[c * plane + y * side + x]);
        if bytes[c * plane + y * side + x] != want_u8 || got.to_bits() != want_f32.to_bits() {
            sample_errors.push(format!(
                "(c={c}, y={y}, x={x}): got {got} (u8 {}), want {want_f32} (u8 {want_u8})",
                bytes[c * plane + y * side + x]
            ));
        }
    }
    let hash = sha256_hex(bytes);
    if hash == expected["sha256"].as_str().unwrap() && sample_errors.is_empty() {
        return;
    }
    let band_rows = expected["band_rows"].as_u64().unwrap() as usize;
    let first_band = expected["bands"]
        .as_array()
        .unwrap()
        .iter()
        .enumerate()
        .find_map(|(b, want)| {
            let rows = b * band_rows..((b + 1) * band_rows).min(side);
            let band: Vec<u8> = (0..3)
                .flat_map(|c| {
                    bytes[c * plane + rows.start * side..c * plane + rows.end * side].to_vec()
                })
                .collect();
            (sha256_hex(&band)[..8] != *want.as_str().unwrap()).then_some(rows)
        });
    panic!(
        "{case} {view}: pixels differ from the oracle.\n  first differing rows: {first_band:?}\n  first differing sample: {}\n  ({} of the samples differ)",
        sample_errors.first().map_or("none of the samples", String::as_str),
        sample_errors.len()
    );
}

/// JPEG sources: zune-jpeg (image crate) and libjpeg-turbo (Pillow) differ by a few levels on some pixels.
fn is_lossy(case: &Value) -> bool {
    case["source"]["lossy_source"].as_bool().unwrap_or(false)
}

/// Largest pixel difference allowed downstream of a JPEG decoder difference of up to ~5 levels: bicubic
/// weights sum to 1 with small negative lobes, plus one rounding per pass.
const LOSSY_TOLERANCE: i32 = 10;

/// For JPEG sources only the sampled pixels are compared, within `LOSSY_TOLERANCE`.
fn check_view_near(case: &str, view: &str, bytes: &[u8], side: usize, expected: &Value) -> i32 {
    let plane = side * side;
    let mut worst = 0;
    for s in expected["samples_c_y_x_u8_f32"].as_array().unwrap() {
        let s = s.as_array().unwrap();
        let (c, y, x) = (
            s[0].as_u64().unwrap() as usize,
            s[1].as_u64().unwrap() as usize,
            s[2].as_u64().unwrap() as usize,
        );
        let got = bytes[c * plane + y * side + x];
        let delta = (i32::from(got) - s[3].as_i64().unwrap() as i32).abs();
        assert!(
            delta <= LOSSY_TOLERANCE,
            "{case} {view} (c={c}, y={y}, x={x}): got {got}, oracle {}",
            s[3]
        );
        worst = worst.max(delta);
    }
    worst
}

fn run_case(case: &Value) -> PreparedImage {
    let name = case["name"].as_str().unwrap();
    let image = build_source(&case["source"]);
    assert_eq!(
        (image.width(), image.height()),
        (
            case["width"].as_u64().unwrap() as u32,
            case["height"].as_u64().unwrap() as u32
        ),
        "{name}: decoded size"
    );
    // Lossless sources must decode exactly as in Pillow, or the pixel comparison means nothing.
    if !is_lossy(case) {
        assert_eq!(
            sha256_hex(image.as_raw()),
            case["source_rgb_sha256"].as_str().unwrap(),
            "{name}: the image crate decodes the source differently from Pillow"
        );
    }
    let prepared = preprocess(&image, &PreprocessConfig::default()).unwrap();
    assert_eq!(
        prepared.grid.map(|g| (g.cols, g.rows)),
        grid_of(&case["grid"]),
        "{name}: grid"
    );
    assert_eq!(
        prepared.image_tokens as u64,
        case["image_tokens"].as_u64().unwrap(),
        "{name}: image tokens"
    );
    let at = place(image.width(), image.height(), 1024);
    assert_eq!(
        (at.width, at.height),
        pair(&case["global_resized"]),
        "{name}: contained size"
    );
    assert_eq!(
        (at.x, at.y),
        pair(&case["global_offset"]),
        "{name}: paste offset"
    );
    prepared
}

#[test]
fn preprocessing_matches_official_pixels_on_real_pages() {
    let all = expectations();
    let cases = all["cases"].as_array().unwrap();
    assert!(cases.len() >= 5, "expected at least five real images");
    assert!(
        cases.iter().filter(|c| !is_lossy(c)).count() >= 5,
        "expected at least five lossless images"
    );
    for case in cases {
        let name = case["name"].as_str().unwrap();
        let prepared = run_case(case);
        assert_eq!(prepared.global.len(), 3 * 1024 * 1024);
        let tiles = case["tiles"].as_array().unwrap();
        assert_eq!(
            prepared.tiles.len(),
            tiles.len() * 3 * 768 * 768,
            "{name}: tile buffer length"
        );
        let views = std::iter::once((
            "global".to_owned(),
            &prepared.global[..],
            1024,
            &case["global"],
        ))
        .chain(
            prepared
                .tiles
                .chunks_exact(3 * 768 * 768)
                .zip(tiles)
                .enumerate()
                .map(|(k, (f, e))| (format!("tile {k}"), f, 768, e)),
        );
        for (view, bytes, side, expected) in views {
            if is_lossy(case) {
                let worst = check_view_near(name, &view, bytes, side, expected);
                eprintln!("{name} {view}: JPEG source, sampled pixels within {worst} levels of the oracle");
            } else {
                check_view(name, &view, bytes, side, expected);
            }
        }
    }
}

/// transformers' `pad_to_square` pastes the global view at `(1024 − short) // 2`; the official
/// `ImageOps.pad` uses `round((1024 − short) · 0.5)` (half to even). We follow the official code. This pins
/// the difference: where the two offsets differ, moving our pasted image to transformers' offset must give
/// exactly transformers' global view, and nothing else may differ.
#[test]
fn global_offset_differs_from_transformers_only_by_rounding() {
    let all = expectations();
    let mut differing = 0;
    for case in all["cases"].as_array().unwrap() {
        let name = case["name"].as_str().unwrap();
        let ours = pair(&case["global_offset"]);
        let theirs = pair(&case["transformers"]["global_offset"]);
        let (w, h) = pair(&case["global_resized"]);
        let (gap_x, gap_y) = (1024 - w, 1024 - h);
        assert_eq!(
            theirs,
            (gap_x / 2, gap_y / 2),
            "{name}: transformers floors half the gap"
        );
        assert_eq!(
            case["transformers"]["tiles_equal_official"],
            Value::Bool(true),
            "{name}: tiles agree"
        );
        if ours == theirs {
            assert_eq!(
                case["transformers"]["global_sha256"], case["global"]["sha256"],
                "{name}"
            );
            continue;
        }
        differing += 1;
        let odd_gap = if gap_x != 0 { gap_x } else { gap_y };
        assert!(
            odd_gap % 4 == 3,
            "{name}: round-half-even and floor only part on gaps ≡ 3 (mod 4)"
        );
        let prepared = run_case(case);
        let shifted = repaste(&prepared.global, (w, h), ours, theirs);
        assert_eq!(
            sha256_hex(&shifted),
            case["transformers"]["global_sha256"].as_str().unwrap(),
            "{name}"
        );
        assert_ne!(
            case["transformers"]["global_sha256"], case["global"]["sha256"],
            "{name}"
        );
    }
    assert!(
        differing > 0,
        "no fixture exercises the offset difference any more"
    );
}

/// Move the pasted `size` region of a 3×1024×1024 global view from offset `from` to `to`, re-padding with 127.
fn repaste(global: &[u8], size: (u32, u32), from: (u32, u32), to: (u32, u32)) -> Vec<u8> {
    let side = 1024usize;
    let mut out = vec![127u8; global.len()];
    for c in 0..3 {
        for y in 0..size.1 as usize {
            let src = c * side * side + (from.1 as usize + y) * side + from.0 as usize;
            let dst = c * side * side + (to.1 as usize + y) * side + to.0 as usize;
            out[dst..dst + size.0 as usize].copy_from_slice(&global[src..src + size.0 as usize]);
        }
    }
    out
}
