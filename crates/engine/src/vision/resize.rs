//! The two weight resamplings SAM needs for inputs smaller than the 1024² it was trained on (spec §7.1–7.2).
//! Both depend only on the weights, so they run once at load, in f32 on the CPU, as PyTorch does them.

/// PyTorch's kernel for antialiased bicubic resampling: Keys cubic with a = −0.5 (Pillow's), not the
/// −0.75 of plain `mode="bicubic"`.
fn cubic_aa(x: f32) -> f32 {
    crate::preprocess::resample::bicubic(f64::from(x)) as f32
}

/// One output sample of an antialiased 1-D resize: the first input index and the normalised weights.
struct Taps {
    start: usize,
    weights: Vec<f32>,
}

/// `_compute_indices_min_size_weights_aa` of PyTorch's `upsample_bicubic2d_aa` with `align_corners=False`:
/// centre `scale·(i + 0.5)`, support widened by the scale when downsampling, weights normalised per output.
fn aa_taps(in_size: usize, out_size: usize) -> Vec<Taps> {
    let scale = in_size as f32 / out_size as f32;
    let (support, inv_scale) = if scale >= 1.0 {
        (2.0 * scale, 1.0 / scale)
    } else {
        (2.0, 1.0)
    };
    (0..out_size)
        .map(|i| {
            let center = scale * (i as f32 + 0.5);
            // `as i64` truncates toward zero like the C++ cast.
            let start = ((center - support + 0.5) as i64).max(0) as usize;
            let end = ((center + support + 0.5) as i64).min(in_size as i64) as usize;
            let mut weights: Vec<f32> = (start..end)
                .map(|j| cubic_aa((j as f32 - center + 0.5) * inv_scale))
                .collect();
            let total: f32 = weights.iter().sum();
            if total != 0.0 {
                weights.iter_mut().for_each(|w| *w /= total);
            }
            Taps { start, weights }
        })
        .collect()
}

/// `F.interpolate(x, (out_h, out_w), mode="bicubic", align_corners=False, antialias=True)` on a channels-last
/// grid `(h, w, c)` stored row-major; the width pass runs first, then the height pass, as in PyTorch.
pub fn bicubic_aa_resize(
    src: &[f32],
    (h, w, c): (usize, usize, usize),
    out_h: usize,
    out_w: usize,
) -> Vec<f32> {
    let taps_w = aa_taps(w, out_w);
    let mut horiz = vec![0f32; h * out_w * c];
    for y in 0..h {
        for (x, tap) in taps_w.iter().enumerate() {
            let out = &mut horiz[(y * out_w + x) * c..(y * out_w + x + 1) * c];
            for (k, &wt) in tap.weights.iter().enumerate() {
                let s = &src[(y * w + tap.start + k) * c..(y * w + tap.start + k + 1) * c];
                out.iter_mut().zip(s).for_each(|(o, v)| *o += v * wt);
            }
        }
    }
    let taps_h = aa_taps(h, out_h);
    let mut dst = vec![0f32; out_h * out_w * c];
    for (y, tap) in taps_h.iter().enumerate() {
        let out = &mut dst[y * out_w * c..(y + 1) * out_w * c];
        for (k, &wt) in tap.weights.iter().enumerate() {
            let row = &horiz[(tap.start + k) * out_w * c..(tap.start + k + 1) * out_w * c];
            out.iter_mut().zip(row).for_each(|(o, v)| *o += v * wt);
        }
    }
    dst
}

/// `F.interpolate(x, size=out_len, mode="linear", align_corners=False)` along the rows of an `(len, c)` table:
/// source `(i + 0.5)·len/out − 0.5`, clamped at 0, then linear between floor and floor+1.
pub fn linear_resize_rows(src: &[f32], (len, c): (usize, usize), out_len: usize) -> Vec<f32> {
    if len == out_len {
        return src.to_vec();
    }
    let scale = len as f32 / out_len as f32;
    let mut dst = vec![0f32; out_len * c];
    for i in 0..out_len {
        let pos = (scale * (i as f32 + 0.5) - 0.5).max(0.0);
        let i0 = pos as usize;
        let i1 = if i0 + 1 < len { i0 + 1 } else { i0 };
        let l1 = pos - i0 as f32;
        let l0 = 1.0 - l1;
        for ch in 0..c {
            dst[i * c + ch] = l0 * src[i0 * c + ch] + l1 * src[i1 * c + ch];
        }
    }
    dst
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn taps_sum_to_one_and_widen_when_downsampling() {
        let taps = aa_taps(64, 48);
        for t in &taps {
            assert!((t.weights.iter().sum::<f32>() - 1.0).abs() < 1e-5);
        }
        // scale 4/3: support 8/3, so interior outputs read 5 or 6 inputs instead of 4.
        assert!(taps[24].weights.len() >= 5);
    }

    #[test]
    fn equal_sizes_are_the_identity() {
        let src: Vec<f32> = (0..27 * 3).map(|i| i as f32).collect();
        assert_eq!(linear_resize_rows(&src, (27, 3), 27), src);
    }
}
