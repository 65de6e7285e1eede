//! SAM's windows: a (B, h, w, C) grid zero-padded at the bottom and right to multiples of the window size and
//! cut into (B·windows, ws, ws, C), row-major; and back.

use candle_core::Tensor;

use crate::error::Result;

/// Zero-pad (B, h, w, C) to multiples of `ws` and cut it into windows; also returns the padded size. The
/// padding comes after norm1, so padded tokens take part in attention with k/v equal to the qkv bias, as in
/// SAM (spec §7.3).
pub fn window_partition(x: &Tensor, ws: usize) -> Result<(Tensor, (usize, usize))> {
    let (b, h, w, c) = x.dims4()?;
    let (hp, wp) = (h.div_ceil(ws) * ws, w.div_ceil(ws) * ws);
    if let Some(windows) = fused_split(x, ws)? {
        return Ok((windows, (hp, wp)));
    }
    let x = x
        .pad_with_zeros(1, 0, hp - h)?
        .pad_with_zeros(2, 0, wp - w)?;
    let windows = x
        .reshape((b, hp / ws, ws, wp / ws, ws, c))?
        .permute((0, 1, 3, 2, 4, 5))?
        .contiguous()?
        .reshape((b * (hp / ws) * (wp / ws), ws, ws, c))?;
    Ok((windows, (hp, wp)))
}

/// Inverse of [`window_partition`] onto a (B, h, w, C) grid, the padding cropped.
pub fn window_merge(
    windows: &Tensor,
    (b, h, w, c): (usize, usize, usize, usize),
) -> Result<Tensor> {
    let ws = windows.dim(1)?;
    let (hp, wp) = (h.div_ceil(ws) * ws, w.div_ceil(ws) * ws);
    let x = windows
        .reshape((b, hp / ws, wp / ws, ws, ws, c))?
        .permute((0, 1, 3, 2, 4, 5))?
        .contiguous()?
        .reshape((b, hp, wp, c))?;
    Ok(x.narrow(1, 0, h)?.narrow(2, 0, w)?.contiguous()?)
}

#[cfg(feature = "cuda")]
fn fused_split(x: &Tensor, ws: usize) -> Result<Option<Tensor>> {
    crate::kernels::window_split(x, ws)
}

#[cfg(not(feature = "cuda"))]
fn fused_split(_x: &Tensor, _ws: usize) -> Result<Option<Tensor>> {
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use candle_core::{DType, Device};

    #[test]
    fn merging_the_windows_gives_back_the_grid_without_its_padding() {
        let (b, h, w, c, ws) = (2, 5, 3, 2, 2);
        let x = Tensor::arange(0f32, (b * h * w * c) as f32, &Device::Cpu)
            .unwrap()
            .reshape((b, h, w, c))
            .unwrap();
        let (windows, padded) = window_partition(&x, ws).unwrap();
        assert_eq!(padded, (6, 4));
        assert_eq!(windows.dims(), &[b * 3 * 2, ws, ws, c]);
        // Window 1 of image 0 covers rows 0..2, columns 2..4; column 3 is padding.
        let first = windows.get(1).unwrap().to_dtype(DType::F32).unwrap();
        let at = |y: usize, col: usize| ((y * w + col) * c) as f32;
        let got = first.to_vec3::<f32>().unwrap();
        assert_eq!(got[0][0][0], at(0, 2));
        assert_eq!(got[1][0][0], at(1, 2));
        assert_eq!(got[0][1][0], 0.0);
        let merged = window_merge(&windows, (b, h, w, c)).unwrap();
        let same = (merged - &x).unwrap().abs().unwrap().sum_all().unwrap();
        assert_eq!(same.to_scalar::<f32>().unwrap(), 0.0);
    }
}
