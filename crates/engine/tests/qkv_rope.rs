//! The decode step's fused q/k/v projection (qkv_rope.cuh) on the GPU in bf16, at the real model's heads: one
//! launch of the tiles gives q and writes each row's new key and value into its cache, bit for bit as the
//! plain tiles followed by rope_kv_write do, and writes nothing else. Rows of different lengths and cache
//! capacities; one row and two (the norm in the tiles' blocks), three and eight (its own launch first), bf16
//! weights and int8 rows. 70 rows take the projection, then rope_kv_write. The rows are given as they are, or
//! as a MoE layer's output still to be added to its residual: for one row the tiles' blocks add it themselves,
//! and every path returns the rows moe_combine gives.
#![cfg(feature = "cuda")]

use candle_core::quantized::{GgmlDType, QTensor};
use candle_core::{DType, Device, Tensor};
use deepread_engine::kernels::{Hidden, InputAddresses, Kernels, MoeOut, StepLayer, Weight};
use deepread_engine::lm::{SequenceCache, Sums};
use deepread_engine::quant::Int8Matrix;

#[path = "support/decode_step.rs"]
mod decode_step;
use decode_step::{random, step_inputs, values, HEADS};

const HIDDEN: usize = 1280;
const EPS: f64 = 1e-6;

/// `rows` one-layer caches, row b holding 3 + 7b positions in a buffer of its own capacity, each with room
/// for the step's position.
fn caches(rows: usize, device: &Device) -> Vec<SequenceCache> {
    let (_, nkv, hd) = HEADS;
    (0..rows)
        .map(|b| {
            let mut cache = SequenceCache::new(1, 16 + 5 * b);
            let len = 3 + 7 * b;
            let (k, v) = (
                random(&[1, nkv, len, hd], 1.0, device),
                random(&[1, nkv, len, hd], 1.0, device),
            );
            cache.layers[0].append(&k, &v).unwrap();
            cache.reserve_one().unwrap();
            cache
        })
        .collect()
}

/// Every cache's key and value buffers, whole.
fn cache_values(caches: &[SequenceCache]) -> Vec<Vec<f32>> {
    caches
        .iter()
        .flat_map(|c| {
            let (k, v) = c.layers[0].buffers().unwrap();
            [values(k), values(v)]
        })
        .collect()
}

/// Zeroes each cache's step position, so that a kernel that does not write it is seen.
fn clear_step_positions(caches: &[SequenceCache]) {
    for cache in caches {
        let (k, v) = cache.layers[0].buffers().unwrap();
        let at = cache.len();
        for buffer in [k, v] {
            let (_, heads, _, hd) = buffer.dims4().unwrap();
            let zeros = Tensor::zeros((1, heads, 1, hd), DType::BF16, buffer.device()).unwrap();
            buffer.slice_set(&zeros, 2, at).unwrap();
        }
    }
}

/// The test's one layer, at the real model's heads.
fn layer_zero(inputs: &InputAddresses) -> StepLayer<'_> {
    StepLayer {
        inputs,
        layer: 0,
        heads: HEADS,
    }
}

/// The rows the projection takes: as they are, or a MoE layer's output (6 routed experts and the shared ones,
/// in f32) still to be added to the residual.
#[derive(Clone, Copy, Debug)]
enum Input {
    Rows,
    Moe,
}

const TOP_K: usize = 6;

fn f32_random(shape: &[usize], device: &Device) -> Tensor {
    (Tensor::randn(0f32, 1.0, shape, device).unwrap() * 0.3).unwrap()
}

fn fused_matches_projection_then_rope(
    kernels: &Kernels,
    rows: usize,
    qkv: Weight<'_>,
    input: Input,
) {
    let device = Device::Cuda(kernels.device().clone());
    let residual = random(&[rows, HIDDEN], 1.0, &device);
    let moe = MoeOut {
        y: f32_random(&[rows * TOP_K, HIDDEN], &device),
        shared: Some(f32_random(&[rows, HIDDEN], &device)),
        residual: residual.clone(),
        top_k: TOP_K,
    };
    let x = match input {
        Input::Rows => residual.clone(),
        Input::Moe => kernels
            .moe_combine(&moe.y, moe.shared.as_ref(), Some(&residual), TOP_K)
            .unwrap(),
    };
    let norm = (random(&[HIDDEN], 0.5, &device) + 1.0).unwrap();
    let mut caches = caches(rows, &device);
    let (_inputs, addresses) = step_inputs(kernels, &mut caches);

    let projected = kernels
        .norm_linear(&x, &norm, EPS, qkv, Sums::BatchInvariant)
        .unwrap();
    let want_q = values(
        &kernels
            .rope_kv_write(&projected, &addresses, 0, HEADS)
            .unwrap(),
    );
    let want_caches = cache_values(&caches);
    clear_step_positions(&caches);
    let cleared = cache_values(&caches);

    let hidden = match input {
        Input::Rows => Hidden::Rows(residual.clone()),
        Input::Moe => Hidden::Moe(moe),
    };
    let (q, got_rows) = kernels
        .qkv_rope(
            hidden,
            (&norm, EPS),
            qkv,
            layer_zero(&addresses),
            Sums::BatchInvariant,
        )
        .unwrap();
    let got_q = values(&q);
    let got_caches = cache_values(&caches);

    let what = format!("{rows} rows of {input:?}");
    assert!(got_q.iter().any(|v| v.abs() > 0.1), "q is not all zeros");
    assert_eq!(got_q, want_q, "{what}: q differs");
    assert_eq!(values(&got_rows), values(&x), "{what}: the rows differ");
    if let Input::Moe = input {
        assert_ne!(
            values(&x),
            values(&residual),
            "{what}: the MoE output added nothing"
        );
    }
    assert_ne!(
        cleared, want_caches,
        "{what}: the step wrote no key or value"
    );
    for (i, (got, want)) in got_caches.iter().zip(&want_caches).enumerate() {
        let (row, kind) = (i / 2, ["keys", "values"][i % 2]);
        assert_eq!(got, want, "{what}: row {row}'s {kind} differ");
    }
}

#[test]
fn fused_qkv_gives_q_and_the_caches_of_the_projection_then_rope() {
    let device = deepread_engine::engine_gpu(0).expect("these tests need a CUDA GPU");
    let kernels = Kernels::new(&device, DType::BF16)
        .unwrap()
        .expect("bf16 kernels on CUDA");
    let (nh, nkv, hd) = HEADS;
    let n = (nh + 2 * nkv) * hd;
    let dense = random(&[n, HIDDEN], 0.05, &device);
    let w = (Tensor::randn(0f32, 1.0, (n, HIDDEN), &Device::Cpu).unwrap() * 0.05).unwrap();
    let q8 = QTensor::quantize(&w, GgmlDType::Q8_0).unwrap();
    let int8 = Int8Matrix::from_q8_0(&[&q8], &device).unwrap();
    for rows in [1, 2, 3, 8, 70] {
        for input in [Input::Rows, Input::Moe] {
            fused_matches_projection_then_rope(&kernels, rows, Weight::Dense(&dense), input);
            fused_matches_projection_then_rope(&kernels, rows, Weight::Int8(&int8), input);
        }
    }
}
