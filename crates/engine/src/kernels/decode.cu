// The language model's decode step as a handful of fused kernels (one token per sequence, B sequences).
//
// Every kernel rounds to the activation type T exactly where the reference implementation does (a bf16
// matmul output, a bf16 residual add, RMSNorm's cast before its weight), so the fast path differs from the
// straightforward one only in the order of f32 sums. Each is instantiated for float and bf16.
//
// Key/value caches are per sequence: `k_cache[b]` / `v_cache[b]` point at that sequence's (kv_heads, cap[b],
// head_dim) buffer of the layer, and `pos[b]` is where this step's key/value goes (its length before the step).

#include <limits.h>

#include "attention.cuh"
#include "common.cuh"
#include "expert_tiles.cuh"
#include "linear_tiles.cuh"
#include "moe_decode.cuh"
#include "norm.cuh"
#include "qkv_rope.cuh"
#include "weights.cuh"

// The embedding rows of the fed-back tokens: out[b] = table[tokens[b]], one row per block.
template <typename T>
__device__ void embed_rows(const T* table, const int* tokens, T* out, int h) {
    const size_t row = blockIdx.x;
    const T* src = table + (size_t)tokens[row] * h;
    for (int i = threadIdx.x; i < h; i += blockDim.x) out[row * h + i] = src[i];
}

// Rotate-half RoPE of the fused QKV row and the cache write. Grid (B, nh + 2·nkv): q heads go to `q_out`
// (B, nh, hd), k heads (rotated) and v heads to the caches at pos[b]. Same arithmetic as the rope of the
// straightforward path (qkv_rope.cuh's rotate_first and rotate_second). The bf16 tiles do this inside the
// projection (RopeOut); this serves f32 and the paths that do not take the tiles.
template <typename T>
__device__ void rope_kv_write(const T* qkv, const T* cos, const T* sin, const uint64_t* k_cache,
                              const uint64_t* v_cache, const int* pos, const int* cap, T* q_out,
                              int nh, int nkv, int hd) {
    const int row = blockIdx.x, head = blockIdx.y, half = hd / 2;
    const T* src = qkv + ((size_t)row * (nh + 2 * nkv) + head) * hd;
    const T* c = cos + (size_t)row * half;
    const T* s = sin + (size_t)row * half;
    T* dst = head_destination(head, row, q_out, k_cache, v_cache, pos, cap, nh, nkv, hd);
    for (int i = threadIdx.x; i < half; i += blockDim.x) {
        const T x1 = src[i], x2 = src[i + half];
        if (head < nh + nkv) {
            dst[i] = rotate_first(x1, x2, c[i], s[i]);
            dst[i + half] = rotate_second(x1, x2, c[i], s[i]);
        } else {
            dst[i] = x1;
            dst[i + half] = x2;
        }
    }
}

// A linear layer for the rows of a decode step: out (B, N) = T(x · Wᵀ), W (N, K) row-major. Grid
// (ceil(B / LINEAR_MAX_ROWS), ceil(N / warps)), one warp per output row n for a chunk of up to LINEAR_MAX_ROWS
// rows of x: each weight row is read once a chunk, in 16-byte loads kept in flight by the unrolled loop, and
// the chunks of one weight row run side by side, so that the later ones find it in L2. Each output is the same
// sum in the same order whatever B, so a row's result does not depend on the rows beside it. With `norm_w`, x
// is first RMSNorm-ed (each block normalises its rows itself into dynamic shared memory, rows·K floats), which
// saves the norm its own launch.
#define LINEAR_MAX_ROWS 16
#define LINEAR_HELD_WEIGHTS 1280
template <int WIDTH, typename T>
__device__ __forceinline__ void add_row_products(const T* x, const float* normed, int rows, int k, int c,
                                                 const float vw[WIDTH], float acc[LINEAR_MAX_ROWS]) {
#pragma unroll
    for (int b = 0; b < LINEAR_MAX_ROWS; ++b) {
        if (b >= rows) break;
        float xv[WIDTH];
        if (normed) load_wide<WIDTH>(normed + b * k + c, xv);
        else load_wide<WIDTH>(x + (size_t)b * k + c, xv);
#pragma unroll
        for (int q = 0; q < WIDTH; ++q) acc[b] += vw[q] * xv[q];
    }
}

template <typename T, typename W>
__device__ void linear_rows(const T* x, const T* norm_w, float eps, typename W::Row w, T* out, int rows, int n,
                            int k) {
    extern __shared__ float normed[];
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int r = blockIdx.y * (blockDim.x / 32) + warp;
    x += (size_t)blockIdx.x * LINEAR_MAX_ROWS * k;
    out += (size_t)blockIdx.x * LINEAR_MAX_ROWS * n;
    rows = min(LINEAR_MAX_ROWS, rows - (int)blockIdx.x * LINEAR_MAX_ROWS);
    const typename W::Row wr = W::row(w, r, k);
    // The row's first LINEAR_HELD_WEIGHTS weights (in chunks of a warp's loads) are requested before the norm,
    // so that the two memory waits overlap (qkv: 10.4 → 9.8 µs on the H100, bf16); the rest, if any, is read
    // in the loop. (The MoE kernels lost more occupancy than they gained when they held their rows this way:
    // 20 → 31 µs.)
    constexpr int WIDTH = W::width, CHUNK = 32 * WIDTH, HELD = (LINEAR_HELD_WEIGHTS + CHUNK - 1) / CHUNK;
    typename W::Held held[HELD];
#pragma unroll
    for (int t = 0; t < HELD; ++t) {
        const int c = lane * WIDTH + t * CHUNK;
        if (r < n && c < k) W::fetch(wr, c, k, held[t]);
    }
    if (norm_w)
        for (int b = 0; b < rows; ++b)
            normed_row(x, (const T*)nullptr, norm_w, (T*)nullptr, (T*)nullptr, normed + b * k, b, k, eps);
    if (r >= n) return;
    const float* normed_x = norm_w ? normed : nullptr;
    float acc[LINEAR_MAX_ROWS] = {0};
#pragma unroll
    for (int t = 0; t < HELD; ++t) {
        const int c = lane * WIDTH + t * CHUNK;
        if (c >= k) break;
        float vw[WIDTH];
        W::unpack(held[t], vw);
        add_row_products<WIDTH>(x, normed_x, rows, k, c, vw, acc);
    }
#pragma unroll 4
    for (int c = lane * WIDTH + HELD * CHUNK; c < k; c += CHUNK) {
        float vw[WIDTH];
        load_weights<W>(wr, c, k, vw);
        add_row_products<WIDTH>(x, normed_x, rows, k, c, vw, acc);
    }
#pragma unroll
    for (int b = 0; b < LINEAR_MAX_ROWS; ++b) {
        if (b >= rows) break;
        const float sum = warp_sum(acc[b]);
        if (lane == 0) out[(size_t)b * n + r] = from_float<T>(sum);
    }
}

// SwiGLU activation of a fused gate/up projection (B, 2I) → (B, I): T(T(silu(gate)) · up). Grid
// (ceil(I / threads), B), an element per thread.
template <typename T>
__device__ void silu_mul(const T* gate_up, T* out, int inter) {
    const size_t row = blockIdx.y;
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= inter) return;
    const float g = round_to<T>(silu(to_float(gate_up[row * 2 * inter + i])));
    out[row * inter + i] = from_float<T>(g * to_float(gate_up[row * 2 * inter + inter + i]));
}

// Greedy choice. Grid (B, blocks): each block takes a stretch of the row and finds the first index of
// its largest logit, skipping NaN and the row's banned ids (bans[b·max_bans ..], n_bans[b] of them); the
// block that finishes the row last (counted in `done[b]`, reset for the next launch) merges the stretches
// into out[b], -1 when nothing is left.
#define PICK_MAX_BANS 1024
#define PICK_AHEAD 8
struct Pick {
    float value;
    int index;  // INT_MAX: none
};

// The better of two candidates: the larger logit, ties to the lower index.
__device__ __forceinline__ Pick better(Pick a, Pick b) {
    if (b.index == INT_MAX) return a;
    if (a.index == INT_MAX || b.value > a.value || (b.value == a.value && b.index < a.index)) return b;
    return a;
}

__device__ Pick block_best(Pick p) {
    __shared__ Pick partial[32];
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    for (int o = 16; o > 0; o >>= 1) {
        Pick other;
        other.value = __shfl_xor_sync(0xffffffffu, p.value, o);
        other.index = __shfl_xor_sync(0xffffffffu, p.index, o);
        p = better(p, other);
    }
    __syncthreads();
    if (lane == 0) partial[warp] = p;
    __syncthreads();
    Pick best = partial[0];
    for (int w = 1; w < (int)blockDim.x / 32; ++w) best = better(best, partial[w]);
    return best;
}

template <typename T>
__device__ void greedy_pick(const T* logits, const int* bans, const int* n_bans, int max_bans, float* values,
                            int* indices, unsigned* done, int* out, int vocab) {
    const size_t row = blockIdx.x;
    __shared__ int banned[PICK_MAX_BANS];
    const int n_banned = min(n_bans[row], min(max_bans, PICK_MAX_BANS));
    for (int i = threadIdx.x; i < n_banned; i += blockDim.x) banned[i] = bans[row * max_bans + i];
    __syncthreads();
    const int stretch = (vocab + gridDim.y - 1) / gridDim.y;
    const int begin = blockIdx.y * stretch, end = min(vocab, begin + stretch);
    Pick best = {0.0f, INT_MAX};
    // PICK_AHEAD logits a thread are requested before any is compared: one trip to memory rather than one each
    // (a row's stretch at one page is one trip; at 64 pages, 16 blocks a row, four).
    for (int first = begin + threadIdx.x; first < end; first += PICK_AHEAD * blockDim.x) {
        float value[PICK_AHEAD];
#pragma unroll
        for (int u = 0; u < PICK_AHEAD; ++u) {
            const int i = first + u * blockDim.x;
            value[u] = i < end ? to_float(logits[row * vocab + i]) : 0.0f;
        }
#pragma unroll
        for (int u = 0; u < PICK_AHEAD; ++u) {
            const int i = first + u * blockDim.x;
            if (i >= end) break;
            const Pick candidate = {value[u], i};
            if (isnan(candidate.value) || better(best, candidate).index != i) continue;
            bool is_banned = false;
            for (int j = 0; j < n_banned; ++j) is_banned |= banned[j] == i;
            if (!is_banned) best = candidate;
        }
    }
    best = block_best(best);
    const size_t slot = row * gridDim.y + blockIdx.y;
    if (threadIdx.x == 0) {
        values[slot] = best.value;
        indices[slot] = best.index;
    }
    if (!last_to_arrive(&done[row], gridDim.y)) return;
    Pick merged = {0.0f, INT_MAX};
    for (int s = threadIdx.x; s < (int)gridDim.y; s += blockDim.x) {
        const Pick p = {__ldcg(values + row * gridDim.y + s), __ldcg(indices + row * gridDim.y + s)};
        merged = better(merged, p);
    }
    merged = block_best(merged);
    if (threadIdx.x == 0) out[row] = merged.index == INT_MAX ? -1 : merged.index;
}

// int8 rows (Int8's layout) to T: out (rows, K), one thread per 16 weights. The same products as the row
// kernels take (scale · q in f32), rounded to T: the prompt pass's weights, and the tests' oracle.
template <typename T>
__device__ void dequantize_int8(const uint8_t* w, T* out, size_t rows, int k) {
    const int per_row = k / Int8::width;
    const size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= rows * per_row) return;
    const size_t r = i / per_row;
    const int c = (int)(i % per_row) * Int8::width;
    float v[Int8::width];
    load_weights<Int8>(Int8::row(w, r, k), c, k, v);
#pragma unroll
    for (int q = 0; q < Int8::width; q += 8) store8(out + r * k + c + q, v + q);
}

#define INSTANTIATE(T, S)                                                                                       \
    extern "C" __global__ void embed_rows_##S(const T* table, const int* tokens, T* out, int h) {               \
        follow_previous_kernel();                                                                               \
        embed_rows<T>(table, tokens, out, h);                                                                   \
    }                                                                                                           \
    extern "C" __global__ void rms_norm_##S(const T* x, const T* delta, const T* w, T* sum_out, T* out, int h,  \
                                            float eps) {                                                        \
        follow_previous_kernel();                                                                               \
        rms_norm<T>(x, delta, w, sum_out, out, h, eps);                                                         \
    }                                                                                                           \
    extern "C" __global__ void rope_kv_write_##S(const T* qkv, const T* cos, const T* sin, const uint64_t* kc,  \
                                                 const uint64_t* vc, const int* pos, const int* cap, T* q_out,  \
                                                 int nh, int nkv, int hd) {                                     \
        follow_previous_kernel();                                                                               \
        rope_kv_write<T>(qkv, cos, sin, kc, vc, pos, cap, q_out, nh, nkv, hd);                                  \
    }                                                                                                           \
    extern "C" __global__ void __launch_bounds__(ATTN_THREADS, ATTN_MIN_BLOCKS)                                 \
        attention_decode_##S(const T* q, const uint64_t* kc, const uint64_t* vc, const int* pos, const int* cap, \
                             float* partial, unsigned* done, T* out, int nh, int nkv, int hd, float scale) {     \
        follow_previous_kernel();                                                                               \
        attention_decode<T>(q, kc, vc, pos, cap, partial, done, out, nh, nkv, hd, scale);                       \
    }                                                                                                           \
    extern "C" __global__ void route_experts_##S(const T* x, const T* delta, const T* norm_w, float eps,        \
                                                 T* sum_out, T* normed_out, const float* gate, float* logits,   \
                                                 unsigned* done, int* ids, float* weights, int h, int e, int k, \
                                                 float scaling, int norm_topk, unsigned* rows_done,             \
                                                 int* offsets, int* order) {                                    \
        route_experts<T>(x, delta, norm_w, eps, sum_out, normed_out, gate, logits, done, ids, weights, h, e, k, \
                         scaling, norm_topk, rows_done, offsets, order);                                        \
    }                                                                                                           \
    extern "C" __global__ void moe_gate_up_by_slot_##S(const T* x, const T* w, const int* ids, T* act,          \
                                                       int n_slots, int k, int h, int inter, const T* shared_w, \
                                                       int shared_inter, T* shared_act, int tokens) {           \
        follow_previous_kernel();                                                                               \
        moe_gate_up<T, Dense<T>, MOE_DECODE_SLOTS>(x, w, ids, act, n_slots, k, h, inter, true, shared_w, shared_inter,    \
                                         shared_act, tokens);                                                   \
    }                                                                                                           \
    extern "C" __global__ void moe_down_by_slot_##S(const T* act, const T* w, const int* ids,                   \
                                                    const float* weights, float* y, int n_slots, int h,         \
                                                    int inter, const T* shared_act, const T* shared_w,          \
                                                    int shared_inter, float* shared_y, int tokens) {            \
        follow_previous_kernel();                                                                               \
        moe_down<T, Dense<T>, MOE_DECODE_SLOTS>(act, w, ids, weights, y, n_slots, h, inter, true, shared_act, shared_w,   \
                                      shared_inter, shared_y, tokens);                                          \
    }                                                                                                           \
    extern "C" __global__ void moe_gate_up_by_expert_##S(const T* x, const T* w, const int* ids, T* act,        \
                                                         int n_slots, int k, int h, int inter,                  \
                                                         const T* shared_w, int shared_inter, T* shared_act,    \
                                                         int tokens) {                                          \
        follow_previous_kernel();                                                                               \
        moe_gate_up<T, Dense<T>, MOE_PREFILL_SLOTS>(x, w, ids, act, n_slots, k, h, inter, false, shared_w, shared_inter,  \
                                          shared_act, tokens);                                                  \
    }                                                                                                           \
    extern "C" __global__ void moe_down_by_expert_##S(const T* act, const T* w, const int* ids,                 \
                                                      const float* weights, float* y, int n_slots, int h,       \
                                                      int inter, const T* shared_act, const T* shared_w,        \
                                                      int shared_inter, float* shared_y, int tokens) {          \
        follow_previous_kernel();                                                                               \
        moe_down<T, Dense<T>, MOE_PREFILL_SLOTS>(act, w, ids, weights, y, n_slots, h, inter, false, shared_act, shared_w, \
                                       shared_inter, shared_y, tokens);                                         \
    }                                                                                                           \
    extern "C" __global__ void linear_rows_##S(const T* x, const T* norm_w, float eps, const T* w, T* out,      \
                                               int rows, int n, int k) {                                        \
        follow_previous_kernel();                                                                               \
        linear_rows<T, Dense<T>>(x, norm_w, eps, w, out, rows, n, k);                                           \
    }                                                                                                           \
    extern "C" __global__ void moe_combine_##S(const float* y, const float* shared, const T* x, T* x_out, int k,\
                                               int h) {                                                         \
        follow_previous_kernel();                                                                               \
        moe_combine<T>(y, shared, x, x_out, k, h);                                                              \
    }                                                                                                           \
    extern "C" __global__ void silu_mul_##S(const T* gate_up, T* out, int inter) {                              \
        follow_previous_kernel();                                                                               \
        silu_mul<T>(gate_up, out, inter);                                                                       \
    }                                                                                                           \
    extern "C" __global__ void greedy_pick_##S(const T* logits, const int* bans, const int* n_bans,             \
                                               int max_bans, float* values, int* indices, unsigned* done,       \
                                               int* out, int vocab) {                                           \
        follow_previous_kernel();                                                                               \
        greedy_pick<T>(logits, bans, n_bans, max_bans, values, indices, done, out, vocab);                      \
    }

// The kernels that read weights, for int8 rows (`_int8_` names): the same arguments, each weight pointer to
// int8 rows, routed experts stacked; and the rows dequantized to T.
#define INSTANTIATE_INT8(T, S)                                                                                     \
    extern "C" __global__ void __launch_bounds__(MOE_THREADS, 3)                                                   \
        moe_gate_up_by_slot_int8_##S(const T* x, Int8::Experts w, const int* ids, T* act, int n_slots, int k,      \
                                     int h, int inter, Int8::Row shared_w, int shared_inter, T* shared_act,        \
                                     int tokens) {                                                                 \
        follow_previous_kernel();                                                                                  \
        moe_gate_up<T, Int8, MOE_DECODE_SLOTS>(x, w, ids, act, n_slots, k, h, inter, true, shared_w,               \
                                               shared_inter, shared_act, tokens);                                  \
    }                                                                                                              \
    extern "C" __global__ void moe_down_by_slot_int8_##S(const T* act, Int8::Experts w, const int* ids,            \
                                                         const float* weights, float* y, int n_slots, int h,       \
                                                         int inter, const T* shared_act, Int8::Row shared_w,       \
                                                         int shared_inter, float* shared_y, int tokens) {          \
        follow_previous_kernel();                                                                                  \
        moe_down<T, Int8, MOE_DECODE_SLOTS>(act, w, ids, weights, y, n_slots, h, inter, true, shared_act,          \
                                            shared_w, shared_inter, shared_y, tokens);                             \
    }                                                                                                              \
    extern "C" __global__ void __launch_bounds__(MOE_THREADS, 3)                                                   \
        moe_gate_up_by_expert_int8_##S(const T* x, Int8::Experts w, const int* ids, T* act, int n_slots, int k,    \
                                       int h, int inter, Int8::Row shared_w, int shared_inter, T* shared_act,      \
                                       int tokens) {                                                               \
        follow_previous_kernel();                                                                                  \
        moe_gate_up<T, Int8, MOE_PREFILL_SLOTS>(x, w, ids, act, n_slots, k, h, inter, false, shared_w,             \
                                                shared_inter, shared_act, tokens);                                 \
    }                                                                                                              \
    extern "C" __global__ void moe_down_by_expert_int8_##S(const T* act, Int8::Experts w, const int* ids,          \
                                                           const float* weights, float* y, int n_slots, int h,     \
                                                           int inter, const T* shared_act, Int8::Row shared_w,     \
                                                           int shared_inter, float* shared_y, int tokens) {        \
        follow_previous_kernel();                                                                                  \
        moe_down<T, Int8, MOE_PREFILL_SLOTS>(act, w, ids, weights, y, n_slots, h, inter, false, shared_act,        \
                                             shared_w, shared_inter, shared_y, tokens);                            \
    }                                                                                                              \
    extern "C" __global__ void linear_rows_int8_##S(const T* x, const T* norm_w, float eps, Int8::Row w, T* out,   \
                                                    int rows, int n, int k) {                                      \
        follow_previous_kernel();                                                                                  \
        linear_rows<T, Int8>(x, norm_w, eps, w, out, rows, n, k);                                                  \
    }                                                                                                              \
    extern "C" __global__ void dequantize_int8_##S(const uint8_t* w, T* out, size_t rows, int k) {                 \
        follow_previous_kernel();                                                                                  \
        dequantize_int8<T>(w, out, rows, k);                                                                       \
    }

INSTANTIATE(float, f32)
INSTANTIATE(bf16, bf16)
INSTANTIATE_INT8(float, f32)
INSTANTIATE_INT8(bf16, bf16)

// The linear layers on tensor cores (linear_tiles.cuh), bf16 activations only: mma takes bf16. `_few_`: up to
// FEW_PAGES rows.
#define INSTANTIATE_TILES(W, PAGES, NAME)                                                                       \
    extern "C" __global__ void __launch_bounds__(TILE_THREADS)                                                  \
        NAME(const bf16* x, const bf16* norm_w, float eps, W::Row w, bf16* out, int rows, int n, int k) {       \
        const RowsOut rows_out = {out, n};                                                                      \
        linear_tiles<W, PAGES<W>>(x, norm_w, eps, w, rows_out, rows, n, k);                                     \
    }
INSTANTIATE_TILES(Dense<bf16>, ManyPages, linear_tiles_bf16)
INSTANTIATE_TILES(Int8, ManyPages, linear_tiles_int8_bf16)
INSTANTIATE_TILES(Dense<bf16>, FewPages, linear_tiles_few_bf16)
INSTANTIATE_TILES(Int8, FewPages, linear_tiles_few_int8_bf16)

// The fused q/k/v projection on the same tiles for up to FEW_PAGES rows, rotated and written to q and the caches
// (qkv_rope.cuh): the arguments of linear_tiles, then rope_kv_write's, then MoeRows' (y null for rows as they are).
// Grid ((nh + 2·nkv)·hd / 32, 1).
#define INSTANTIATE_QKV_TILES(W, PAGES, NAME)                                                                   \
    extern "C" __global__ void __launch_bounds__(TILE_THREADS)                                                  \
        NAME(const bf16* x, const bf16* norm_w, float eps, W::Row w, int rows, int k, const bf16* cos,          \
             const bf16* sin, const uint64_t* kc, const uint64_t* vc, const int* pos, const int* cap,           \
             bf16* q_out, int nh, int nkv, int hd, const float* y, const float* shared, int top_k,              \
             bf16* sum_out) {                                                                                   \
        const RopeOut rope_out = {cos, sin, kc, vc, pos, cap, q_out, nh, nkv, hd};                              \
        const MoeRows moe = {y, shared, top_k, sum_out};                                                        \
        linear_tiles<W, PAGES<W>>(x, norm_w, eps, w, rope_out, rows, (nh + 2 * nkv) * hd, k, moe);              \
    }
INSTANTIATE_QKV_TILES(Dense<bf16>, FewPages, qkv_rope_tiles_few_bf16)
INSTANTIATE_QKV_TILES(Int8, FewPages, qkv_rope_tiles_few_int8_bf16)

// A decode step's routed and shared experts on the same tiles (expert_tiles.cuh) for up to FEW_PAGES rows: a
// tile of 8 slots, each warp's weights requested EXPERT_DEPTH K blocks ahead (three blocks an SM). Their sums are
// those of moe_prefill.cu's decode kernels, which take more rows.
#define EXPERT_DEPTH 2
template <typename W>
using ExpertFew = FewPages<W, EXPERT_DEPTH>;
#define INSTANTIATE_EXPERT_TILES(W, PAGES, SLOTS, MIN_BLOCKS, NAME)                                             \
    extern "C" __global__ void __launch_bounds__(TILE_THREADS, MIN_BLOCKS)                                      \
        expert_gate_up_##NAME(const bf16* x, W::Experts w, W::Row shared_w, const int* offsets,                 \
                              const int* order, bf16* act, bf16* shared_act, int k, int h, int inter,           \
                              int shared_inter, int n_experts, int tokens) {                                    \
        expert_gate_up_tiles<W, PAGES<W>, SLOTS>(x, w, shared_w, offsets, order, act, shared_act, k, h, inter,  \
                                                 shared_inter, n_experts, tokens);                              \
    }                                                                                                           \
    extern "C" __global__ void __launch_bounds__(TILE_THREADS, MIN_BLOCKS)                                      \
        expert_down_##NAME(const bf16* act, W::Experts w, W::Row shared_w, const int* offsets,                  \
                           const int* order, const float* weights, float* y, const bf16* shared_act,            \
                           float* shared_y, int h, int inter, int shared_inter, int n_experts, int tokens,      \
                           int k) {                                                                             \
        expert_down_tiles<W, PAGES<W>, SLOTS>(act, w, shared_w, offsets, order, weights, y, shared_act,         \
                                              shared_y, h, inter, shared_inter, n_experts, tokens, k);          \
    }
INSTANTIATE_EXPERT_TILES(Dense<bf16>, ExpertFew, FEW_PAGES, 3, tiles_few_bf16)
INSTANTIATE_EXPERT_TILES(Int8, ExpertFew, FEW_PAGES, 3, tiles_few_int8_bf16)
