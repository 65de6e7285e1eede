// The MoE layer of a decode step: the router (norm, gate, softmax, top-k), the experts in block columns by
// slot or by expert, and the combine with the residual.

#pragma once

#include "common.cuh"
#include "moe_plan.cuh"
#include "norm.cuh"
#include "weights.cuh"

#define ROUTE_WARPS 8
#define ROUTE_MAX_K 16
#define ROUTE_HELD_CHUNKS 8

// The softmax of row `row`'s router logits and its top k, by one warp (see route_experts).
__device__ void choose_experts(const float* logits, int* ids, float* weights, size_t row, int e, int k, float scaling,
                               int norm_topk) {
    const int lane = threadIdx.x % 32;
    __shared__ float probs[1024];
    float mx = -INFINITY;
    for (int i = lane; i < e; i += 32) {
        probs[i] = __ldcg(logits + row * e + i);
        mx = fmaxf(mx, probs[i]);
    }
    mx = warp_max(mx);
    float sum = 0.0f;
    for (int i = lane; i < e; i += 32) {
        const float v = expf(probs[i] - mx);
        probs[i] = v;
        sum += v;
    }
    sum = warp_sum(sum);
    for (int i = lane; i < e; i += 32) probs[i] = probs[i] / sum;
    __syncwarp();
    int chosen[ROUTE_MAX_K];
    float chosen_p[ROUTE_MAX_K];
    for (int r = 0; r < k; ++r) {
        float best = -1.0f;
        int best_i = e;
        for (int i = lane; i < e; i += 32)
            if (probs[i] > best) { best = probs[i]; best_i = i; }
        for (int o = 16; o > 0; o >>= 1) {
            const float ob = __shfl_xor_sync(0xffffffffu, best, o);
            const int oi = __shfl_xor_sync(0xffffffffu, best_i, o);
            if (ob > best || (ob == best && oi < best_i)) { best = ob; best_i = oi; }
        }
        chosen[r] = best_i;
        chosen_p[r] = best;
        __syncwarp();
        if (lane == 0) probs[best_i] = -2.0f;  // taken: below every probability
        __syncwarp();
    }
    if (lane != 0) return;
    float total = 0.0f;
    for (int r = 0; r < k; ++r) total += chosen_p[r];
    for (int r = 1; r < k; ++r)
        for (int q = r; q > 0 && chosen[q - 1] > chosen[q]; --q) {
            const int ti = chosen[q]; chosen[q] = chosen[q - 1]; chosen[q - 1] = ti;
            const float tp = chosen_p[q]; chosen_p[q] = chosen_p[q - 1]; chosen_p[q - 1] = tp;
        }
    for (int r = 0; r < k; ++r) {
        ids[row * k + r] = chosen[r];
        weights[row * k + r] = (norm_topk ? chosen_p[r] / total : chosen_p[r]) * scaling;
    }
}

// MoE routing. Grid (B, ceil(E / ROUTE_WARPS)), a warp per expert, dynamic shared memory h floats: router
// logits in f32 (x · gateᵀ, gate (E, H) f32) into `logits` (B, E). With `norm_w`, the routed row is first the
// layer's post-attention RMSNorm of x + delta, which column 0 also writes out (`sum_out`, `normed_out`) for
// the experts and the residual. The block that finishes a row last (counted in `done[b]`, reset for the next
// launch) takes the softmax and the top k with ties to the lower index, then sorts them by expert index: the
// reference adds the experts' outputs in index order. Weights are the probabilities (renormalised over the k
// if asked) times `scaling`. With `offsets`, the block that finishes the last row (counted in `rows_done`, reset
// likewise) also groups the B·k slots by expert for the grouped GEMMs (moe_plan.cuh's plan_slots), which saves
// moe_plan its launch; E ≤ ROUTE_WARPS · 32.
template <typename T>
__device__ void route_experts(const T* x, const T* delta, const T* norm_w, float eps, T* sum_out, T* normed_out,
                              const float* gate, float* logits, unsigned* done, int* ids, float* weights, int h,
                              int e, int k, float scaling, int norm_topk, unsigned* rows_done, int* offsets,
                              int* order) {
    extern __shared__ float row_cache[];
    const size_t row = blockIdx.x;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int ex = blockIdx.y * ROUTE_WARPS + warp;
    // The warp's gate row is loaded before the norm, so the two memory waits overlap (its first
    // ROUTE_HELD_CHUNKS · 256 columns are held in registers; the rest, if any, is read after).
    float held[ROUTE_HELD_CHUNKS][8];
#pragma unroll
    for (int t = 0; t < ROUTE_HELD_CHUNKS; ++t) {
        const int c = lane * 8 + t * 256;
        if (ex < e && c < h) load8(gate + (size_t)ex * h + c, held[t]);
    }
    // The gate needs no earlier kernel, so its rows are on their way before the wait for the kernel ahead.
    follow_previous_kernel();
    if (norm_w) {
        const bool writer = blockIdx.y == 0;
        normed_row(x, delta, norm_w, writer ? sum_out : (T*)nullptr, writer ? normed_out : (T*)nullptr, row_cache,
                   row, h, eps);
    } else {
        for (int i = threadIdx.x; i < h; i += blockDim.x) row_cache[i] = to_float(x[row * h + i]);
        __syncthreads();
    }
    if (ex < e) {
        float dot = 0.0f;
#pragma unroll
        for (int t = 0; t < ROUTE_HELD_CHUNKS; ++t) {
            const int c = lane * 8 + t * 256;
            if (c < h) {
                float xv[8];
                load8(row_cache + c, xv);
#pragma unroll
                for (int q = 0; q < 8; ++q) dot += xv[q] * held[t][q];
            }
        }
        for (int c = lane * 8 + ROUTE_HELD_CHUNKS * 256; c < h; c += 256) {
            float xv[8], gv[8];
            load8(row_cache + c, xv);
            load8(gate + (size_t)ex * h + c, gv);
#pragma unroll
            for (int q = 0; q < 8; ++q) dot += xv[q] * gv[q];
        }
        dot = warp_sum(dot);
        if (lane == 0) logits[row * e + ex] = dot;
    }
    if (!last_to_arrive(&done[row], gridDim.y)) return;
    if (warp == 0) choose_experts(logits, ids, weights, row, e, k, scaling, norm_topk);
    // One row's block is the last of the rows without counting them.
    if (offsets && (gridDim.x == 1 || last_to_arrive(rows_done, gridDim.x)))
        plan_slots(ids, gridDim.x * k, e, offsets, order);
}

// Slots a warp of the MoE kernels takes at once, and the most slots a block gathers by slot and by expert.
#define MOE_GROUP 8
#define MOE_DECODE_SLOTS 256
#define MOE_PREFILL_SLOTS 8192
// Threads of a MoE block (launch.rs's MOE_WARPS · 32). The int8 gate/up kernels are held to 3 blocks an SM:
// at their natural 88 registers 2 fit, and one token's step ran in 6 waves rather than bf16's 4.
#define MOE_THREADS 256

// Asks L2 for the `bytes` bytes from p on, a 128-byte line per lane of the warp: the loads that follow find
// them there. The MoE kernels do this for their weight rows as soon as they know their expert, so that the
// rows come in while the block gathers its slots. It holds no registers: holding the rows themselves cost
// those kernels more occupancy than the overlap gained (20 → 31 µs).
__device__ __forceinline__ void prefetch_l2(const void* p, int bytes) {
    const char* c = static_cast<const char*>(p);
    for (int off = (int)(threadIdx.x % 32) * 128; off < bytes; off += 32 * 128)
        asm volatile("prefetch.global.L2 [%0];" ::"l"(c + off));
}

// The slots (token·k + r) a block of the MoE kernels serves for expert `e`, gathered into shared memory (at
// most MAX_SLOTS; their order does not matter, each slot's output is computed on its own). By slot (decode:
// few slots): column y serves slot y's expert unless an earlier slot has it (count 0). By expert (prefill):
// column y serves expert y.
template <int MAX_SLOTS>
__device__ int column_slots(const int* ids, int n_slots, bool by_slot, int e, int* slots) {
    __shared__ int count;
    const int y = blockIdx.y;
    bool seen = false;
    if (by_slot)
        for (int s = threadIdx.x; s < y; s += blockDim.x) seen |= ids[s] == e;
    if (threadIdx.x == 0) count = 0;
    if (__syncthreads_or(seen)) return 0;
    for (int s = (by_slot ? y : 0) + threadIdx.x; s < n_slots; s += blockDim.x)
        if (ids[s] == e) {
            const int at = atomicAdd(&count, 1);
            if (at < MAX_SLOTS) slots[at] = s;
        }
    __syncthreads();
    return min(count, MAX_SLOTS);
}

// The block's column of the MoE kernels: its slots in shared memory, how many, the expert's weights and the
// output it writes. With shared-expert weights given, the last ceil(tokens / MOE_GROUP) columns serve the
// shared experts, column c on tokens c·MOE_GROUP onwards (slot t = token t, weight rows `shared_rows`); the
// others are routed (see column_slots). `prefetch(weights, rows)` is called with the column's expert as soon
// as it is known, by the columns whose rows no other column reads: the first token's slots (its top k experts
// are distinct) and the first shared column. Where every column asked, the by-slot columns of experts that
// several tokens chose asked for the same rows again, and 16 and 32 rows decoded 4–5 % slower (H200); one
// token decodes 4 % faster with them.
template <typename W>
struct Column {
    int count;
    typename W::Row w;  // the expert's weights
    int rows;           // its intermediate size (gate/up rows, down's reduction)
    int k;              // slot → token divisor
};

template <typename W, int MAX_SLOTS, typename Prefetch>
__device__ Column<W> moe_column(const int* ids, int n_slots, int k, bool by_slot, typename W::Experts w,
                                int expert_rows, int expert_k, int inter, typename W::Row shared_w, int shared_rows,
                                int tokens, int* slots, Prefetch prefetch) {
    const int shared_columns = shared_w ? (tokens + MOE_GROUP - 1) / MOE_GROUP : 0;
    const int c = (int)blockIdx.y - ((int)gridDim.y - shared_columns);
    if (c >= 0) {
        if (c == 0) prefetch(shared_w, shared_rows);
        const int first = c * MOE_GROUP, count = min(MOE_GROUP, tokens - first);
        if ((int)threadIdx.x < count) slots[threadIdx.x] = first + threadIdx.x;
        __syncthreads();
        return {count, shared_w, shared_rows, 1};
    }
    const int e = by_slot ? ids[blockIdx.y] : (int)blockIdx.y;
    const typename W::Row expert_w = W::expert(w, e, expert_rows, expert_k);
    if (by_slot && (int)blockIdx.y < n_slots / max(tokens, 1)) prefetch(expert_w, inter);
    const int count = column_slots<MAX_SLOTS>(ids, n_slots, by_slot, e, slots);
    return {count, expert_w, inter, k};
}

// Experts, first half. Grid (ceil(max(I, shared I) / warps), columns), one warp per intermediate row j of the
// column's expert: its gate row j and up row I + j ((2I, H) per expert) are read once for all the column's
// slots. out[slot, j] = T(T(silu(T(gate))) · T(up)), as silu(gate) * up on T tensors; routed slots write
// `act` (slots, I), the shared column `shared_act` (tokens, shared I).
template <typename T, typename W, int MAX_SLOTS>
__device__ void moe_gate_up(const T* x, typename W::Experts w, const int* ids, T* act, int n_slots, int k, int h,
                            int inter, bool by_slot, typename W::Row shared_w, int shared_inter, T* shared_act,
                            int tokens) {
    __shared__ int slots[MAX_SLOTS];
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int j = blockIdx.x * (blockDim.x / 32) + warp;
    const auto gate_up_rows = [&](typename W::Row ew, int rows) {
        if (j >= rows) return;
        prefetch_l2(W::row(ew, j, h), W::row_bytes(h));
        prefetch_l2(W::row(ew, rows + j, h), W::row_bytes(h));
    };
    const Column<W> col = moe_column<W, MAX_SLOTS>(ids, n_slots, k, by_slot, w, 2 * inter, h, inter, shared_w,
                                                   shared_inter, tokens, slots, gate_up_rows);
    T* out = col.w == shared_w ? shared_act : act;
    if (col.count == 0 || j >= col.rows) return;
    const typename W::Row wg = W::row(col.w, j, h);
    const typename W::Row wu = W::row(col.w, col.rows + j, h);
    for (int g = 0; g < col.count; g += MOE_GROUP) {
        const int n = min(MOE_GROUP, col.count - g);
        float ag[MOE_GROUP] = {0}, au[MOE_GROUP] = {0};
        // The weights stay as loaded until used, 8 at a time: fewer registers, more blocks on an SM.
        constexpr int WIDTH = W::width;
#pragma unroll 4
        for (int c = lane * WIDTH; c < h; c += 32 * WIDTH) {
            typename W::Held hg, hu;
            W::fetch(wg, c, h, hg);
            W::fetch(wu, c, h, hu);
#pragma unroll
            for (int p = 0; p < WIDTH; p += 8) {
                float vg[8], vu[8];
                W::unpack8(hg, p, vg);
                W::unpack8(hu, p, vu);
#pragma unroll
                for (int s = 0; s < MOE_GROUP; ++s) {
                    if (s >= n) break;
                    float xv[8];
                    load8(x + (size_t)(slots[g + s] / col.k) * h + c + p, xv);
#pragma unroll
                    for (int q = 0; q < 8; ++q) { ag[s] += vg[q] * xv[q]; au[s] += vu[q] * xv[q]; }
                }
            }
        }
#pragma unroll
        for (int s = 0; s < MOE_GROUP; ++s) {
            if (s >= n) break;
            const float gs = warp_sum(ag[s]), us = warp_sum(au[s]);
            if (lane == 0) {
                const float gate = round_to<T>(silu(round_to<T>(gs)));
                out[(size_t)slots[g + s] * col.rows + j] = from_float<T>(gate * round_to<T>(us));
            }
        }
    }
}

// Experts, second half. Grid (ceil(H / warps), columns), one warp per output row r of the column's down
// ((H, I) per expert): routed slots write y[slot, r] = f32(T(act[slot] · down[r])) · weight[slot], the shared
// column shared_y[token, r] = f32(T(shared_act[token] · shared_down[r])), both kept in f32 for the combine.
template <typename T, typename W, int MAX_SLOTS>
__device__ void moe_down(const T* act, typename W::Experts w, const int* ids, const float* weights, float* y,
                         int n_slots, int h, int inter, bool by_slot, const T* shared_act, typename W::Row shared_w,
                         int shared_inter, float* shared_y, int tokens) {
    __shared__ int slots[MAX_SLOTS];
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int r = blockIdx.x * (blockDim.x / 32) + warp;
    const auto down_row = [&](typename W::Row ew, int rows) {
        if (r < h) prefetch_l2(W::row(ew, r, rows), W::row_bytes(rows));
    };
    const Column<W> col = moe_column<W, MAX_SLOTS>(ids, n_slots, 1, by_slot, w, h, inter, inter, shared_w,
                                                   shared_inter, tokens, slots, down_row);
    const bool shared = col.w == shared_w;
    const T* in = shared ? shared_act : act;
    if (col.count == 0 || r >= h) return;
    const typename W::Row wd = W::row(col.w, r, col.rows);
    for (int g = 0; g < col.count; g += MOE_GROUP) {
        const int n = min(MOE_GROUP, col.count - g);
        float a[MOE_GROUP] = {0};
        constexpr int WIDTH = W::width;
#pragma unroll 4
        for (int c = lane * WIDTH; c < col.rows; c += 32 * WIDTH) {
            typename W::Held hw;
            W::fetch(wd, c, col.rows, hw);
#pragma unroll
            for (int p = 0; p < WIDTH; p += 8) {
                float vw[8];
                W::unpack8(hw, p, vw);
#pragma unroll
                for (int s = 0; s < MOE_GROUP; ++s) {
                    if (s >= n) break;
                    float av[8];
                    load8(in + (size_t)slots[g + s] * col.rows + c + p, av);
#pragma unroll
                    for (int q = 0; q < 8; ++q) a[s] += vw[q] * av[q];
                }
            }
        }
#pragma unroll
        for (int s = 0; s < MOE_GROUP; ++s) {
            if (s >= n) break;
            const float sum = warp_sum(a[s]);
            if (lane == 0) {
                const int slot = slots[g + s];
                if (shared) shared_y[(size_t)slot * h + r] = round_to<T>(sum);
                else y[(size_t)slot * h + r] = round_to<T>(sum) * weights[slot];
            }
        }
    }
}

// The MoE output and the layer's residual, one row per block: moe = T(Σ_r y[b·k + r]) in slot (= expert
// index) order from zero, ffn = T(moe + shared), x_out = T(x + ffn). `shared` may be null; with `x` null,
// x_out = ffn. Grid (ceil(H / threads), B), an element per thread.
template <typename T>
__device__ void moe_combine(const float* y, const float* shared, const T* x, T* x_out, int k, int h) {
    const size_t row = blockIdx.y;
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= h) return;
    float acc = 0.0f;
    for (int r = 0; r < k; ++r) acc += y[(row * k + r) * h + i];
    float ffn = round_to<T>(acc);
    if (shared) ffn = round_to<T>(ffn + shared[row * h + i]);
    x_out[row * h + i] = x ? from_float<T>(to_float(x[row * h + i]) + ffn) : from_float<T>(ffn);
}
