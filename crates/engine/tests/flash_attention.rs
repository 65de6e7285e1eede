//! Flash attention against the scores-materialised computation on the GPU, at the shapes a page uses.
#![cfg(feature = "cuda")]

use candle_core::{DType, Device, Tensor, D};
use deepread_engine::kernels::{flash_attention, RelPosBias, Visibility};

/// softmax(q·kᵀ·scale + bias + mask)·v in f32, (B, heads, q_len, hd) → (B, q_len, heads, hd).
fn straightforward(
    q: &Tensor,
    k: &Tensor,
    v: &Tensor,
    bias: Option<&Tensor>,
    mask: Option<&Tensor>,
    scale: f64,
) -> Tensor {
    let (q, k, v) = (
        q.to_dtype(DType::F32).unwrap(),
        k.to_dtype(DType::F32).unwrap(),
        v.to_dtype(DType::F32).unwrap(),
    );
    let rep = q.dim(1).unwrap() / k.dim(1).unwrap();
    let repeat = |t: &Tensor| {
        Tensor::cat(&vec![t.clone(); rep], 2)
            .unwrap()
            .reshape((
                t.dim(0).unwrap(),
                t.dim(1).unwrap() * rep,
                t.dim(2).unwrap(),
                t.dim(3).unwrap(),
            ))
            .unwrap()
    };
    let (k, v) = (repeat(&k), repeat(&v));
    let mut scores = (q.matmul(&k.t().unwrap()).unwrap() * scale).unwrap();
    if let Some(b) = bias {
        scores = scores
            .broadcast_add(&b.to_dtype(DType::F32).unwrap())
            .unwrap();
    }
    if let Some(m) = mask {
        scores = scores.broadcast_add(m).unwrap();
    }
    let probs = candle_nn::ops::softmax(&scores, D::Minus1).unwrap();
    probs
        .matmul(&v)
        .unwrap()
        .transpose(1, 2)
        .unwrap()
        .contiguous()
        .unwrap()
}

fn random(shape: (usize, usize, usize, usize), device: &Device) -> Tensor {
    (Tensor::randn(0f32, 1.0, shape, device).unwrap() * 0.5)
        .unwrap()
        .to_dtype(DType::BF16)
        .unwrap()
}

fn max_diff(a: &Tensor, b: &Tensor) -> f32 {
    (a.to_dtype(DType::F32).unwrap() - b)
        .unwrap()
        .abs()
        .unwrap()
        .flatten_all()
        .unwrap()
        .max(0)
        .unwrap()
        .to_scalar()
        .unwrap()
}

fn gpu() -> Device {
    Device::new_cuda(0).expect("these tests need a CUDA GPU")
}

#[test]
fn causal_prompt_with_gqa_matches() {
    let dev = gpu();
    let (q, k, v) = (
        random((1, 14, 300, 64), &dev),
        random((1, 2, 300, 64), &dev),
        random((1, 2, 300, 64), &dev),
    );
    let prefix = 150;
    let mask: Vec<f32> = (0..300)
        .flat_map(|i| {
            (0..300).map(move |j| {
                if j < prefix || j <= i {
                    0.0
                } else {
                    f32::NEG_INFINITY
                }
            })
        })
        .collect();
    let mask = Tensor::from_vec(mask, (300, 300), &dev).unwrap();
    let fused = flash_attention(
        &q,
        &k,
        &v,
        None,
        0.125,
        Visibility::PrefixThenCausal(prefix),
    )
    .unwrap()
    .unwrap();
    let want = straightforward(&q, &k, &v, None, Some(&mask), 0.125);
    assert!(
        max_diff(&fused, &want) < 2e-2,
        "prefix-causal GQA differs by {}",
        max_diff(&fused, &want)
    );
}

#[test]
fn sam_attention_with_relative_positions_matches() {
    let dev = gpu();
    let side = 14;
    let n = side * side;
    let (q, k, v) = (
        random((2, 12, n, 64), &dev),
        random((2, 12, n, 64), &dev),
        random((2, 12, n, 64), &dev),
    );
    let (rel_h, rel_w) = (
        random((2, 12, n, side), &dev),
        random((2, 12, n, side), &dev),
    );
    // bias[i, (kh, kw)] = rel_h[i, kh] + rel_w[i, kw], summed in bf16 as the reference's mask is.
    let bias = rel_h
        .unsqueeze(4)
        .unwrap()
        .broadcast_add(&rel_w.unsqueeze(3).unwrap())
        .unwrap()
        .reshape((2, 12, n, n))
        .unwrap();
    let rel = RelPosBias {
        h: &rel_h,
        w: &rel_w,
        cols: side,
    };
    let fused = flash_attention(&q, &k, &v, Some(rel), 0.125, Visibility::All)
        .unwrap()
        .unwrap();
    let want = straightforward(&q, &k, &v, Some(&bias), None, 0.125);
    assert!(
        max_diff(&fused, &want) < 2e-2,
        "SAM attention differs by {}",
        max_diff(&fused, &want)
    );
}

#[test]
fn lm_prompt_at_head_dim_128_matches() {
    let dev = gpu();
    let t = 1131;
    let (q, k, v) = (
        random((1, 10, t, 128), &dev),
        random((1, 10, t, 128), &dev),
        random((1, 10, t, 128), &dev),
    );
    let mask: Vec<f32> = (0..t)
        .flat_map(|i| (0..t).map(move |j| if j <= i { 0.0 } else { f32::NEG_INFINITY }))
        .collect();
    let mask = Tensor::from_vec(mask, (t, t), &dev).unwrap();
    let scale = (128f64).powf(-0.5);
    let fused = flash_attention(&q, &k, &v, None, scale, Visibility::Causal)
        .unwrap()
        .unwrap();
    let want = straightforward(&q, &k, &v, None, Some(&mask), scale);
    assert!(
        max_diff(&fused, &want) < 2e-2,
        "causal prompt differs by {}",
        max_diff(&fused, &want)
    );
}

#[test]
fn strided_views_of_a_fused_projection_give_what_their_copies_give() {
    let dev = gpu();
    // SAM's layout: q, k and v as views of one (B, n, 3, heads, hd) projection.
    let (b, heads, side) = (2, 12, 14);
    let n = side * side;
    let qkv = (Tensor::randn(0f32, 1.0, (b, n, 3, heads, 64), &dev).unwrap() * 0.5)
        .unwrap()
        .to_dtype(DType::BF16)
        .unwrap();
    let by_part = qkv.permute((2, 0, 3, 1, 4)).unwrap();
    let part = |i: usize| by_part.narrow(0, i, 1).unwrap().squeeze(0).unwrap();
    let (q, k, v) = (part(0), part(1), part(2));
    assert!(!q.is_contiguous() && !k.is_contiguous() && !v.is_contiguous());
    let copy = |t: &Tensor| t.contiguous().unwrap();
    let attend = |q: &Tensor, k: &Tensor, v: &Tensor| {
        flash_attention(q, k, v, None, 0.125, Visibility::All)
            .unwrap()
            .unwrap()
    };
    let strided = attend(&q, &k, &v);
    let copied = attend(&copy(&q), &copy(&k), &copy(&v));
    let want = straightforward(&q, &k, &v, None, None, 0.125);
    assert_eq!(
        max_diff(&strided, &copied.to_dtype(DType::F32).unwrap()),
        0.0
    );
    assert!(max_diff(&strided, &want) < 2e-2);
}
