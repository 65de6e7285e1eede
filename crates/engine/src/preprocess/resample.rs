//! Pillow's `Image.resize(size, BICUBIC)` for 8-bit RGB, reproduced to the bit.
//!
//! What Pillow 13 runs for `resize((w, h))` without `box` or `reducing_gap` (`Image.resize` →
//! `ImagingResample` → `ImagingResampleInner` in `src/libImaging/Resample.c`):
//! * no size change: a copy;
//! * otherwise a separable filter, two passes; a pass whose axis keeps its size is skipped. Normally the
//!   horizontal pass runs first (only over the source rows the vertical pass will read). Since Pillow 13,
//!   when the height shrinks by more than twice as many pixels as the width, the vertical pass runs first
//!   (a speed-up that changes the rounding: tall pages hit it). Pillow ≤ 12 always ran horizontal first;
//! * per output sample, the kernel centre is `(i + 0.5) · scale`; on downscale the support widens by the
//!   scale (antialiasing); weights are normalised per sample, then turned into fixed point with 22
//!   fractional bits; each pass rounds (adds ½) and clips to 0..=255 before the next one reads it.
//!
//! No reduce step runs: `Image.reduce` is only used when `reducing_gap` is given.

use image::RgbImage;

/// Fractional bits of the fixed-point weights: `32 − 8 − 2` in Pillow (8 bits of sample, 2 of headroom).
const PRECISION_BITS: u32 = 22;
/// Pillow's bicubic support radius.
const BICUBIC_SUPPORT: f64 = 2.0;
const CHANNELS: usize = 3;

/// Resize with Pillow's BICUBIC filter exactly as `Image.resize((width, height))` does.
///
/// A zero target dimension gives an empty image, as `ImageOps.contain` does for a degenerate aspect.
pub fn resize_bicubic(src: &RgbImage, width: u32, height: u32) -> RgbImage {
    if width == 0 || height == 0 || src.width() == 0 || src.height() == 0 {
        return RgbImage::new(width, height);
    }
    if src.dimensions() == (width, height) {
        return src.clone();
    }
    let vertical = Taps::bicubic(src.height() as usize, height as usize);
    if vertical_runs_first(src.dimensions(), (width, height)) {
        // Only reached when the height shrinks, so the vertical pass is always needed here.
        let narrowed = vertical_pass(src, &vertical, 0);
        if width == src.width() {
            return narrowed;
        }
        let rows = 0..narrowed.height() as usize;
        return horizontal_pass(
            &narrowed,
            &Taps::bicubic(src.width() as usize, width as usize),
            rows,
        );
    }
    let horizontal_input = if width != src.width() {
        let rows = vertical.source_span();
        let taps = Taps::bicubic(src.width() as usize, width as usize);
        Some((horizontal_pass(src, &taps, rows.clone()), rows.start))
    } else {
        None
    };
    match (&horizontal_input, height != src.height()) {
        (Some((narrowed, first_row)), true) => vertical_pass(narrowed, &vertical, *first_row),
        (Some((narrowed, _)), false) => narrowed.clone(),
        (None, true) => vertical_pass(src, &vertical, 0),
        (None, false) => src.clone(),
    }
}

/// Pillow 13's pass order: vertical first when the height loses more than twice the pixels the width does.
fn vertical_runs_first((in_w, in_h): (u32, u32), (out_w, out_h): (u32, u32)) -> bool {
    let shrink_y = i64::from(in_h) - i64::from(out_h);
    let shrink_x = i64::from(in_w) - i64::from(out_w);
    shrink_y > 0 && shrink_y > shrink_x * 2
}

/// Pillow's cubic convolution kernel with a = −0.5 (`bicubic_filter` in Resample.c); PyTorch's
/// antialiased bicubic uses the same kernel, so SAM's position-table resize shares it.
pub(crate) fn bicubic(x: f64) -> f64 {
    const A: f64 = -0.5;
    let x = x.abs();
    if x < 1.0 {
        ((A + 2.0) * x - (A + 3.0)) * x * x + 1.0
    } else if x < 2.0 {
        (((x - 5.0) * x + 8.0) * x - 4.0) * A
    } else {
        0.0
    }
}

/// Fixed-point filter taps for one axis: for each output sample, the first source index and its weights.
struct Taps {
    starts: Vec<usize>,
    lens: Vec<usize>,
    /// `stride` weights per output sample; only the first `lens[i]` of each row are used.
    weights: Vec<i32>,
    stride: usize,
}

impl Taps {
    /// `precompute_coeffs` + `normalize_coeffs_8bpc` for the box (0, in_size).
    fn bicubic(in_size: usize, out_size: usize) -> Self {
        // Pillow holds the box in C floats and subtracts them in float before widening.
        let scale = f64::from(in_size as f32) / out_size as f64;
        let filter_scale = scale.max(1.0);
        let support = BICUBIC_SUPPORT * filter_scale;
        let stride = support.ceil() as usize * 2 + 1;
        let inverse = 1.0 / filter_scale;
        let mut taps = Taps {
            starts: Vec::with_capacity(out_size),
            lens: Vec::with_capacity(out_size),
            weights: vec![0; out_size * stride],
            stride,
        };
        let mut row = vec![0.0f64; stride];
        for out in 0..out_size {
            let centre = (out as f64 + 0.5) * scale;
            // C casts truncate toward zero; the clamps follow, as in Pillow.
            let start = ((centre - support + 0.5) as i64).max(0) as usize;
            let end = ((centre + support + 0.5) as i64).min(in_size as i64) as usize;
            let len = end.saturating_sub(start);
            let mut total = 0.0;
            for (k, w) in row.iter_mut().take(len).enumerate() {
                *w = bicubic(((k + start) as f64 - centre + 0.5) * inverse);
                total += *w;
            }
            let fixed = &mut taps.weights[out * stride..out * stride + len];
            for (slot, &w) in fixed.iter_mut().zip(&row) {
                let normalised = if total != 0.0 { w / total } else { w };
                *slot = to_fixed_point(normalised);
            }
            taps.starts.push(start);
            taps.lens.push(len);
        }
        taps
    }

    /// Source indices read by any output sample (`ybox_first..ybox_last` in Pillow).
    fn source_span(&self) -> std::ops::Range<usize> {
        let last = self.starts.len() - 1;
        self.starts[0]..self.starts[last] + self.lens[last]
    }

    fn of(&self, out: usize) -> (usize, &[i32]) {
        let base = out * self.stride;
        (self.starts[out], &self.weights[base..base + self.lens[out]])
    }
}

/// Round half away from zero into 22 fractional bits (`normalize_coeffs_8bpc`).
fn to_fixed_point(weight: f64) -> i32 {
    let scaled = weight * f64::from(1u32 << PRECISION_BITS);
    if weight < 0.0 {
        (scaled - 0.5) as i32
    } else {
        (scaled + 0.5) as i32
    }
}

/// The accumulator starts at ½ so the final shift rounds; the clip mirrors Pillow's lookup table.
fn clip8(accumulator: i32) -> u8 {
    (accumulator >> PRECISION_BITS).clamp(0, 255) as u8
}

const ROUNDING: i32 = 1 << (PRECISION_BITS - 1);

/// Resample each row in `rows` horizontally to `taps.starts.len()` columns.
fn horizontal_pass(src: &RgbImage, taps: &Taps, rows: std::ops::Range<usize>) -> RgbImage {
    let out_width = taps.starts.len();
    let in_stride = src.width() as usize * CHANNELS;
    let input = src.as_raw();
    let mut out = vec![0u8; out_width * rows.len() * CHANNELS];
    for (out_row, in_row) in out.chunks_exact_mut(out_width * CHANNELS).zip(rows) {
        let line = &input[in_row * in_stride..(in_row + 1) * in_stride];
        for (x, pixel) in out_row.chunks_exact_mut(CHANNELS).enumerate() {
            let (start, weights) = taps.of(x);
            let mut acc = [ROUNDING; CHANNELS];
            for (k, &w) in weights.iter().enumerate() {
                let p = &line[(start + k) * CHANNELS..(start + k + 1) * CHANNELS];
                for c in 0..CHANNELS {
                    acc[c] += i32::from(p[c]) * w;
                }
            }
            for c in 0..CHANNELS {
                pixel[c] = clip8(acc[c]);
            }
        }
    }
    image_from(out_width, out.len() / (out_width * CHANNELS), out)
}

/// Resample vertically; `first_row` is the source row that `src`'s row 0 stands for.
fn vertical_pass(src: &RgbImage, taps: &Taps, first_row: usize) -> RgbImage {
    let width = src.width() as usize;
    let row_len = width * CHANNELS;
    let input = src.as_raw();
    let out_height = taps.starts.len();
    let mut out = vec![0u8; row_len * out_height];
    let mut acc = vec![0i32; row_len];
    for (y, out_row) in out.chunks_exact_mut(row_len).enumerate() {
        let (start, weights) = taps.of(y);
        acc.fill(ROUNDING);
        for (k, &w) in weights.iter().enumerate() {
            let row = start + k - first_row;
            let line = &input[row * row_len..(row + 1) * row_len];
            for (a, &p) in acc.iter_mut().zip(line) {
                *a += i32::from(p) * w;
            }
        }
        for (dst, &a) in out_row.iter_mut().zip(&acc) {
            *dst = clip8(a);
        }
    }
    image_from(width, out_height, out)
}

fn image_from(width: usize, height: usize, raw: Vec<u8>) -> RgbImage {
    // The buffer is built as width × height × 3 above, so the length always matches.
    RgbImage::from_raw(width as u32, height as u32, raw)
        .unwrap_or_else(|| RgbImage::new(width as u32, height as u32))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_matches_pillow_at_knots() {
        // Values of Pillow's bicubic_filter with a = −0.5 at a few points (from the formula in Resample.c).
        assert_eq!(bicubic(0.0), 1.0);
        assert_eq!(bicubic(1.0), 0.0);
        assert_eq!(bicubic(2.0), 0.0);
        assert_eq!(bicubic(0.5), 0.5625);
        assert_eq!(bicubic(1.5), -0.0625);
        assert_eq!(bicubic(-0.5), 0.5625);
    }

    #[test]
    fn fixed_point_rounds_half_away_from_zero() {
        assert_eq!(to_fixed_point(1.0), 1 << 22);
        assert_eq!(to_fixed_point(-0.0625), -(1 << 18));
        assert_eq!(to_fixed_point(0.5 / f64::from(1u32 << 22)), 1);
        assert_eq!(to_fixed_point(-0.5 / f64::from(1u32 << 22)), -1);
    }

    #[test]
    fn clip_saturates() {
        assert_eq!(clip8(-5 << 22), 0);
        assert_eq!(clip8(300 << 22), 255);
        assert_eq!(clip8((17 << 22) + ROUNDING), 17);
    }

    #[test]
    fn pass_order_follows_pillow_13() {
        // The tall page of the parity fixtures: 3300 − 1024 = 2276 > 2 · (1275 − 396).
        assert!(vertical_runs_first((1275, 3300), (396, 1024)));
        // A portrait page shrinking evenly, an upscale, and a width-only change keep horizontal first.
        assert!(!vertical_runs_first((1275, 1650), (791, 1024)));
        assert!(!vertical_runs_first((516, 729), (725, 1024)));
        assert!(!vertical_runs_first((2500, 985), (1024, 403)));
    }

    #[test]
    fn same_size_is_a_copy_and_zero_size_is_empty() {
        let src = RgbImage::from_fn(5, 4, |x, y| image::Rgb([x as u8 * 40, y as u8 * 50, 7]));
        assert_eq!(resize_bicubic(&src, 5, 4), src);
        assert_eq!(resize_bicubic(&src, 0, 4).dimensions(), (0, 4));
    }

    #[test]
    fn flat_image_stays_flat_both_ways() {
        // Weights of each sample sum to one, so a constant image keeps its value whatever the scale.
        let src = RgbImage::from_pixel(37, 23, image::Rgb([200, 13, 127]));
        for (w, h) in [(11, 70), (100, 5), (37, 9), (8, 23)] {
            let out = resize_bicubic(&src, w, h);
            assert!(out.pixels().all(|p| p.0 == [200, 13, 127]), "{w}x{h}");
        }
    }
}
