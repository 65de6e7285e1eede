//! How far a kernel's output is from the same arithmetic written out in f32.

use candle_core::{DType, Device, Tensor};

/// `t` in f32 on the CPU: the reference arithmetic's input.
pub fn f32_on_cpu(t: &Tensor) -> Tensor {
    t.to_device(&Device::Cpu)
        .unwrap()
        .to_dtype(DType::F32)
        .unwrap()
}

/// The largest |got − want| over two tables of one shape, and the largest |want| (the scale it is read
/// against).
pub fn largest_gap(got: &[Vec<f32>], want: &[Vec<f32>]) -> (f32, f32) {
    assert_eq!(got.len(), want.len(), "tables of one shape");
    let scale = want.iter().flatten().fold(0f32, |m, v| m.max(v.abs()));
    let worst = got
        .iter()
        .flatten()
        .zip(want.iter().flatten())
        .fold(0f32, |m, (a, b)| m.max((a - b).abs()));
    (worst, scale)
}
