//! The routed experts' grouped GEMMs (moe_prefill.cu) on the GPU: over int8 rows they give, bit for bit, what
//! the bf16 GEMMs give over the same weights dequantized, and both stay within bf16 rounding of the SwiGLU
//! experts written out in f32 on the CPU. A decode step's experts, on the expert tiles (expert_tiles.cuh) for a
//! few rows and on the grouped GEMMs' decode kernels for more, give a slot the same sums at every batch size,
//! over int8 rows those of the weights dequantized, within bf16 rounding of f32; the plan a decode step's router
//! makes groups the slots as moe_plan does. Shapes where an expert gets no slots, several row tiles, a last
//! column block only partly inside H, and K of several 64-wide blocks for each of the decode order's four
//! chains (moe_prefill.cu's Quarters).
#![cfg(feature = "cuda")]

use candle_core::quantized::{GgmlDType, QTensor};
use candle_core::{DType, Device, Tensor};
use deepread_engine::kernels::{Kernels, Mlp, Routed, Router};
use deepread_engine::lm::Sums;
use deepread_engine::quant::Int8Matrix;

#[path = "support/gap.rs"]
mod gap;

const EXPERTS: usize = 8;
const TOP_K: usize = 4;
/// 9 and 5 blocks of 64: the decode order's first chain takes 3 and 2 of them, its last 2 and 1.
const HIDDEN: usize = 576;
const INTER: usize = 320;
/// Wider than the routed experts, as the model's are (1,792 against 896): gate/up's grid spans it.
const SHARED_INTER: usize = 448;

fn gpu() -> Device {
    deepread_engine::engine_gpu(0).expect("these tests need a CUDA GPU")
}

fn bf16_kernels(device: &Device) -> Kernels {
    Kernels::new(device, DType::BF16)
        .unwrap()
        .expect("bf16 kernels on CUDA")
}

/// A random (rows, cols) matrix in Q8_0 blocks.
fn random_q8_0(rows: usize, cols: usize) -> QTensor {
    let w = (Tensor::randn(0f32, 1.0, (rows, cols), &Device::Cpu).unwrap() * 0.05).unwrap();
    QTensor::quantize(&w, GgmlDType::Q8_0).unwrap()
}

/// A stack of `EXPERTS` random (rows, cols) matrices as int8 rows on `device`.
fn int8_stack(rows: usize, cols: usize, device: &Device) -> Int8Matrix {
    let blocks: Vec<QTensor> = (0..EXPERTS).map(|_| random_q8_0(rows, cols)).collect();
    Int8Matrix::from_q8_0(&blocks.iter().collect::<Vec<_>>(), device).unwrap()
}

/// One random (rows, cols) matrix as int8 rows on `device`.
fn int8_matrix(rows: usize, cols: usize, device: &Device) -> Int8Matrix {
    Int8Matrix::from_q8_0(&[&random_q8_0(rows, cols)], device).unwrap()
}

/// `tokens` random rows of activations (standard normal, bf16) on `device`.
fn activations(tokens: usize, device: &Device) -> Tensor {
    Tensor::randn(0f32, 1.0, (tokens, HIDDEN), device)
        .unwrap()
        .to_dtype(DType::BF16)
        .unwrap()
}

/// Random bf16 weights of `dims` on `device`, of the int8 matrices' scale.
fn bf16_weights(dims: &[usize], device: &Device) -> Tensor {
    (Tensor::randn(0f32, 1.0, dims, device).unwrap() * 0.05)
        .unwrap()
        .to_dtype(DType::BF16)
        .unwrap()
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

/// down · (silu(gate · row) ⊙ up · row) in f32 on the CPU, for one MLP: gate_up (2I, H), down (H, I), row (H, 1).
fn swiglu_in_f32(gate_up: &Tensor, down: &Tensor, row: &Tensor) -> Tensor {
    let inter = gate_up.dim(0).unwrap() / 2;
    let gu = gate_up.matmul(row).unwrap().squeeze(1).unwrap();
    let (g, u) = (
        gu.narrow(0, 0, inter).unwrap(),
        gu.narrow(0, inter, inter).unwrap(),
    );
    let act = (g.silu().unwrap() * u).unwrap().unsqueeze(1).unwrap();
    down.matmul(&act).unwrap().squeeze(1).unwrap()
}

/// y (slots, H) in f32 on the CPU: weight · the slot's expert on its token, in f32 throughout.
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
            let y = swiglu_in_f32(&gate_up.get(e).unwrap(), &down.get(e).unwrap(), &row);
            (y * w[slot] as f64).unwrap().to_vec1::<f32>().unwrap()
        })
        .collect()
}

/// The shared experts' y (T, H) in f32 on the CPU.
fn shared_in_f32(x: &Tensor, gate_up: &Tensor, down: &Tensor) -> Vec<Vec<f32>> {
    let cpu = gap::f32_on_cpu;
    let (x, gate_up, down) = (cpu(x), cpu(gate_up), cpu(down));
    (0..x.dim(0).unwrap())
        .map(|t| {
            let row = x.get(t).unwrap().unsqueeze(1).unwrap();
            swiglu_in_f32(&gate_up, &down, &row)
                .to_vec1::<f32>()
                .unwrap()
        })
        .collect()
}

/// A tensor's values, flattened, on the host.
fn host<T: candle_core::WithDType>(t: &Tensor) -> Vec<T> {
    t.flatten_all().unwrap().to_vec1::<T>().unwrap()
}

/// The outputs of a MoE layer's experts, routed (slots, H) and shared (T, H), on the host.
struct Outputs {
    routed: Vec<Vec<f32>>,
    shared: Vec<Vec<f32>>,
}

/// A layer's routed and shared experts through `moe_experts` on `x`.
fn run_experts(
    kernels: &Kernels,
    (routed, shared): (Mlp<'_>, Mlp<'_>),
    x: &Tensor,
    (ids, weights): (&Tensor, &Tensor),
    sums: Sums,
) -> Outputs {
    let choice = Routed::chosen(ids.clone(), weights.clone());
    run_chosen(kernels, (routed, shared), x, &choice, sums)
}

/// A layer's routed and shared experts through `moe_experts` on `x`, for the slots `choice` gives.
fn run_chosen(
    kernels: &Kernels,
    (routed, shared): (Mlp<'_>, Mlp<'_>),
    x: &Tensor,
    choice: &Routed,
    sums: Sums,
) -> Outputs {
    let (y, shared) = kernels
        .moe_experts(x, routed, Some(shared), choice, sums)
        .unwrap();
    Outputs {
        routed: y.to_vec2::<f32>().unwrap(),
        shared: shared
            .expect("the shared experts' output")
            .to_vec2::<f32>()
            .unwrap(),
    }
}

/// Rows that differ between two tables, bit for bit.
fn rows_that_differ(a: &[Vec<f32>], b: &[Vec<f32>]) -> usize {
    assert_eq!(a.len(), b.len(), "tables of one shape");
    a.iter().zip(b).filter(|(a, b)| a != b).count()
}

/// Whether two tables hold the same values, bit for bit (a NaN never equals itself), `a` not nothing.
fn same_sums(a: &[Vec<f32>], b: &[Vec<f32>]) -> bool {
    let scale = a.iter().flatten().fold(0f32, |m, v| m.max(v.abs()));
    assert!(scale > 1e-2, "the experts give something: {scale}");
    rows_that_differ(a, b) == 0
}

/// The largest gap to the f32 arithmetic, relative to its largest value, which must not be nothing.
fn relative_gap(got: &[Vec<f32>], want: &[Vec<f32>]) -> f32 {
    let (worst, scale) = gap::largest_gap(got, want);
    assert!(scale > 1e-2, "the experts give something: {scale}");
    worst / scale
}

/// A MoE layer's weights as int8 rows: routed gate/up and down stacks, then the shared experts' pair.
fn int8_layer(device: &Device) -> [Int8Matrix; 4] {
    [
        int8_stack(2 * INTER, HIDDEN, device),
        int8_stack(HIDDEN, INTER, device),
        int8_matrix(2 * SHARED_INTER, HIDDEN, device),
        int8_matrix(HIDDEN, SHARED_INTER, device),
    ]
}

/// The routed and the shared experts of a layer of int8 rows.
fn int8_mlps(layer: &[Int8Matrix; 4]) -> (Mlp<'_>, Mlp<'_>) {
    let [gate_up, down, shared_gate_up, shared_down] = layer;
    (
        Mlp::Int8 { gate_up, down },
        Mlp::Int8 {
            gate_up: shared_gate_up,
            down: shared_down,
        },
    )
}

/// A MoE layer's weights in bf16, ordered as int8_layer orders them.
fn dense_layer(device: &Device) -> [Tensor; 4] {
    [
        bf16_weights(&[EXPERTS, 2 * INTER, HIDDEN], device),
        bf16_weights(&[EXPERTS, HIDDEN, INTER], device),
        bf16_weights(&[2 * SHARED_INTER, HIDDEN], device),
        bf16_weights(&[HIDDEN, SHARED_INTER], device),
    ]
}

/// The routed and the shared experts of a layer of dense weights (as int8_layer orders them).
fn dense_mlps(layer: &[Tensor; 4]) -> (Mlp<'_>, Mlp<'_>) {
    let [gate_up, down, shared_gate_up, shared_down] = layer;
    (
        Mlp::Dense { gate_up, down },
        Mlp::Dense {
            gate_up: shared_gate_up,
            down: shared_down,
        },
    )
}

/// Over int8 rows the experts give, bit for bit, what they give over the same weights dequantized (the rows
/// become bf16 as dequantize_int8 rounds them), and both stay within bf16 rounding of the SwiGLU experts in
/// f32 on the CPU, routed and shared: a step of `tokens` summed as `sums` asks.
fn int8_gives_the_dequantized_sums(
    kernels: &Kernels,
    int8: &[Int8Matrix; 4],
    tokens: usize,
    sums: Sums,
) {
    let device = gpu();
    let dense = int8.each_ref().map(|m| m.dequantize(DType::BF16).unwrap());
    let x = activations(tokens, &device);
    let (ids, weights) = routing(tokens, &device);
    let run = |mlps| run_experts(kernels, mlps, &x, (&ids, &weights), sums);
    let (from_int8, from_dense) = (run(int8_mlps(int8)), run(dense_mlps(&dense)));
    assert_eq!(from_int8.routed.len(), tokens * TOP_K);
    assert_eq!(from_int8.shared.len(), tokens);
    assert!(
        same_sums(&from_int8.routed, &from_dense.routed),
        "{tokens} tokens: slots whose int8 sums differ from the dequantized weights'"
    );
    assert!(
        same_sums(&from_int8.shared, &from_dense.shared),
        "{tokens} tokens: the shared experts' int8 sums differ from the dequantized weights'"
    );
    let want = experts_in_f32(&x, &dense[0], &dense[1], &ids, &weights);
    let gap = relative_gap(&from_int8.routed, &want);
    assert!(gap < 2e-2, "{tokens} tokens: routed {gap} off f32");
    let want = shared_in_f32(&x, &dense[2], &dense[3]);
    let gap = relative_gap(&from_int8.shared, &want);
    assert!(gap < 2e-2, "{tokens} tokens: shared {gap} off f32");
}

#[test]
fn int8_grouped_experts_give_the_sums_of_their_weights_dequantized() {
    let device = gpu();
    let kernels = bf16_kernels(&device);
    let int8 = int8_layer(&device);
    // 5 and 16 tokens: the narrow tiles (up to 8 slots an expert on average), the shared experts beside the
    // routed ones; 75 tokens: 300 slots, under a wide row tile per expert; 700: 2,800, several tiles for most
    // experts. Past 256 slots the fastest path runs the shared experts on their own.
    for tokens in [5, 16, 75, 700] {
        int8_gives_the_dequantized_sums(&kernels, &int8, tokens, Sums::Fastest);
    }
}

/// A decode step's experts (`Sums::BatchInvariant`) run on the expert tiles up to 4 rows and on the grouped
/// GEMMs' decode kernels past them, and `Sums::BatchInvariant` needs a slot to get the same sums whatever runs
/// beside it: alone as among 700 tokens, over bf16 weights and over int8 rows, and so the shared experts.
/// Tokens 40.. read on their own, 1, 2 and 4 (the expert tiles), 5 and 8 (the decode kernels, a row tile per
/// expert), then 9 and 16 (several row tiles for an expert), against the same tokens among 700 (2,800 slots,
/// hundreds of row tiles).
#[test]
fn a_decode_step_gives_a_slot_the_same_sums_at_every_batch_size() {
    let device = gpu();
    let kernels = bf16_kernels(&device);
    let dense = dense_layer(&device);
    let int8 = int8_layer(&device);
    let weights_of = [("bf16", dense_mlps(&dense)), ("int8", int8_mlps(&int8))];
    let tokens = 700;
    let x = activations(tokens, &device);
    let (ids, weights) = routing(tokens, &device);
    for (name, mlps) in weights_of {
        let run = |x: &Tensor, ids: &Tensor, weights: &Tensor| {
            run_experts(&kernels, mlps, x, (ids, weights), Sums::BatchInvariant)
        };
        let among_all = run(&x, &ids, &weights);
        let first = 40;
        for few in [1, 2, 4, 5, 8, 9, 16] {
            let part = |t: &Tensor| t.narrow(0, first, few).unwrap().contiguous().unwrap();
            let alone = run(&part(&x), &part(&ids), &part(&weights));
            assert_eq!(alone.routed.len(), few * TOP_K);
            let slots = first * TOP_K..(first + few) * TOP_K;
            assert!(
                same_sums(&alone.routed, &among_all.routed[slots]),
                "{name}, {few} tokens: slots whose sums differ from the same slots among {tokens} tokens"
            );
            assert!(
                same_sums(&alone.shared, &among_all.shared[first..first + few]),
                "{name}, {few} tokens: shared experts' sums differ from the same tokens among {tokens}"
            );
        }
    }
}

/// A decode step's experts over int8 rows give the sums of their weights dequantized (see
/// int8_gives_the_dequantized_sums): at a step of 3 tokens (the expert tiles) and of 40 (the decode kernels).
#[test]
fn a_decode_steps_experts_give_their_sums() {
    let device = gpu();
    let kernels = bf16_kernels(&device);
    let int8 = int8_layer(&device);
    for tokens in [3, 40] {
        int8_gives_the_dequantized_sums(&kernels, &int8, tokens, Sums::BatchInvariant);
    }
}

/// A decode step's router groups its rows' slots by expert itself (route_experts' last block): each expert's
/// slots in the plan are those whose id is that expert, and the experts give the sums they give from
/// moe_plan's launch. 1, 5 and 8 rows (the most it plans for), one launch after another, so the counters the
/// last block resets are seen reset; 9 rows are left to moe_plan.
#[test]
fn the_routers_plan_groups_the_slots_as_moe_plan_does() {
    let device = gpu();
    let kernels = bf16_kernels(&device);
    let dense = dense_layer(&device);
    let gate = Tensor::randn(0f32, 1.0, (EXPERTS, HIDDEN), &device).unwrap();
    let router = Router {
        gate: &gate,
        top_k: TOP_K,
        scaling: 1.0,
        norm_topk: true,
    };
    let nine = kernels
        .route_experts(&activations(9, &device), None, &router)
        .unwrap();
    assert!(nine.plan.is_none(), "9 rows are planned by moe_plan");
    for tokens in [1, 5, 8] {
        let x = activations(tokens, &device);
        let routed = kernels.route_experts(&x, None, &router).unwrap();
        let plan = routed
            .plan
            .as_ref()
            .expect("a decode step's rows are planned");
        let ids: Vec<u32> = host::<u32>(&routed.ids);
        let (offsets, order) = (host::<u32>(&plan.offsets), host::<u32>(&plan.order));
        assert_eq!(offsets.len(), EXPERTS + 1);
        assert_eq!(offsets[EXPERTS] as usize, tokens * TOP_K, "{tokens} tokens");
        for e in 0..EXPERTS {
            let mut planned = order[offsets[e] as usize..offsets[e + 1] as usize].to_vec();
            planned.sort();
            let chose: Vec<u32> = (0..ids.len() as u32)
                .filter(|&s| ids[s as usize] == e as u32)
                .collect();
            assert_eq!(planned, chose, "{tokens} tokens: expert {e}'s slots");
        }
        let unplanned = Routed::chosen(routed.ids.clone(), routed.weights.clone());
        let run = |choice: &Routed| {
            run_chosen(
                &kernels,
                dense_mlps(&dense),
                &x,
                choice,
                Sums::BatchInvariant,
            )
        };
        let (with_plan, without) = (run(&routed), run(&unplanned));
        assert!(with_plan.routed.iter().flatten().any(|v| v.abs() > 1e-3));
        assert_eq!(with_plan.routed, without.routed, "{tokens} tokens: routed");
        assert_eq!(with_plan.shared, without.shared, "{tokens} tokens: shared");
    }
}

/// The model's router: 64 experts, 6 chosen a row.
const MODEL_EXPERTS: usize = 64;
const MODEL_TOP_K: usize = 6;

/// Row r's router logits: distinct values below zero, five experts far above them and a three-way tie for
/// the sixth place, spread over both 32-expert chunks of a warp's scan; each row shifts the indices.
fn designed_logits(row: usize) -> Vec<f32> {
    let mut logits: Vec<f32> = (0..MODEL_EXPERTS)
        .map(|i| -1.0 - ((i * 37 + row * 11) % MODEL_EXPERTS) as f32 / 32.0)
        .collect();
    let at = |i: usize| (i + row * 5) % MODEL_EXPERTS;
    for (n, i) in [50, 3, 20, 63, 31].into_iter().enumerate() {
        logits[at(i)] = 4.0 - n as f32 * 0.25;
    }
    for i in [45, 12, 38] {
        logits[at(i)] = 2.0;
    }
    logits
}

/// The top k of a row's softmax with ties to the lower index, in index order, with their weights
/// renormalised over the k, in f32 on the CPU.
fn top_k_of(logits: &[f32], k: usize) -> (Vec<u32>, Vec<f32>) {
    let max = logits.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let exp: Vec<f32> = logits.iter().map(|l| (l - max).exp()).collect();
    let sum: f32 = exp.iter().sum();
    let probs: Vec<f32> = exp.iter().map(|v| v / sum).collect();
    let mut ranked: Vec<usize> = (0..logits.len()).collect();
    ranked.sort_by(|&a, &b| probs[b].total_cmp(&probs[a]).then(a.cmp(&b)));
    let total: f32 = ranked[..k].iter().map(|&i| probs[i]).sum();
    let mut chosen = ranked[..k].to_vec();
    chosen.sort();
    let weights = chosen.iter().map(|&i| probs[i] / total).collect();
    (chosen.into_iter().map(|i| i as u32).collect(), weights)
}

/// Row r of the routed rows is one-hot at column r and column r of the gate holds row r's logits, so the
/// router's f32 logits are exactly the designed ones. It must take the same experts as the reference's top-k
/// (the tie for the last place goes to the lowest index), in index order, with their renormalised weights; for
/// the rows it plans (1 and 2), each chosen expert starts at its place in the plan and holds one slot.
#[test]
fn the_router_takes_the_top_k_with_ties_to_the_lower_index() {
    let device = gpu();
    let kernels = bf16_kernels(&device);
    for rows in [1, 2, 9] {
        let designed: Vec<Vec<f32>> = (0..rows).map(designed_logits).collect();
        let mut gate = vec![0f32; MODEL_EXPERTS * HIDDEN];
        let mut x = vec![0f32; rows * HIDDEN];
        for (r, logits) in designed.iter().enumerate() {
            x[r * HIDDEN + r] = 1.0;
            for (e, &l) in logits.iter().enumerate() {
                gate[e * HIDDEN + r] = l;
            }
        }
        let gate = Tensor::from_vec(gate, (MODEL_EXPERTS, HIDDEN), &device).unwrap();
        let x = Tensor::from_vec(x, (rows, HIDDEN), &device)
            .unwrap()
            .to_dtype(DType::BF16)
            .unwrap();
        let router = Router {
            gate: &gate,
            top_k: MODEL_TOP_K,
            scaling: 1.0,
            norm_topk: true,
        };
        let routed = kernels.route_experts(&x, None, &router).unwrap();
        let (ids, weights) = (host::<u32>(&routed.ids), host::<f32>(&routed.weights));
        for (r, logits) in designed.iter().enumerate() {
            let (want_ids, want_weights) = top_k_of(logits, MODEL_TOP_K);
            let row = r * MODEL_TOP_K..(r + 1) * MODEL_TOP_K;
            assert_eq!(
                ids[row.clone()],
                want_ids[..],
                "{rows} rows: row {r}'s experts"
            );
            for (got, want) in weights[row].iter().zip(&want_weights) {
                assert!(
                    (got - want).abs() <= 1e-5 * want,
                    "{rows} rows: row {r}: {got} vs {want}"
                );
            }
        }
        let Some(plan) = routed.plan.as_ref().filter(|_| rows <= 2) else {
            continue;
        };
        let (offsets, order) = (host::<u32>(&plan.offsets), host::<u32>(&plan.order));
        assert_eq!(offsets[MODEL_EXPERTS] as usize, rows * MODEL_TOP_K);
        for (slot, &e) in ids.iter().enumerate().take(MODEL_TOP_K) {
            let e = e as usize;
            if rows == 1 {
                assert_eq!(offsets[e] as usize, slot, "expert {e} starts at its place");
            }
            let planned = &order[offsets[e] as usize..offsets[e + 1] as usize];
            assert!(
                planned.contains(&(slot as u32)),
                "{rows} rows: slot {slot} under expert {e}"
            );
        }
    }
}
