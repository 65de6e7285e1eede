//! The decode step's attention (attention.cuh) on the GPU in bf16, at the real model's heads. 64 rows of
//! different lengths, from one position to past 4,096 (where a split holds more than one tile), read at once:
//! a launch's blocks then walk several splits each. Every row's output must be bit for bit its output read
//! alone, where a block takes one split, and within bf16's rounding of softmax(q·kᵀ/√hd)·v in f64.
#![cfg(feature = "cuda")]

use candle_core::{DType, Device};
use deepread_engine::kernels::Kernels;
use deepread_engine::lm::SequenceCache;

#[path = "support/decode_step.rs"]
mod decode_step;
use decode_step::{random, step_inputs, values, HEADS};

/// The positions each row attends over, this step's included: one split, split edges, a page's prompt, and
/// past 4,096, where a split takes more than one tile.
fn lengths() -> Vec<usize> {
    let edges = [1, 2, 63, 64, 65, 129, 1131, 1259, 4096, 4097, 5000];
    let rest = (0..64 - edges.len()).map(|b| 100 + 53 * b);
    edges.into_iter().chain(rest).collect()
}

/// A one-layer cache of `len` positions, this step's key and value written in its reserved slot as a
/// projection would.
fn cache(len: usize, device: &Device) -> SequenceCache {
    let (_, nkv, hd) = HEADS;
    let mut cache = SequenceCache::new(1, len + 3);
    let before = len - 1;
    // A cache holds at least one position before it decodes; with none before, that one is written over.
    let stored = before.max(1);
    let (k, v) = (
        random(&[1, nkv, stored, hd], 1.0, device),
        random(&[1, nkv, stored, hd], 1.0, device),
    );
    cache.layers[0].append(&k, &v).unwrap();
    if before == 0 {
        cache.clear();
    }
    cache.reserve_one().unwrap();
    let (k, v) = cache.layers[0].buffers().unwrap();
    for buffer in [k, v] {
        buffer
            .slice_set(&random(&[1, nkv, 1, hd], 1.0, device), 2, before)
            .unwrap();
    }
    cache
}

/// softmax(q·kᵀ/√hd)·v of one row in f64: q (nh·hd), the cache's first `len` positions.
fn reference(q: &[f32], cache: &SequenceCache, len: usize) -> Vec<f64> {
    let (nh, nkv, hd) = HEADS;
    let (k, v) = cache.layers[0].buffers().unwrap();
    let (k, v) = (
        values(&k.narrow(2, 0, len).unwrap()),
        values(&v.narrow(2, 0, len).unwrap()),
    );
    let scale = (hd as f64).powf(-0.5);
    let mut out = vec![0f64; nh * hd];
    for h in 0..nh {
        let kv = h / (nh / nkv);
        let at = |t: usize, d: usize| (kv * len + t) * hd + d;
        let scores: Vec<f64> = (0..len)
            .map(|t| {
                let dot: f64 = (0..hd)
                    .map(|d| q[h * hd + d] as f64 * k[at(t, d)] as f64)
                    .sum();
                dot * scale
            })
            .collect();
        let max = scores.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        let weights: Vec<f64> = scores.iter().map(|s| (s - max).exp()).collect();
        let total: f64 = weights.iter().sum();
        for d in 0..hd {
            let sum: f64 = (0..len).map(|t| weights[t] * v[at(t, d)] as f64).sum();
            out[h * hd + d] = sum / total;
        }
    }
    out
}

#[test]
fn attention_of_a_row_is_the_same_alone_and_among_64_and_matches_f64() {
    let device = deepread_engine::engine_gpu(0).expect("these tests need a CUDA GPU");
    let kernels = Kernels::new(&device, DType::BF16)
        .unwrap()
        .expect("bf16 kernels on CUDA");
    let (nh, _, hd) = HEADS;
    let lengths = lengths();
    let rows = lengths.len();
    let mut caches: Vec<SequenceCache> = lengths.iter().map(|&len| cache(len, &device)).collect();
    let q = random(&[rows, nh * hd], 1.0, &device);
    let together = {
        let (_inputs, addresses) = step_inputs(&kernels, &mut caches);
        values(&kernels.attention(&q, &addresses, 0, HEADS).unwrap())
    };
    let width = nh * hd;
    for (b, &len) in lengths.iter().enumerate() {
        let q_row = q.narrow(0, b, 1).unwrap();
        let (_inputs, addresses) = step_inputs(&kernels, &mut caches[b..b + 1]);
        let alone = values(&kernels.attention(&q_row, &addresses, 0, HEADS).unwrap());
        let among = &together[b * width..(b + 1) * width];
        assert_eq!(
            alone, among,
            "row {b} ({len} positions): alone and among 64 differ"
        );
        let want = reference(&values(&q_row), &caches[b], len);
        for (i, (&got, &want)) in among.iter().zip(&want).enumerate() {
            let err = (got as f64 - want).abs();
            assert!(
                err <= 1e-2 * want.abs() + 1e-4,
                "row {b} ({len} positions), head {} dim {}: {got} against {want}",
                i / hd,
                i % hd
            );
        }
    }
}
