//! The decode step's batch-invariant linear layers on tensor cores (linear_tiles.cuh), on the GPU in bf16: each
//! row's output is the same, bit for bit, whatever rows are multiplied beside it, and whether its input norm
//! runs inside the tiles or before them; it stays within bf16 rounding of the product written out in f32 on
//! the CPU; and over int8 rows it equals the same kernel over the weights dequantized. Shapes with a partial
//! tile of rows, a second block of 64 rows, and weight rows that do not fill the last block.
#![cfg(feature = "cuda")]

use candle_core::quantized::{GgmlDType, QTensor};
use candle_core::{DType, Device, Tensor};
use deepread_engine::kernels::{Kernels, Weight};
use deepread_engine::lm::Sums;
use deepread_engine::quant::Int8Matrix;

#[path = "support/gap.rs"]
mod gap;

const K: usize = 1280;
const N: usize = 200;
const ROWS: usize = 70;

fn gpu() -> Device {
    deepread_engine::engine_gpu(0).expect("these tests need a CUDA GPU")
}

fn kernels(device: &Device) -> Kernels {
    Kernels::new(device, DType::BF16)
        .unwrap()
        .expect("bf16 kernels on CUDA")
}

fn random_bf16(shape: (usize, usize), scale: f64, device: &Device) -> Tensor {
    (Tensor::randn(0f32, 1.0, shape, device).unwrap() * scale)
        .unwrap()
        .to_dtype(DType::BF16)
        .unwrap()
}

fn rows_f32(t: &Tensor) -> Vec<Vec<f32>> {
    t.to_dtype(DType::F32).unwrap().to_vec2::<f32>().unwrap()
}

/// `product` of all ROWS rows of `x`, after asserting that each stretch (first row, rows) of them gets, row for
/// row, what it gets among all.
fn alike_alone_and_together(
    product: impl Fn(&Tensor) -> Vec<Vec<f32>>,
    x: &Tensor,
    stretches: &[(usize, usize)],
) -> Vec<Vec<f32>> {
    let together = product(x);
    assert_eq!(together.len(), ROWS);
    for &(first, len) in stretches {
        let alone = product(&x.narrow(0, first, len).unwrap());
        for (i, row) in alone.iter().enumerate() {
            assert_eq!(
                row,
                &together[first + i],
                "row {} among {len} differs from it among {ROWS}",
                first + i
            );
        }
    }
    together
}

/// Up to 8 rows run the `_few_` kernels (each warp's weights requested five K blocks ahead), more the others;
/// a K of 6,848 (the dense MLP's down) gives a warp 27 K blocks, several rounds of the few kernels' five.
#[test]
fn a_row_gets_the_same_sums_whatever_rows_run_beside_it() {
    for k in [K, 6848] {
        row_alike_alone_and_together(k);
    }
}

fn row_alike_alone_and_together(k: usize) {
    let device = gpu();
    let kernels = kernels(&device);
    let x = random_bf16((ROWS, k), 1.0, &device);
    let w = random_bf16((N, k), 0.05, &device);
    let linear = |x: &Tensor| {
        rows_f32(
            &kernels
                .linear(x, Weight::Dense(&w), Sums::BatchInvariant)
                .unwrap(),
        )
    };
    let stretches = [(0, 1), (9, 1), (69, 1), (0, 8), (3, 20), (60, 10)];
    let together = alike_alone_and_together(linear, &x, &stretches);

    // Within bf16 rounding of the product in f32.
    let cpu = gap::f32_on_cpu;
    let want = rows_f32(&cpu(&x).matmul(&cpu(&w).t().unwrap()).unwrap());
    let (worst, scale) = gap::largest_gap(&together, &want);
    assert!(scale > 0.5, "the product is not trivially small: {scale}");
    assert!(
        worst / scale < 1e-2,
        "{worst} off an f32 product whose largest value is {scale}"
    );
}

/// With the input norm: one or two rows are normalised inside the tiles' blocks, more by the norm's own launch
/// first; a row gets the same sums either way.
#[test]
fn a_normed_row_gets_the_same_sums_normalised_in_the_tiles_or_before_them() {
    let device = gpu();
    let kernels = kernels(&device);
    let x = random_bf16((ROWS, K), 1.0, &device);
    let w = random_bf16((N, K), 0.05, &device);
    let norm = (random_bf16((1, K), 0.5, &device).squeeze(0).unwrap() + 1.0).unwrap();
    let norm_linear = |x: &Tensor| {
        let out = kernels.norm_linear(x, &norm, 1e-6, Weight::Dense(&w), Sums::BatchInvariant);
        rows_f32(&out.unwrap())
    };
    // One or two rows are normed in the tiles, all of them by the norm's own launch.
    let together = alike_alone_and_together(norm_linear, &x, &[(0, 1), (41, 1), (68, 2)]);
    assert!(
        together.iter().flatten().any(|v| v.abs() > 0.1),
        "the product is not all zeros"
    );
}

#[test]
fn int8_rows_give_the_sums_of_their_weights_dequantized() {
    let device = gpu();
    let kernels = kernels(&device);
    let w = (Tensor::randn(0f32, 1.0, (N, K), &Device::Cpu).unwrap() * 0.05).unwrap();
    let q = QTensor::quantize(&w, GgmlDType::Q8_0).unwrap();
    let int8 = Int8Matrix::from_q8_0(&[&q], &device).unwrap();
    let dequantized = int8.dequantize(DType::BF16).unwrap();
    let all = random_bf16((ROWS, K), 1.0, &device);
    // 70 rows, and 3 (the few-row kernels).
    for x in [all.clone(), all.narrow(0, 0, 3).unwrap()] {
        let run = |weight: Weight<'_>| {
            rows_f32(&kernels.linear(&x, weight, Sums::BatchInvariant).unwrap())
        };
        let (from_int8, from_dense) = (run(Weight::Int8(&int8)), run(Weight::Dense(&dequantized)));
        let differ = from_int8
            .iter()
            .zip(&from_dense)
            .filter(|(a, b)| a != b)
            .count();
        assert_eq!(
            differ,
            0,
            "{} rows: rows whose int8 sums differ from the dequantized weights'",
            x.dim(0).unwrap()
        );
        assert!(
            from_int8.iter().flatten().any(|v| v.abs() > 0.1),
            "the product is not all zeros"
        );
    }
}
