// The language model's decode step as a handful of fused kernels (one token per sequence, B sequences).
//
// Every kernel rounds to the activation type T exactly where the reference implementation does (a bf16
// matmul output, a bf16 residual add, RMSNorm's cast before its weight), so the fast path differs from the
// straightforward one only in the order of f32 sums. Each is instantiated for float and bf16.
//
// Key/value caches are per sequence: `k_cache[b]` / `v_cache[b]` point at that sequence's (kv_heads, cap[b],
// head_dim) buffer of the layer, and `pos[b]` is where this step's key/value goes (its length before the step).

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>
#include <limits.h>

typedef __nv_bfloat16 bf16;

__device__ __forceinline__ float to_float(float x) { return x; }
__device__ __forceinline__ float to_float(bf16 x) { return __bfloat162float(x); }

template <typename T> __device__ __forceinline__ T from_float(float x);
template <> __device__ __forceinline__ float from_float<float>(float x) { return x; }
template <> __device__ __forceinline__ bf16 from_float<bf16>(float x) { return __float2bfloat16(x); }

// Round through T: what a T-typed tensor op stores.
template <typename T> __device__ __forceinline__ float round_to(float x) { return to_float(from_float<T>(x)); }

__device__ __forceinline__ float warp_sum(float v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

__device__ __forceinline__ float warp_max(float v) {
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

// Sum over the block (blockDim.x a multiple of 32, at most 1024); every thread gets the total.
__device__ float block_sum(float v) {
    __shared__ float partial[32];
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    v = warp_sum(v);
    __syncthreads();
    if (lane == 0) partial[warp] = v;
    __syncthreads();
    float total = 0.0f;
    for (int w = 0; w < (int)blockDim.x / 32; ++w) total += partial[w];
    return total;
}

// 8 consecutive values as floats (16-byte aligned: rows are multiples of 8 elements).
__device__ __forceinline__ void load8(const float* p, float out[8]) {
    const float4 a = *reinterpret_cast<const float4*>(p);
    const float4 b = *reinterpret_cast<const float4*>(p + 4);
    out[0] = a.x; out[1] = a.y; out[2] = a.z; out[3] = a.w;
    out[4] = b.x; out[5] = b.y; out[6] = b.z; out[7] = b.w;
}

__device__ __forceinline__ void load8(const bf16* p, float out[8]) {
    const uint4 raw = *reinterpret_cast<const uint4*>(p);
    const bf16* v = reinterpret_cast<const bf16*>(&raw);
#pragma unroll
    for (int i = 0; i < 8; ++i) out[i] = __bfloat162float(v[i]);
}

// 8 consecutive values kept as loaded (16 bytes per 4 floats or 8 bf16): loads requested early are converted
// late without holding 8 floats per chunk in registers.
template <typename T>
struct Raw8 {
    uint4 v[sizeof(T) / 2];
};

template <typename T>
__device__ __forceinline__ void fetch8(const T* p, Raw8<T>& raw) {
#pragma unroll
    for (int i = 0; i < (int)(sizeof(T) / 2); ++i) raw.v[i] = reinterpret_cast<const uint4*>(p)[i];
}

template <typename T>
__device__ __forceinline__ void unpack8(const Raw8<T>& raw, float out[8]) {
    const T* v = reinterpret_cast<const T*>(raw.v);
#pragma unroll
    for (int i = 0; i < 8; ++i) out[i] = to_float(v[i]);
}

__device__ __forceinline__ float silu(float x) { return x / (1.0f + expf(-x)); }

// How the row kernels read a weight matrix (N, K), row by row, `width` values a lane at a time: `fetch` requests
// them as loaded (`Held`), `unpack` turns them into floats, so that loads requested early are converted late.
// Dense<T>: in the activations' type T, 8 values (16 bytes in bf16), routed experts stacked (E, N, K). Int8:
// DeepRead's int8 rows (quant/matrix.rs): a row holds its K int8 weights, then an f16 scale per block of 32,
// padded to 16 bytes, so that a lane reads 16 weights in one 16-byte load; routed experts stacked (E, N, row
// bytes). Int8 is weight-only: the weights are dequantized in registers (scale · q in f32) and the activations
// stay in T.
template <typename T>
struct Dense {
    typedef const T* Row;
    typedef const T* Experts;
    typedef Raw8<T> Held;
    static constexpr int width = 8;
    static __device__ __forceinline__ Row row(Row w, size_t r, int k) { return w + r * k; }
    static __device__ __forceinline__ Row expert(Experts w, int e, int rows, int k) {
        return w + (size_t)e * rows * k;
    }
    static __device__ __forceinline__ void fetch(Row row, int c, int, Held& held) { fetch8(row + c, held); }
    static __device__ __forceinline__ void unpack(const Held& held, float out[8]) { ::unpack8(held, out); }
    static __device__ __forceinline__ void unpack8(const Held& held, int, float out[8]) { ::unpack8(held, out); }
    static __device__ __forceinline__ int row_bytes(int k) { return k * (int)sizeof(T); }
};

struct Int8 {
    typedef const uint8_t* Row;
    typedef const uint8_t* Experts;
    struct Held {
        uint4 q;
        __half d;
    };
    static constexpr int width = 16;
    // K bytes of weights, then K/32 two-byte scales rounded up to 16 bytes (K a multiple of 32).
    static __device__ __forceinline__ int row_bytes(int k) { return k + (k / 16 + 15) / 16 * 16; }
    static __device__ __forceinline__ Row row(Row w, size_t r, int k) { return w + r * row_bytes(k); }
    static __device__ __forceinline__ Row expert(Experts w, int e, int rows, int k) {
        return w + (size_t)e * rows * row_bytes(k);
    }
    // c a multiple of 16: the 16 weights share their block's scale.
    static __device__ __forceinline__ void fetch(Row row, int c, int k, Held& held) {
        held.q = *reinterpret_cast<const uint4*>(row + c);
        held.d = reinterpret_cast<const __half*>(row + k)[c / 32];
    }
    static __device__ __forceinline__ void unpack(const Held& held, float out[16]) {
        unpack8(held, 0, out);
        unpack8(held, 8, out + 8);
    }
    // Values p to p + 7 of the 16 (p 0 or 8).
    static __device__ __forceinline__ void unpack8(const Held& held, int p, float out[8]) {
        const float d = __half2float(held.d);
        const int8_t* q = reinterpret_cast<const int8_t*>(&held.q) + p;
#pragma unroll
        for (int i = 0; i < 8; ++i) out[i] = d * (float)q[i];
    }
};

// `width` weights of row `row` from column c as floats.
template <typename W>
__device__ __forceinline__ void load_weights(typename W::Row row, int c, int k, float out[W::width]) {
    typename W::Held held;
    W::fetch(row, c, k, held);
    W::unpack(held, out);
}

// `width` consecutive values of x as floats (width a multiple of 8).
template <int WIDTH, typename T>
__device__ __forceinline__ void load_wide(const T* p, float out[WIDTH]) {
#pragma unroll
    for (int i = 0; i < WIDTH; i += 8) load8(p + i, out + i);
}

// The embedding rows of the fed-back tokens: out[b] = table[tokens[b]], one row per block.
template <typename T>
__device__ void embed_rows(const T* table, const int* tokens, T* out, int h) {
    const size_t row = blockIdx.x;
    const T* src = table + (size_t)tokens[row] * h;
    for (int i = threadIdx.x; i < h; i += blockDim.x) out[row * h + i] = src[i];
}

// 8 values rounded to T, stored as one or two 16-byte writes (16-byte aligned, as load8).
template <typename T>
__device__ __forceinline__ void store8(T* p, const float v[8]) {
    Raw8<T> raw;
    T* out = reinterpret_cast<T*>(raw.v);
#pragma unroll
    for (int i = 0; i < 8; ++i) out[i] = from_float<T>(v[i]);
#pragma unroll
    for (int i = 0; i < (int)(sizeof(T) / 2); ++i) reinterpret_cast<uint4*>(p)[i] = raw.v[i];
}

// RMSNorm of row `row` into `cache` (h floats, shared): T(T(v · rsqrt(mean(v²) + eps)) · w) with v = x, or
// v = T(x + delta) (the residual add) when `delta` is given. `sum_out` / `out`, when given, receive v and
// the normed row in T. Every thread of the block takes part, 8 values at a time (h a multiple of 8): a row of
// up to 8 · blockDim values is one round of loads, the norm weights requested with them, so that the norm
// waits on memory once rather than once per value a thread takes.
template <typename T>
__device__ void normed_row(const T* x, const T* delta, const T* w, T* sum_out, T* out, float* cache, size_t row,
                           int h, float eps) {
    x += row * h;
    const int first = threadIdx.x * 8, stride = blockDim.x * 8;
    float w_first[8];
    if (first < h) load8(w + first, w_first);
    float ss = 0.0f;
    for (int c = first; c < h; c += stride) {
        float v[8];
        load8(x + c, v);
        if (delta) {
            float d[8];
            load8(delta + row * h + c, d);
#pragma unroll
            for (int q = 0; q < 8; ++q) v[q] = round_to<T>(v[q] + d[q]);
            if (sum_out) store8(sum_out + row * h + c, v);
        }
        store8(cache + c, v);
#pragma unroll
        for (int q = 0; q < 8; ++q) ss += v[q] * v[q];
    }
    const float inv = 1.0f / sqrtf(block_sum(ss) / h + eps);
    for (int c = first; c < h; c += stride) {
        float wv[8], n[8];
        if (c == first) {
#pragma unroll
            for (int q = 0; q < 8; ++q) wv[q] = w_first[q];
        } else {
            load8(w + c, wv);
        }
        float v[8];
        load8(cache + c, v);
#pragma unroll
        for (int q = 0; q < 8; ++q) n[q] = round_to<T>(round_to<T>(v[q] * inv) * wv[q]);
        if (out) store8(out + row * h + c, n);
        store8(cache + c, n);
    }
    __syncthreads();
}

// RMSNorm, one row per block, with the residual add first when `delta` is given (its sum to `sum_out`).
// Dynamic shared memory: h floats.
template <typename T>
__device__ void rms_norm(const T* x, const T* delta, const T* w, T* sum_out, T* out, int h, float eps) {
    extern __shared__ float row_cache[];
    normed_row(x, delta, w, sum_out, out, row_cache, blockIdx.x, h, eps);
}

// Rotate-half RoPE of the fused QKV row and the cache write. Grid (B, nh + 2·nkv): q heads go to `q_out`
// (B, nh, hd), k heads (rotated) and v heads to the caches at pos[b]. Same arithmetic as the rope of the
// straightforward path: x1·c − x2·s and x1·s + x2·c in T.
template <typename T>
__device__ void rope_kv_write(const T* qkv, const T* cos, const T* sin, const uint64_t* k_cache,
                              const uint64_t* v_cache, const int* pos, const int* cap, T* q_out,
                              int nh, int nkv, int hd) {
    const int row = blockIdx.x, head = blockIdx.y, half = hd / 2;
    const T* src = qkv + ((size_t)row * (nh + 2 * nkv) + head) * hd;
    const T* c = cos + (size_t)row * half;
    const T* s = sin + (size_t)row * half;
    T* dst;
    if (head < nh) {
        dst = q_out + ((size_t)row * nh + head) * hd;
    } else if (head < nh + nkv) {
        dst = reinterpret_cast<T*>(k_cache[row]) + ((size_t)(head - nh) * cap[row] + pos[row]) * hd;
    } else {
        dst = reinterpret_cast<T*>(v_cache[row]) + ((size_t)(head - nh - nkv) * cap[row] + pos[row]) * hd;
    }
    for (int i = threadIdx.x; i < half; i += blockDim.x) {
        const T x1 = src[i], x2 = src[i + half];
        if (head < nh + nkv) {
            dst[i] = x1 * c[i] - x2 * s[i];
            dst[i + half] = x1 * s[i] + x2 * c[i];
        } else {
            dst[i] = x1;
            dst[i + half] = x2;
        }
    }
}

// Split-K decode attention. Grid (B, nh, ATTN_MAX_SPLITS), up to ATTN_WARPS warps a block. A split covers
// `split_chunk` consecutive positions (ATTN_MIN_CHUNK, more only past 64 of them); splits past the end exit.
// Within a warp, hd/8 lanes hold one position (8 dims each, one 16-byte load of k and of v). A split's positions
// are dealt to `lane_warps` · 256/hd lane groups, group v taking positions start + v, start + v + groups, ...,
// and each keeps an online softmax (max, sum, weighted values) in f32. With 16 warps a split of 64 positions
// takes two steps at hd 128 (few sequences: the latency of each block matters); with 4 warps, eight (many:
// blocks enough to hide it). `lane_warps` is a multiple of the block's warps, each of whose lane groups runs
// lane_warps / warps of them in turn: with lane_warps = ATTN_WARPS whatever the warps, the states and their
// merge are the same for every batch size, so a row's attention does not depend on the rows beside it.
// The block merges them into `partial[((b·nh + h)·ATTN_MAX_SPLITS + split)·(hd + 2)]` as [max, sum, acc[hd]].
// The split that finishes a (row, head) last (counted in `done`, reset for the next launch) merges the splits
// into out (B, nh·hd).
#define ATTN_WARPS 16
#define ATTN_MAX_HEAD_DIM 256
#define ATTN_MIN_CHUNK 64
#define ATTN_MAX_SPLITS 64
__device__ __forceinline__ int split_chunk(int len) {
    return max((len + ATTN_MAX_SPLITS - 1) / ATTN_MAX_SPLITS, ATTN_MIN_CHUNK);
}

// Online-softmax states of a block: at most ATTN_WARPS · 32 lane groups (hd = 8).
#define ATTN_MAX_STATES (ATTN_WARPS * 32)

// Merges online-softmax states i < n, each [max, sum, acc[hd]] read through `value(i, j)`, into `acc`
// (shared, hd floats); returns {max, sum} of the merged state. `scratch`: ATTN_MERGE_SCRATCH floats. The first
// warp takes the max and the sum, a lane the states lane, lane + 32, ...; then each dim's weighted values are
// summed in MERGE_PARTS interleaved parts side by side, and the parts added in order. Every state is read
// once per phase by many threads at a time, not n times in turn by each. The order of every sum depends on n
// and hd alone, never on the block's threads: the batch-invariant path merges the same way at 4 warps and 16.
#define MERGE_PARTS 4
#define ATTN_MERGE_SCRATCH (2 * ATTN_MAX_STATES + MERGE_PARTS * ATTN_MAX_HEAD_DIM)
struct Softmax {
    float max, sum;
};

template <typename Value>
__device__ Softmax merge_states(Value value, int n, int hd, float* scratch, float* acc) {
    float* weight = scratch;
    float* sum = scratch + ATTN_MAX_STATES;
    float* parts = scratch + 2 * ATTN_MAX_STATES;
    __shared__ Softmax total;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    if (warp == 0) {
        float m = -INFINITY;
        for (int i = lane; i < n; i += 32) {
            weight[i] = value(i, 0);
            sum[i] = value(i, 1);
            if (sum[i] > 0.0f) m = fmaxf(m, weight[i]);
        }
        m = warp_max(m);
        float l = 0.0f;
        for (int i = lane; i < n; i += 32) {
            const float w = sum[i] > 0.0f ? expf(weight[i] - m) : 0.0f;
            weight[i] = w;
            l += sum[i] * w;
        }
        l = warp_sum(l);
        if (lane == 0) total = {m, l};
    }
    __syncthreads();
    for (int t = threadIdx.x; t < MERGE_PARTS * hd; t += blockDim.x) {
        const int d = t % hd, part = t / hd;
        float a = 0.0f;
#pragma unroll 4
        for (int i = part; i < n; i += MERGE_PARTS) a += value(i, 2 + d) * weight[i];
        parts[t] = a;
    }
    __syncthreads();
    for (int d = threadIdx.x; d < hd; d += blockDim.x) {
        float a = 0.0f;
#pragma unroll
        for (int p = 0; p < MERGE_PARTS; ++p) a += parts[p * hd + d];
        acc[d] = a;
    }
    __syncthreads();
    return total;
}

template <typename T>
__device__ void attention_decode(const T* q, const uint64_t* k_cache, const uint64_t* v_cache, const int* pos,
                                 const int* cap, float* partial, unsigned* done, T* out, int nh, int nkv, int hd,
                                 float scale, int lane_warps) {
    const int row = blockIdx.x, head = blockIdx.y, split = blockIdx.z;
    const int len = pos[row] + 1;
    const int chunk = split_chunk(len);
    const int live = (len + chunk - 1) / chunk;
    if (split >= live) return;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, turns = lane_warps / (blockDim.x / 32);
    const int group_lanes = hd / 8, groups = 32 / group_lanes, all_groups = lane_warps * groups;
    const int group = lane / group_lanes, dim = (lane % group_lanes) * 8;
    const int start = split * chunk, end = min(len, start + chunk);
    const int kv_head = head / (nh / nkv);
    const T* K = reinterpret_cast<const T*>(k_cache[row]) + (size_t)kv_head * cap[row] * hd + dim;
    const T* V = reinterpret_cast<const T*>(v_cache[row]) + (size_t)kv_head * cap[row] * hd + dim;
    float qv[8];
    load8(q + ((size_t)row * nh + head) * hd + dim, qv);
#pragma unroll
    for (int j = 0; j < 8; ++j) qv[j] *= scale;
    // Every lane group's state, (hd + 2) floats each: lane_warps · groups · (hd + 2) floats of dynamic shared
    // memory, sized at launch. A fixed ATTN_WARPS · 320 would cost the 4-warp blocks of many rows an eighth of
    // their blocks per SM once the merge's scratch grew.
    extern __shared__ float states[];
    __shared__ float scratch[ATTN_MERGE_SCRATCH];
    __shared__ float merged[ATTN_MAX_HEAD_DIM];
    const int stride = hd + 2;
    for (int turn = 0; turn < turns; ++turn) {
        // The warp's first lane group this turn: p - group is the same for every lane of the warp, so its
        // lanes take the same number of steps and the shuffles below see them all.
        const int first = (warp * turns + turn) * groups;
        float acc[8] = {0.0f};
        float m = -INFINITY, l = 0.0f;
        for (int p = start + first + group; p - group < end; p += all_groups) {
            const bool here = p < end;
            float kv[8], vv[8];
            if (here) { load8(K + (size_t)p * hd, kv); load8(V + (size_t)p * hd, vv); }
            float dot = 0.0f;
#pragma unroll
            for (int j = 0; j < 8; ++j) dot += here ? qv[j] * kv[j] : 0.0f;
            for (int o = group_lanes / 2; o > 0; o >>= 1) dot += __shfl_xor_sync(0xffffffffu, dot, o);
            if (!here) continue;
            const float m_new = fmaxf(m, dot);
            const float correction = expf(m - m_new), e = expf(dot - m_new);
            l = l * correction + e;
#pragma unroll
            for (int j = 0; j < 8; ++j) acc[j] = acc[j] * correction + e * vv[j];
            m = m_new;
        }
        float* mine = states + (first + group) * stride;
        if (lane % group_lanes == 0) { mine[0] = m; mine[1] = l; }
#pragma unroll
        for (int j = 0; j < 8; ++j) mine[2 + dim + j] = acc[j];
    }
    __syncthreads();
    const size_t head_row = (size_t)row * nh + head;
    const Softmax block = merge_states([&](int i, int j) { return states[i * stride + j]; }, all_groups, hd,
                                       scratch, merged);
    float* split_state = partial + (head_row * ATTN_MAX_SPLITS + split) * stride;
    for (int d = threadIdx.x; d < hd; d += blockDim.x) split_state[2 + d] = merged[d];
    __shared__ bool last;
    if (threadIdx.x == 0) {
        split_state[0] = block.max;
        split_state[1] = block.sum;
    }
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0) {
        last = atomicAdd(&done[head_row], 1u) == (unsigned)live - 1;
        if (last) done[head_row] = 0;
    }
    __syncthreads();
    if (!last) return;
    __threadfence();
    const float* head_states = partial + head_row * ATTN_MAX_SPLITS * stride;
    const Softmax total = merge_states([&](int i, int j) { return __ldcg(head_states + i * stride + j); }, live,
                                       hd, scratch, merged);
    for (int d = threadIdx.x; d < hd; d += blockDim.x) out[head_row * hd + d] = from_float<T>(merged[d] / total.sum);
}

// MoE routing. Grid (B, ceil(E / ROUTE_WARPS)), a warp per expert, dynamic shared memory h floats: router
// logits in f32 (x · gateᵀ, gate (E, H) f32) into `logits` (B, E). With `norm_w`, the routed row is first the
// layer's post-attention RMSNorm of x + delta, which column 0 also writes out (`sum_out`, `normed_out`) for
// the experts and the residual. The block that finishes a row last (counted in `done[b]`, reset for the next
// launch) takes the softmax and the top k with ties to the lower index, then sorts them by expert index: the
// reference adds the experts' outputs in index order. Weights are the probabilities (renormalised over the k
// if asked) times `scaling`.
#define ROUTE_WARPS 8
#define ROUTE_MAX_K 16
#define ROUTE_HELD_CHUNKS 8
template <typename T>
__device__ void route_experts(const T* x, const T* delta, const T* norm_w, float eps, T* sum_out, T* normed_out,
                              const float* gate, float* logits, unsigned* done, int* ids, float* weights, int h,
                              int e, int k, float scaling, int norm_topk) {
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
    __threadfence();
    __syncthreads();
    __shared__ bool last;
    if (threadIdx.x == 0) {
        last = atomicAdd(&done[row], 1u) == gridDim.y - 1;
        if (last) done[row] = 0;
    }
    __syncthreads();
    if (!last || warp != 0) return;
    __threadfence();
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
    for (int i = begin + threadIdx.x; i < end; i += blockDim.x) {
        const Pick candidate = {to_float(logits[row * vocab + i]), i};
        if (isnan(candidate.value) || better(best, candidate).index != i) continue;
        bool is_banned = false;
        for (int j = 0; j < n_banned; ++j) is_banned |= banned[j] == i;
        if (!is_banned) best = candidate;
    }
    best = block_best(best);
    const size_t slot = row * gridDim.y + blockIdx.y;
    __shared__ bool last;
    if (threadIdx.x == 0) {
        values[slot] = best.value;
        indices[slot] = best.index;
        __threadfence();
        last = atomicAdd(&done[row], 1u) == gridDim.y - 1;
        if (last) done[row] = 0;
    }
    __syncthreads();
    if (!last) return;
    __threadfence();
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

#define INSTANTIATE(T, S)                                                                                     \
    extern "C" __global__ void embed_rows_##S(const T* table, const int* tokens, T* out, int h) {               \
        embed_rows<T>(table, tokens, out, h);                                                                   \
    }                                                                                                           \
    extern "C" __global__ void rms_norm_##S(const T* x, const T* delta, const T* w, T* sum_out, T* out, int h,  \
                                            float eps) { rms_norm<T>(x, delta, w, sum_out, out, h, eps); }      \
    extern "C" __global__ void rope_kv_write_##S(const T* qkv, const T* cos, const T* sin, const uint64_t* kc,  \
                                                 const uint64_t* vc, const int* pos, const int* cap, T* q_out,  \
                                                 int nh, int nkv, int hd) {                                     \
        rope_kv_write<T>(qkv, cos, sin, kc, vc, pos, cap, q_out, nh, nkv, hd);                                 \
    }                                                                                                           \
    extern "C" __global__ void attention_decode_##S(const T* q, const uint64_t* kc, const uint64_t* vc,         \
                                                    const int* pos, const int* cap, float* partial,             \
                                                    unsigned* done, T* out, int nh, int nkv, int hd,            \
                                                    float scale, int lane_warps) {                              \
        attention_decode<T>(q, kc, vc, pos, cap, partial, done, out, nh, nkv, hd, scale, lane_warps);           \
    }                                                                                                           \
    extern "C" __global__ void route_experts_##S(const T* x, const T* delta, const T* norm_w, float eps,        \
                                                 T* sum_out, T* normed_out, const float* gate, float* logits,   \
                                                 unsigned* done, int* ids, float* weights, int h, int e, int k, \
                                                 float scaling, int norm_topk) {                                \
        route_experts<T>(x, delta, norm_w, eps, sum_out, normed_out, gate, logits, done, ids, weights, h, e, k, \
                         scaling, norm_topk);                                                                   \
    }                                                                                                           \
    extern "C" __global__ void moe_gate_up_by_slot_##S(const T* x, const T* w, const int* ids, T* act,         \
                                                       int n_slots, int k, int h, int inter, const T* shared_w, \
                                                       int shared_inter, T* shared_act, int tokens) {           \
        moe_gate_up<T, Dense<T>, MOE_DECODE_SLOTS>(x, w, ids, act, n_slots, k, h, inter, true, shared_w, shared_inter,    \
                                         shared_act, tokens);                                                   \
    }                                                                                                           \
    extern "C" __global__ void moe_down_by_slot_##S(const T* act, const T* w, const int* ids,                   \
                                                    const float* weights, float* y, int n_slots, int h,         \
                                                    int inter, const T* shared_act, const T* shared_w,          \
                                                    int shared_inter, float* shared_y, int tokens) {            \
        moe_down<T, Dense<T>, MOE_DECODE_SLOTS>(act, w, ids, weights, y, n_slots, h, inter, true, shared_act, shared_w,   \
                                      shared_inter, shared_y, tokens);                                          \
    }                                                                                                           \
    extern "C" __global__ void moe_gate_up_by_expert_##S(const T* x, const T* w, const int* ids, T* act,       \
                                                         int n_slots, int k, int h, int inter,                  \
                                                         const T* shared_w, int shared_inter, T* shared_act,    \
                                                         int tokens) {                                          \
        moe_gate_up<T, Dense<T>, MOE_PREFILL_SLOTS>(x, w, ids, act, n_slots, k, h, inter, false, shared_w, shared_inter,  \
                                          shared_act, tokens);                                                  \
    }                                                                                                           \
    extern "C" __global__ void moe_down_by_expert_##S(const T* act, const T* w, const int* ids,                 \
                                                      const float* weights, float* y, int n_slots, int h,       \
                                                      int inter, const T* shared_act, const T* shared_w,        \
                                                      int shared_inter, float* shared_y, int tokens) {          \
        moe_down<T, Dense<T>, MOE_PREFILL_SLOTS>(act, w, ids, weights, y, n_slots, h, inter, false, shared_act, shared_w, \
                                       shared_inter, shared_y, tokens);                                         \
    }                                                                                                           \
    extern "C" __global__ void linear_rows_##S(const T* x, const T* norm_w, float eps, const T* w, T* out,      \
                                               int rows, int n, int k) {                                        \
        linear_rows<T, Dense<T>>(x, norm_w, eps, w, out, rows, n, k);                                                     \
    }                                                                                                           \
    extern "C" __global__ void moe_combine_##S(const float* y, const float* shared, const T* x, T* x_out, int k,\
                                               int h) { moe_combine<T>(y, shared, x, x_out, k, h); }            \
    extern "C" __global__ void silu_mul_##S(const T* gate_up, T* out, int inter) {                              \
        silu_mul<T>(gate_up, out, inter);                                                                       \
    }                                                                                                           \
    extern "C" __global__ void greedy_pick_##S(const T* logits, const int* bans, const int* n_bans,            \
                                               int max_bans, float* values, int* indices, unsigned* done,       \
                                               int* out, int vocab) {                                           \
        greedy_pick<T>(logits, bans, n_bans, max_bans, values, indices, done, out, vocab);                      \
    }

// The kernels that read weights, for int8 rows (`_int8_` names): the same arguments, each weight pointer to
// int8 rows, routed experts stacked; and the rows dequantized to T.
#define INSTANTIATE_INT8(T, S)                                                                                     \
    extern "C" __global__ void __launch_bounds__(MOE_THREADS, 3)                                                   \
        moe_gate_up_by_slot_int8_##S(const T* x, Int8::Experts w, const int* ids, T* act, int n_slots, int k,      \
                                     int h, int inter, Int8::Row shared_w, int shared_inter, T* shared_act,        \
                                     int tokens) {                                                                 \
        moe_gate_up<T, Int8, MOE_DECODE_SLOTS>(x, w, ids, act, n_slots, k, h, inter, true, shared_w,               \
                                               shared_inter, shared_act, tokens);                                  \
    }                                                                                                              \
    extern "C" __global__ void moe_down_by_slot_int8_##S(const T* act, Int8::Experts w, const int* ids,            \
                                                         const float* weights, float* y, int n_slots, int h,       \
                                                         int inter, const T* shared_act, Int8::Row shared_w,       \
                                                         int shared_inter, float* shared_y, int tokens) {          \
        moe_down<T, Int8, MOE_DECODE_SLOTS>(act, w, ids, weights, y, n_slots, h, inter, true, shared_act,          \
                                            shared_w, shared_inter, shared_y, tokens);                             \
    }                                                                                                              \
    extern "C" __global__ void __launch_bounds__(MOE_THREADS, 3)                                                   \
        moe_gate_up_by_expert_int8_##S(const T* x, Int8::Experts w, const int* ids, T* act, int n_slots, int k,    \
                                       int h, int inter, Int8::Row shared_w, int shared_inter, T* shared_act,      \
                                       int tokens) {                                                               \
        moe_gate_up<T, Int8, MOE_PREFILL_SLOTS>(x, w, ids, act, n_slots, k, h, inter, false, shared_w,             \
                                                shared_inter, shared_act, tokens);                                 \
    }                                                                                                              \
    extern "C" __global__ void moe_down_by_expert_int8_##S(const T* act, Int8::Experts w, const int* ids,          \
                                                           const float* weights, float* y, int n_slots, int h,     \
                                                           int inter, const T* shared_act, Int8::Row shared_w,     \
                                                           int shared_inter, float* shared_y, int tokens) {        \
        moe_down<T, Int8, MOE_PREFILL_SLOTS>(act, w, ids, weights, y, n_slots, h, inter, false, shared_act,        \
                                             shared_w, shared_inter, shared_y, tokens);                            \
    }                                                                                                              \
    extern "C" __global__ void linear_rows_int8_##S(const T* x, const T* norm_w, float eps, Int8::Row w, T* out,   \
                                                    int rows, int n, int k) {                                      \
        linear_rows<T, Int8>(x, norm_w, eps, w, out, rows, n, k);                                                  \
    }                                                                                                              \
    extern "C" __global__ void dequantize_int8_##S(const uint8_t* w, T* out, size_t rows, int k) {                 \
        dequantize_int8<T>(w, out, rows, k);                                                                       \
    }

INSTANTIATE(float, f32)
INSTANTIATE(bf16, bf16)
INSTANTIATE_INT8(float, f32)
INSTANTIATE_INT8(bf16, bf16)
