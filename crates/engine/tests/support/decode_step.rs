//! A decode step's pieces for the kernel tests at the real model's heads: random bf16 tensors, their values,
//! and the step's inputs for a set of one-layer caches.

use candle_core::{DType, Device, Tensor};
use deepread_engine::kernels::{InputAddresses, Kernels, StepInputs};
use deepread_engine::lm::SequenceCache;

/// Heads of the real config: q, k/v, head dim.
pub const HEADS: (usize, usize, usize) = (10, 10, 128);

/// Normal values times `scale`, in bf16.
pub fn random(shape: &[usize], scale: f64, device: &Device) -> Tensor {
    (Tensor::randn(0f32, 1.0, shape, device).unwrap() * scale)
        .unwrap()
        .to_dtype(DType::BF16)
        .unwrap()
}

/// All of `t`'s values in f32, in order.
pub fn values(t: &Tensor) -> Vec<f32> {
    t.to_dtype(DType::F32)
        .unwrap()
        .flatten_all()
        .unwrap()
        .to_vec1::<f32>()
        .unwrap()
}

/// The step's inputs for `caches`: random angles for each row.
pub fn step_inputs(
    kernels: &Kernels,
    caches: &mut [SequenceCache],
) -> (StepInputs, InputAddresses) {
    let dev = kernels.device();
    let rows = caches.len();
    let half = HEADS.2 / 2;
    let angles = |seed: f32| -> Vec<f32> {
        (0..rows * half)
            .map(|i| (i as f32 * 0.37 + seed).sin())
            .collect()
    };
    let (cos, sin) = (angles(0.1), angles(1.3));
    let mut inputs = StepInputs::new(dev, rows, 1, HEADS.2, true).unwrap();
    let refs: Vec<&mut SequenceCache> = caches.iter_mut().collect();
    let bans = vec![Vec::new(); rows];
    inputs
        .fill(dev, &vec![0; rows], &refs, (&cos, &sin), &bans)
        .unwrap();
    let addresses = inputs.addresses(dev);
    (inputs, addresses)
}
