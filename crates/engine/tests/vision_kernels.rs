//! The vision kernels (vision.cu, and decode.cu's row kernels as the encoder uses them) against the same
//! arithmetic written out in f32 on the CPU, at the shapes SAM and the encoder see.
#![cfg(feature = "cuda")]

use candle_core::{DType, Device, Tensor, D};
use deepread_engine::kernels::{
    layer_norm, linear_epilogue, rel_pos_terms, rms_norm, rope_heads, silu_mul, window_split,
    Epilogue, WindowGrid,
};
use deepread_engine::layers::rope::Rotary;
use deepread_engine::preprocess::normalise;
use deepread_engine::vision::pixels::PixelValues;
use deepread_engine::vision::windows::{window_merge, window_partition};

fn gpu() -> Device {
    Device::new_cuda(0).expect("these tests need a CUDA GPU")
}

fn random(shape: &[usize], scale: f64, device: &Device) -> Tensor {
    (Tensor::randn(0f32, 1.0, shape, device).unwrap() * scale)
        .unwrap()
        .to_dtype(DType::BF16)
        .unwrap()
}

fn f32_cpu(t: &Tensor) -> Tensor {
    t.to_device(&Device::Cpu)
        .unwrap()
        .to_dtype(DType::F32)
        .unwrap()
}

/// Largest |a − b| relative to the largest |b|.
fn relative_error(a: &Tensor, b: &Tensor) -> f32 {
    let (a, b) = (f32_cpu(a), f32_cpu(b));
    let diff = (a - &b).unwrap().abs().unwrap().max_all().unwrap();
    let scale = b.abs().unwrap().max_all().unwrap();
    diff.to_scalar::<f32>().unwrap() / scale.to_scalar::<f32>().unwrap()
}

/// How many elements of `a` differ from `b`'s (bit for bit, as `ne` compares them).
fn differing(a: &Tensor, b: &Tensor) -> u32 {
    a.ne(b)
        .unwrap()
        .to_dtype(DType::U32)
        .unwrap()
        .sum_all()
        .unwrap()
        .to_scalar::<u32>()
        .unwrap()
}

fn gelu(x: &Tensor) -> Tensor {
    x.gelu_erf().unwrap()
}

#[test]
fn linear_epilogues_match_bias_gelu_and_residual_done_one_by_one() {
    let dev = gpu();
    let (rows, cols) = (13 * 17, 3072);
    let y = random(&[rows, cols], 2.0, &dev);
    let bias = random(&[cols], 1.0, &dev);
    let residual = random(&[rows, cols], 1.0, &dev);
    let (yc, bc, rc) = (f32_cpu(&y), f32_cpu(&bias), f32_cpu(&residual));
    let biased = yc.broadcast_add(&bc).unwrap();

    let gelu_out = Epilogue {
        bias: Some(&bias),
        gelu: true,
        ..Epilogue::default()
    };
    let got = linear_epilogue(&y, &gelu_out)
        .unwrap()
        .expect("bf16 on CUDA");
    assert!(relative_error(&got, &gelu(&biased)) < 1e-2);

    let residual_out = Epilogue {
        bias: Some(&bias),
        residual: Some(&residual),
        ..Epilogue::default()
    };
    let got = linear_epilogue(&y, &residual_out).unwrap().unwrap();
    assert!(relative_error(&got, &(&rc + &biased).unwrap()) < 1e-2);
}

#[test]
fn windowed_rows_merge_back_into_the_grid_they_were_cut_from() {
    let dev = gpu();
    // Tiles: 48×48 grids in 14×14 windows, padded to 56×56.
    let (b, h, w, c, ws) = (2, 48, 48, 64, 14);
    let grid = random(&[b, h, w, c], 1.0, &dev);
    let (cpu_windows, _) = window_partition(&f32_cpu(&grid), ws).unwrap();
    let windows = window_split(&grid, ws).unwrap().expect("bf16 on CUDA");
    assert_eq!(windows.dims(), cpu_windows.dims());
    assert_eq!(
        relative_error(&windows, &cpu_windows),
        0.0,
        "a copy is exact"
    );

    let bias = random(&[c], 1.0, &dev);
    let residual = random(&[b, h, w, c], 1.0, &dev);
    let rows = windows.elem_count() / c;
    let merged = Epilogue {
        bias: Some(&bias),
        residual: Some(&residual),
        windows: Some(WindowGrid { h, w, size: ws }),
        ..Epilogue::default()
    };
    let got = linear_epilogue(&windows.reshape((rows, c)).unwrap(), &merged)
        .unwrap()
        .unwrap()
        .reshape((b, h, w, c))
        .unwrap();
    let biased = cpu_windows.broadcast_add(&f32_cpu(&bias)).unwrap();
    let expected = (f32_cpu(&residual) + window_merge(&biased, (b, h, w, c)).unwrap()).unwrap();
    assert!(relative_error(&got, &expected) < 1e-2);
}

#[test]
fn relative_position_terms_read_q_straight_from_the_fused_projection() {
    let dev = gpu();
    for (b, side) in [(3, 14), (2, 48)] {
        let (heads, hd, n) = (12, 64, side * side);
        // q as SAM takes it: a strided view of the (B, n, 3, heads, hd) qkv output.
        let qkv = random(&[b, n, 3, heads, hd], 1.0, &dev);
        let by_part = qkv.permute((2, 0, 3, 1, 4)).unwrap();
        let q = by_part.narrow(0, 0, 1).unwrap().squeeze(0).unwrap();
        assert!(!q.is_contiguous(), "the kernel must read the strides");
        let rh = random(&[side, side, hd], 0.5, &dev);
        let rw = random(&[side, side, hd], 0.5, &dev);
        let (got_h, got_w) = rel_pos_terms(&q, &rh, &rw, side, side)
            .unwrap()
            .expect("bf16 on CUDA at head dim 64");

        // rel_h[.., (qh, qw), kh] = q[.., (qh, qw)] · Rh[qh, kh]: a matmul per query row qh.
        let qc = f32_cpu(&q).reshape((b * heads, side, side, hd)).unwrap();
        let (rhc, rwc) = (f32_cpu(&rh), f32_cpu(&rw));
        let by_row = qc.transpose(0, 1).unwrap().contiguous().unwrap(); // (qh, B·heads, qw, hd)
        let expected_h = by_row
            .matmul(
                &rhc.unsqueeze(1)
                    .unwrap()
                    .t()
                    .unwrap()
                    .broadcast_as((side, b * heads, hd, side))
                    .unwrap()
                    .contiguous()
                    .unwrap(),
            )
            .unwrap()
            .transpose(0, 1)
            .unwrap()
            .reshape((b, heads, n, side))
            .unwrap();
        let by_col = qc.permute((2, 0, 1, 3)).unwrap().contiguous().unwrap(); // (qw, B·heads, qh, hd)
        let expected_w = by_col
            .matmul(
                &rwc.unsqueeze(1)
                    .unwrap()
                    .t()
                    .unwrap()
                    .broadcast_as((side, b * heads, hd, side))
                    .unwrap()
                    .contiguous()
                    .unwrap(),
            )
            .unwrap()
            .permute((1, 2, 0, 3))
            .unwrap()
            .reshape((b, heads, n, side))
            .unwrap();
        assert!(
            relative_error(&got_h, &expected_h) < 1e-2,
            "q·Rh at side {side}"
        );
        assert!(
            relative_error(&got_w, &expected_w) < 1e-2,
            "q·Rw at side {side}"
        );
    }
}

#[test]
fn row_kernels_match_rms_norm_and_swiglu_for_many_rows() {
    let dev = gpu();
    let (rows, h, inter) = (1728, 896, 4864);
    let x = random(&[6, rows / 6, h], 3.0, &dev);
    let weight = random(&[h], 1.0, &dev);
    let got = rms_norm(&x, &weight, 1e-6).unwrap().expect("bf16 on CUDA");
    let xc = f32_cpu(&x);
    let inv = (xc.sqr().unwrap().mean_keepdim(D::Minus1).unwrap() + 1e-6)
        .unwrap()
        .sqrt()
        .unwrap()
        .recip()
        .unwrap();
    let expected = xc
        .broadcast_mul(&inv)
        .unwrap()
        .broadcast_mul(&f32_cpu(&weight))
        .unwrap();
    assert!(relative_error(&got, &expected) < 1e-2);

    let gate_up = random(&[rows, 2 * inter], 2.0, &dev);
    let got = silu_mul(&gate_up).unwrap().expect("bf16 on CUDA");
    let gu = f32_cpu(&gate_up);
    let (gate, up) = (
        gu.narrow(1, 0, inter).unwrap(),
        gu.narrow(1, inter, inter).unwrap(),
    );
    let expected = (candle_nn::ops::silu(&gate).unwrap() * up).unwrap();
    assert!(relative_error(&got, &expected) < 1e-2);
}

#[test]
fn rotary_heads_read_in_place_equal_candles_rope_of_the_copied_heads() {
    let dev = gpu();
    // The encoder's shapes (14 query heads, 2 key/value heads of 64, two tiles sharing positions 0..288) and
    // the LM prompt's (10 heads of 128, each row at its own positions).
    let encoder = (2, 288, 14, 2, 64, false);
    let lm = (2, 256, 10, 10, 128, true);
    for (b, t, nh, nkv, hd, per_row) in [encoder, lm] {
        let width = (nh + 2 * nkv) * hd;
        let qkv = random(&[b, t, width], 2.0, &dev);
        let rotary = Rotary::new(10_000.0, hd, &dev, DType::BF16);
        let rows: Vec<Vec<usize>> = match per_row {
            true => (0..b).map(|r| (300 * r..300 * r + t).collect()).collect(),
            false => vec![(0..t).collect()],
        };
        let (cos, sin) = rotary.cos_sin(&rows).unwrap();
        let (cos, sin) = match per_row {
            true => (cos, sin),
            false => (cos.squeeze(0).unwrap(), sin.squeeze(0).unwrap()),
        };
        for (first, heads) in [(0, nh), (nh, nkv)] {
            let got = rope_heads(&qkv, first * hd, heads, hd, &cos, &sin)
                .unwrap()
                .expect("bf16 on CUDA");
            let copied = qkv
                .reshape((b, t, nh + 2 * nkv, hd))
                .unwrap()
                .narrow(2, first, heads)
                .unwrap()
                .transpose(1, 2)
                .unwrap()
                .contiguous()
                .unwrap();
            let want = candle_nn::rotary_emb::rope(&copied, &cos, &sin).unwrap();
            assert_eq!(got.dims(), want.dims());
            let (got, want) = (f32_cpu(&got), f32_cpu(&want));
            assert_eq!(
                differing(&got, &want),
                0,
                "{hd}-wide heads from {first}: bit for bit"
            );
            let moved = (f32_cpu(&copied) - &got).unwrap().abs().unwrap();
            let moved = moved.max_all().unwrap().to_scalar::<f32>().unwrap();
            assert!(moved > 0.1, "rotated at all");
        }
    }
}

#[test]
fn layer_norms_match_the_f32_computation_at_sams_widths() {
    let dev = gpu();
    // SAM's blocks (768 channels) and its neck (256); a row count that leaves the last block part-empty.
    for (rows, cols) in [(4 * 4096 + 3, 768), (64 * 64 + 5, 256)] {
        // Rows whose mean is far from zero: the variance is taken about the mean.
        let x = (random(&[rows, cols], 1.0, &dev)
            .to_dtype(DType::F32)
            .unwrap()
            + 20.0)
            .unwrap()
            .to_dtype(DType::BF16)
            .unwrap();
        let weight = random(&[cols], 1.0, &dev);
        let bias = random(&[cols], 1.0, &dev);
        let got = layer_norm(&x, &weight, &bias, 1e-6)
            .unwrap()
            .expect("bf16 on CUDA");
        let xc = f32_cpu(&x);
        let centred = xc
            .broadcast_sub(&xc.mean_keepdim(D::Minus1).unwrap())
            .unwrap();
        let inv = (centred.sqr().unwrap().mean_keepdim(D::Minus1).unwrap() + 1e-6)
            .unwrap()
            .sqrt()
            .unwrap()
            .recip()
            .unwrap();
        let expected = centred
            .broadcast_mul(&inv)
            .unwrap()
            .broadcast_mul(&f32_cpu(&weight))
            .unwrap()
            .broadcast_add(&f32_cpu(&bias))
            .unwrap();
        assert!(relative_error(&got, &expected) < 1e-2, "{cols} wide");
    }
}

#[test]
fn pixel_bytes_take_the_values_their_f32_upload_gave() {
    let dev = gpu();
    // Every byte, 0 and 255 among them, in two views of a tile's side.
    let bytes: Vec<u8> = (0..2 * 3 * 768 * 768)
        .map(|i| (i * 37 % 256) as u8)
        .collect();
    for dtype in [DType::F32, DType::BF16] {
        let views = PixelValues::new(&dev, dtype)
            .unwrap()
            .views(&bytes, 2, 768)
            .unwrap();
        let values: Vec<f32> = bytes.iter().map(|&b| normalise(b)).collect();
        let uploaded = Tensor::from_vec(values, (2, 3, 768, 768), &dev)
            .unwrap()
            .to_dtype(dtype)
            .unwrap();
        assert_eq!(differing(&views, &uploaded), 0, "{dtype:?}");
    }
}
