//! The routed experts' grouped GEMMs (moe_prefill.cu) on the GPU: over int8 rows they give, bit for bit, what
//! the bf16 GEMMs give over the same weights dequantized, and both stay within bf16 rounding of the SwiGLU
//! experts written out in f32 on the CPU; a slot gets the same sums from the narrow tiles of a decode step as
//! from the wide tiles of a prompt. Shapes where an expert gets no slots, several row tiles, and a last column
//! block only partly inside H.
#![cfg(feature = "cuda")]

use candle_core::quantized::{GgmlDType, QTensor};
use candle_core::{DType, Device, Tensor};
use deepread_engine::kernels::{Kernels, Mlp};
use deepread_engine::lm::Sums;
use deepread_engine::quant::Int8Matrix;

#[path = "support/gap.rs"]
mod gap;

const EXPERTS: usize = 8;
const TOP_K: usize = 4;
const HIDDEN: usize = 192;
const INTER: usize = 128;

fn gpu() -> Device {
    deepread_engine::engine_gpu(0).expect("these tests need a CUDA GPU")
}

fn bf16_kernels(device: &Device) -> Kernels {
    Kernels::new(device, DType::BF16)
        .unwrap()
        .expect("bf16 kernels on CUDA")
}

/// A stack of `EXPERTS` random (rows, cols) matrices as int8 rows on `device`.
fn int8_stack(rows: usize, cols: usize, device: &Device) -> Int8Matrix {
    let blocks: Vec<QTensor> = (0..EXPERTS)
        .map(|_| {
            let w = (Tensor::randn(0f32, 1.0, (rows, cols), &Device::Cpu).unwrap() * 0.05).unwrap();
            QTensor::quantize(&w, GgmlDType::Q8_0).unwrap()
        })
        .collect();
    Int8Matrix::from_q8_0(&blocks.iter().collect::<Vec<_>>(), device).unwrap()
}

/// Each token's `TOP_K` distinct experts, spread unevenly, expert 7 never chosen; weights in (0, 1).
fn routing(tokens: usize, device: &Device) -> (Tensor, Tensor) {
    let mut ids = Vec::with_capacity(tokens * TOP_K);
    for t in 0..tokens {
        let first = (t * t + 3 * t) % (EXPERTS - 1);
        ids.extend((0..TOP_K).map(|c| ((first + c * (1 + t % 2)) % (EXPERTS - 1)) as u32));
    }
    for row in ids.chunks(TOP_K) {
        let mut sorted = row.to_vec();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted.len(), TOP_K, "distinct experts per token");
    }
    let weights: Vec<f32> = (0..tokens * TOP_K)
        .map(|s| 0.1 + (s % 7) as f32 * 0.1)
        .collect();
    (
        Tensor::from_vec(ids, (tokens, TOP_K), device).unwrap(),
        Tensor::from_vec(weights, (tokens, TOP_K), device).unwrap(),
    )
}

/// y (slots, H) in f32 on the CPU: weight · down · (silu(gate · x) ⊙ up · x) per slot, in f32 throughout.
fn experts_in_f32(
    x: &Tensor,
    gate_up: &Tensor,
    down: &Tensor,
    ids: &Tensor,
    w: &Tensor,
) -> Vec<Vec<f32>> {
    let cpu = gap::f32_on_cpu;
    let (x, gate_up, down) = (cpu(x), cpu(gate_up), cpu(down));
    let ids = host::<u32>(ids);
    let w = host::<f32>(w);
    (0..ids.len())
        .map(|slot| {
            let e = ids[slot] as usize;
            let row = x.get(slot / TOP_K).unwrap().unsqueeze(1).unwrap();
            let gu = gate_up
                .get(e)
                .unwrap()
                .matmul(&row)
                .unwrap()
                .squeeze(1)
                .unwrap();
            let (g, u) = (
                gu.narrow(0, 0, INTER).unwrap(),
                gu.narrow(0, INTER, INTER).unwrap(),
            );
            let act = (g.silu().unwrap() * u).unwrap().unsqueeze(1).unwrap();
            let y = down
                .get(e)
                .unwrap()
                .matmul(&act)
                .unwrap()
                .squeeze(1)
                .unwrap();
            (y * w[slot] as f64).unwrap().to_vec1::<f32>().unwrap()
        })
        .collect()
}

/// A tensor's values, flattened, on the host.
fn host<T: candle_core::WithDType>(t: &Tensor) -> Vec<T> {
    t.flatten_all().unwrap().to_vec1::<T>().unwrap()
}

#[test]
fn int8_grouped_experts_give_the_sums_of_their_weights_dequantized() {
    let device = gpu();
    let kernels = bf16_kernels(&device);
    let gate_up = int8_stack(2 * INTER, HIDDEN, &device);
    let down = int8_stack(HIDDEN, INTER, &device);
    let (gate_up_bf16, down_bf16) = (
        gate_up.dequantize(DType::BF16).unwrap(),
        down.dequantize(DType::BF16).unwrap(),
    );
    // 5 and 16 tokens: the narrow tiles (up to 8 slots an expert on average); 75 tokens: 300 slots, under a
    // wide row tile per expert; 700: 2,800, several tiles for most experts.
    for tokens in [5, 16, 75, 700] {
        let x = Tensor::randn(0f32, 1.0, (tokens, HIDDEN), &device)
            .unwrap()
            .to_dtype(DType::BF16)
            .unwrap();
        let (ids, weights) = routing(tokens, &device);
        let run = |mlp: Mlp<'_>| {
            let (y, shared) = kernels
                .moe_experts(&x, mlp, None, &ids, &weights, Sums::Fastest)
                .unwrap();
            assert!(shared.is_none());
            y.to_vec2::<f32>().unwrap()
        };
        let int8 = run(Mlp::Int8 {
            gate_up: &gate_up,
            down: &down,
        });
        let dense = run(Mlp::Dense {
            gate_up: &gate_up_bf16,
            down: &down_bf16,
        });
        assert_eq!(int8.len(), tokens * TOP_K);
        let differ = int8.iter().zip(&dense).filter(|(a, b)| a != b).count();
        assert_eq!(
            differ, 0,
            "{tokens} tokens: slots whose int8 sums differ from the dequantized weights'"
        );

        let want = experts_in_f32(&x, &gate_up_bf16, &down_bf16, &ids, &weights);
        let (worst, scale) = gap::largest_gap(&int8, &want);
        assert!(scale > 1e-2, "the experts give something: {scale}");
        assert!(
            worst / scale < 2e-2,
            "{tokens} tokens: {worst} off an f32 product whose largest value is {scale}"
        );
    }
}

/// A step of a few tokens runs the narrow tiles (16 slots × 64 columns, a deeper pipeline), a prompt the wide
/// ones; `Sums::BatchInvariant` needs a slot to get the same sums from either, over bf16 weights and over
/// int8 rows. Tokens 40.. read on their own, 5 then 16 of them (up to several narrow row tiles for an expert),
/// against the same tokens among 700.
#[test]
fn narrow_and_wide_tiles_give_a_slot_the_same_sums() {
    let device = gpu();
    let kernels = bf16_kernels(&device);
    let stack = |rows, cols| {
        (Tensor::randn(0f32, 1.0, (EXPERTS, rows, cols), &device).unwrap() * 0.05)
            .unwrap()
            .to_dtype(DType::BF16)
            .unwrap()
    };
    let (gate_up, down) = (stack(2 * INTER, HIDDEN), stack(HIDDEN, INTER));
    let (gate_up_int8, down_int8) = (
        int8_stack(2 * INTER, HIDDEN, &device),
        int8_stack(HIDDEN, INTER, &device),
    );
    let weights_of = [
        (
            "bf16",
            Mlp::Dense {
                gate_up: &gate_up,
                down: &down,
            },
        ),
        (
            "int8",
            Mlp::Int8 {
                gate_up: &gate_up_int8,
                down: &down_int8,
            },
        ),
    ];
    let tokens = 700;
    let x = Tensor::randn(0f32, 1.0, (tokens, HIDDEN), &device)
        .unwrap()
        .to_dtype(DType::BF16)
        .unwrap();
    let (ids, weights) = routing(tokens, &device);
    for (name, mlp) in weights_of {
        let run = |x: &Tensor, ids: &Tensor, weights: &Tensor| {
            let (y, _) = kernels
                .moe_experts(x, mlp, None, ids, weights, Sums::BatchInvariant)
                .unwrap();
            y.to_vec2::<f32>().unwrap()
        };
        let among_all = run(&x, &ids, &weights);
        let first = 40;
        for few in [5, 16] {
            let part = |t: &Tensor| t.narrow(0, first, few).unwrap().contiguous().unwrap();
            let alone = run(&part(&x), &part(&ids), &part(&weights));
            assert_eq!(alone.len(), few * TOP_K);
            let scale = alone.iter().flatten().fold(0f32, |m, v| m.max(v.abs()));
            assert!(scale > 1e-2, "{name}: the experts give something: {scale}");
            let differ = (0..few * TOP_K)
                .filter(|&s| alone[s] != among_all[first * TOP_K + s])
                .count();
            assert_eq!(
                differ, 0,
                "{name}, {few} tokens: slots whose sums differ from the same slots among {tokens} tokens"
            );
        }
    }
}
