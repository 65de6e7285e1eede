// The language model's decode step as a handful of fused kernels (one token per sequence, B sequences).
//
// Every kernel rounds to the activation type T exactly where the reference implementation does (a bf16
// matmul output, a bf16 residual add, RMSNorm's cast before its weight), so the fast path differs from the
// straightforward one only in the order of f32 sums. Each is instantiated for float and bf16.
//
// Key/value caches are per sequence: `k_cache[b]` / `v_cache[b]` point at that sequence's (kv_heads, cap[b],
// head_dim) buffer of the layer, and `pos[b]` is where this step's key/value goes (its length before the step).

#include <cuda_bf16.h>
#include <stdint.h>

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

__device__ __forceinline__ float silu(float x) { return x / (1.0f + expf(-x)); }

// The embedding rows of the fed-back tokens: out[b] = table[tokens[b]], one row per block.
template <typename T>
__device__ void embed_rows(const T* table, const int* tokens, T* out, int h) {
    const size_t row = blockIdx.x;
    const T* src = table + (size_t)tokens[row] * h;
    for (int i = threadIdx.x; i < h; i += blockDim.x) out[row * h + i] = src[i];
}

// RMSNorm of one row per block: T(T(x · rsqrt(mean(x²) + eps)) · w). With `delta`, the row is first
// x + delta (rounded to T, the residual add), which is also written to `sum_out`.
template <typename T>
__device__ void rms_norm(const T* x, const T* delta, const T* w, T* sum_out, T* out, int h, float eps) {
    const size_t row = blockIdx.x;
    x += row * h;
    out += row * h;
    if (delta) { delta += row * h; sum_out += row * h; }
    float ss = 0.0f;
    for (int i = threadIdx.x; i < h; i += blockDim.x) {
        float v = to_float(x[i]);
        if (delta) {
            const T s = from_float<T>(v + to_float(delta[i]));
            sum_out[i] = s;
            v = to_float(s);
        }
        ss += v * v;
    }
    const float inv = 1.0f / sqrtf(block_sum(ss) / h + eps);
    for (int i = threadIdx.x; i < h; i += blockDim.x) {
        const float v = to_float(delta ? sum_out[i] : x[i]);
        out[i] = from_float<T>(round_to<T>(v * inv) * to_float(w[i]));
    }
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

// Split-K decode attention, part one. Grid (B, nh, splits), 4 warps a block: each split of the sequence
// keeps an online softmax (max, sum, weighted values) in f32 and writes it to
// `partial[((b·nh + h)·splits + split)·(hd + 2)]` as [max, sum, acc[hd]].
#define ATTN_WARPS 4
#define ATTN_MAX_HEAD_DIM 256
template <typename T>
__device__ void attention_split(const T* q, const uint64_t* k_cache, const uint64_t* v_cache, const int* pos,
                                const int* cap, float* partial, int nh, int nkv, int hd, float scale) {
    const int row = blockIdx.x, head = blockIdx.y, split = blockIdx.z, splits = gridDim.z;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int len = pos[row] + 1;
    const int chunk = (len + splits - 1) / splits;
    const int start = split * chunk, end = min(len, start + chunk);
    const int kv_head = head / (nh / nkv);
    const T* K = reinterpret_cast<const T*>(k_cache[row]) + (size_t)kv_head * cap[row] * hd;
    const T* V = reinterpret_cast<const T*>(v_cache[row]) + (size_t)kv_head * cap[row] * hd;
    const T* qr = q + ((size_t)row * nh + head) * hd;
    constexpr int PER = ATTN_MAX_HEAD_DIM / 32;
    float qv[PER], acc[PER];
#pragma unroll
    for (int j = 0; j < PER; ++j) {
        const int d = lane + 32 * j;
        qv[j] = d < hd ? to_float(qr[d]) : 0.0f;
        acc[j] = 0.0f;
    }
    float m = -INFINITY, l = 0.0f;
    for (int p = start + warp; p < end; p += ATTN_WARPS) {
        const T* k = K + (size_t)p * hd;
        float dot = 0.0f;
#pragma unroll
        for (int j = 0; j < PER; ++j) {
            const int d = lane + 32 * j;
            if (d < hd) dot += qv[j] * to_float(k[d]);
        }
        const float score = warp_sum(dot) * scale;
        const float m_new = fmaxf(m, score);
        const float correction = expf(m - m_new), e = expf(score - m_new);
        l = l * correction + e;
        const T* v = V + (size_t)p * hd;
#pragma unroll
        for (int j = 0; j < PER; ++j) {
            const int d = lane + 32 * j;
            if (d < hd) acc[j] = acc[j] * correction + e * to_float(v[d]);
        }
        m = m_new;
    }
    __shared__ float warp_m[ATTN_WARPS], warp_l[ATTN_WARPS];
    __shared__ float warp_acc[ATTN_WARPS][ATTN_MAX_HEAD_DIM];
    if (lane == 0) { warp_m[warp] = m; warp_l[warp] = l; }
#pragma unroll
    for (int j = 0; j < PER; ++j) {
        const int d = lane + 32 * j;
        if (d < hd) warp_acc[warp][d] = acc[j];
    }
    __syncthreads();
    float* out = partial + (((size_t)row * nh + head) * splits + split) * (hd + 2);
    float block_m = -INFINITY;
    for (int w = 0; w < ATTN_WARPS; ++w) block_m = fmaxf(block_m, warp_m[w]);
    for (int d = threadIdx.x; d < hd; d += blockDim.x) {
        float a = 0.0f;
        for (int w = 0; w < ATTN_WARPS; ++w)
            if (warp_l[w] > 0.0f) a += warp_acc[w][d] * expf(warp_m[w] - block_m);
        out[2 + d] = a;
    }
    if (threadIdx.x == 0) {
        float block_l = 0.0f;
        for (int w = 0; w < ATTN_WARPS; ++w)
            if (warp_l[w] > 0.0f) block_l += warp_l[w] * expf(warp_m[w] - block_m);
        out[0] = block_m;
        out[1] = block_l;
    }
}

// Part two: grid (B, nh), hd threads; merges the splits into out (B, nh·hd) in T.
template <typename T>
__device__ void attention_combine(const float* partial, T* out, int nh, int hd, int splits) {
    const int row = blockIdx.x, head = blockIdx.y, d = threadIdx.x;
    if (d >= hd) return;
    const float* p = partial + ((size_t)row * nh + head) * splits * (hd + 2);
    float m = -INFINITY;
    for (int s = 0; s < splits; ++s)
        if (p[s * (hd + 2) + 1] > 0.0f) m = fmaxf(m, p[s * (hd + 2)]);
    float l = 0.0f, a = 0.0f;
    for (int s = 0; s < splits; ++s) {
        const float* part = p + s * (hd + 2);
        if (part[1] > 0.0f) {
            const float w = expf(part[0] - m);
            l += part[1] * w;
            a += part[2 + d] * w;
        }
    }
    out[((size_t)row * nh + head) * hd + d] = from_float<T>(a / l);
}

// MoE routing, one block per token: router logits in f32 (x · gateᵀ, gate (E, H) f32), softmax, the top k
// with ties to the lower index, then sorted by expert index: the reference adds the experts' outputs in
// index order. Weights are the probabilities (renormalised over the k if asked) times `scaling`.
#define ROUTE_MAX_K 16
template <typename T>
__device__ void route_experts(const T* x, const float* gate, int* ids, float* weights, int h, int e, int k,
                              float scaling, int norm_topk) {
    extern __shared__ float smem[];
    float* xs = smem;
    float* probs = smem + h;
    const size_t row = blockIdx.x;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, warps = blockDim.x / 32;
    for (int i = threadIdx.x; i < h; i += blockDim.x) xs[i] = to_float(x[row * h + i]);
    __syncthreads();
    for (int ex = warp; ex < e; ex += warps) {
        float dot = 0.0f;
        for (int i = lane; i < h; i += 32) dot += xs[i] * gate[(size_t)ex * h + i];
        dot = warp_sum(dot);
        if (lane == 0) probs[ex] = dot;
    }
    __syncthreads();
    if (warp != 0) return;
    float mx = -INFINITY;
    for (int i = lane; i < e; i += 32) mx = fmaxf(mx, probs[i]);
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

// The slots (token·k + r) routed to expert `e`, gathered by the whole block into shared memory. Their
// order does not matter: each slot's output is computed on its own.
#define MOE_MAX_SLOTS 8192
__device__ int gather_slots(const int* ids, int n_slots, int e, int* slots) {
    __shared__ int count;
    if (threadIdx.x == 0) count = 0;
    __syncthreads();
    for (int s = threadIdx.x; s < n_slots; s += blockDim.x)
        if (ids[s] == e) {
            const int at = atomicAdd(&count, 1);
            if (at < MOE_MAX_SLOTS) slots[at] = s;
        }
    __syncthreads();
    return min(count, MOE_MAX_SLOTS);
}

// Routed experts, first half. Grid (ceil(I / warps), E), one warp per intermediate row j of expert e: the
// gate row j and up row I + j of the stacked (E, 2I, H) weights are read once for all slots routed to e.
// act[slot, j] = T(T(silu(T(gate))) · T(up)), as silu(gate) * up on T tensors.
#define MOE_GROUP 8
template <typename T>
__device__ void moe_gate_up(const T* x, const T* w, const int* ids, T* act, int n_slots, int k, int h, int inter) {
    __shared__ int slots[MOE_MAX_SLOTS];
    const int e = blockIdx.y;
    const int count = gather_slots(ids, n_slots, e, slots);
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int j = blockIdx.x * (blockDim.x / 32) + warp;
    if (count == 0 || j >= inter) return;
    const T* wg = w + ((size_t)e * 2 * inter + j) * h;
    const T* wu = wg + (size_t)inter * h;
    for (int g = 0; g < count; g += MOE_GROUP) {
        const int n = min(MOE_GROUP, count - g);
        float ag[MOE_GROUP] = {0}, au[MOE_GROUP] = {0};
        for (int c = lane * 8; c < h; c += 256) {
            float vg[8], vu[8];
            load8(wg + c, vg);
            load8(wu + c, vu);
#pragma unroll
            for (int s = 0; s < MOE_GROUP; ++s) {
                if (s >= n) break;
                float xv[8];
                load8(x + (size_t)(slots[g + s] / k) * h + c, xv);
#pragma unroll
                for (int q = 0; q < 8; ++q) { ag[s] += vg[q] * xv[q]; au[s] += vu[q] * xv[q]; }
            }
        }
#pragma unroll
        for (int s = 0; s < MOE_GROUP; ++s) {
            if (s >= n) break;
            const float gs = warp_sum(ag[s]), us = warp_sum(au[s]);
            if (lane == 0) {
                const float gate = round_to<T>(silu(round_to<T>(gs)));
                act[(size_t)slots[g + s] * inter + j] = from_float<T>(gate * round_to<T>(us));
            }
        }
    }
}

// Routed experts, second half. Grid (ceil(H / warps), E), one warp per output row r of expert e's down
// (E, H, I): y[slot, r] = f32(T(act[slot] · down[e, r])) · weight[slot], kept in f32 for the combine.
template <typename T>
__device__ void moe_down(const T* act, const T* w, const int* ids, const float* weights, float* y, int n_slots,
                         int h, int inter) {
    __shared__ int slots[MOE_MAX_SLOTS];
    const int e = blockIdx.y;
    const int count = gather_slots(ids, n_slots, e, slots);
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int r = blockIdx.x * (blockDim.x / 32) + warp;
    if (count == 0 || r >= h) return;
    const T* wd = w + ((size_t)e * h + r) * inter;
    for (int g = 0; g < count; g += MOE_GROUP) {
        const int n = min(MOE_GROUP, count - g);
        float a[MOE_GROUP] = {0};
        for (int c = lane * 8; c < inter; c += 256) {
            float vw[8];
            load8(wd + c, vw);
#pragma unroll
            for (int s = 0; s < MOE_GROUP; ++s) {
                if (s >= n) break;
                float av[8];
                load8(act + (size_t)slots[g + s] * inter + c, av);
#pragma unroll
                for (int q = 0; q < 8; ++q) a[s] += vw[q] * av[q];
            }
        }
#pragma unroll
        for (int s = 0; s < MOE_GROUP; ++s) {
            if (s >= n) break;
            const float sum = warp_sum(a[s]);
            if (lane == 0) {
                const int slot = slots[g + s];
                y[(size_t)slot * h + r] = round_to<T>(sum) * weights[slot];
            }
        }
    }
}

// The MoE output and the layer's residual, one row per block: moe = T(Σ_r y[b·k + r]) in slot (= expert
// index) order from zero, ffn = T(moe + shared), x_out = T(x + ffn). `shared` may be null; with `x` null,
// x_out = ffn.
template <typename T>
__device__ void moe_combine(const float* y, const T* shared, const T* x, T* x_out, int k, int h) {
    const size_t row = blockIdx.x;
    for (int i = threadIdx.x; i < h; i += blockDim.x) {
        float acc = 0.0f;
        for (int r = 0; r < k; ++r) acc += y[(row * k + r) * h + i];
        float ffn = round_to<T>(acc);
        if (shared) ffn = round_to<T>(ffn + to_float(shared[row * h + i]));
        x_out[row * h + i] = x ? from_float<T>(to_float(x[row * h + i]) + ffn) : from_float<T>(ffn);
    }
}

// SwiGLU activation of a fused gate/up projection (B, 2I) → (B, I): T(T(silu(gate)) · up).
template <typename T>
__device__ void silu_mul(const T* gate_up, T* out, int inter) {
    const size_t row = blockIdx.x;
    for (int i = threadIdx.x; i < inter; i += blockDim.x) {
        const float g = round_to<T>(silu(to_float(gate_up[row * 2 * inter + i])));
        out[row * inter + i] = from_float<T>(g * to_float(gate_up[row * 2 * inter + inter + i]));
    }
}

// Greedy choice, one row per block: the first index of the largest logit, skipping NaN and the row's
// banned ids (bans[b·max_bans ..], n_bans[b] of them, set to NaN first). -1 when nothing is left.
template <typename T>
__device__ void greedy_pick(T* logits, const int* bans, const int* n_bans, int max_bans, int* out, int vocab) {
    const size_t row = blockIdx.x;
    T* lr = logits + row * vocab;
    for (int i = threadIdx.x; i < n_bans[row]; i += blockDim.x) lr[bans[row * max_bans + i]] = from_float<T>(NAN);
    __syncthreads();
    float best = -INFINITY;
    int best_i = vocab;
    for (int i = threadIdx.x; i < vocab; i += blockDim.x) {
        const float v = to_float(lr[i]);
        if (!isnan(v) && (best_i == vocab || v > best)) { best = v; best_i = i; }
    }
    __shared__ float sb[32];
    __shared__ int si[32];
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    for (int o = 16; o > 0; o >>= 1) {
        const float ob = __shfl_xor_sync(0xffffffffu, best, o);
        const int oi = __shfl_xor_sync(0xffffffffu, best_i, o);
        if (oi < vocab && (best_i == vocab || ob > best || (ob == best && oi < best_i))) { best = ob; best_i = oi; }
    }
    if (lane == 0) { sb[warp] = best; si[warp] = best_i; }
    __syncthreads();
    if (threadIdx.x == 0) {
        for (int w = 1; w < (int)blockDim.x / 32; ++w)
            if (si[w] < vocab && (best_i == vocab || sb[w] > best || (sb[w] == best && si[w] < best_i))) {
                best = sb[w];
                best_i = si[w];
            }
        out[row] = best_i == vocab ? -1 : best_i;
    }
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
    extern "C" __global__ void attention_split_##S(const T* q, const uint64_t* kc, const uint64_t* vc,          \
                                                   const int* pos, const int* cap, float* partial, int nh,      \
                                                   int nkv, int hd, float scale) {                              \
        attention_split<T>(q, kc, vc, pos, cap, partial, nh, nkv, hd, scale);                                   \
    }                                                                                                           \
    extern "C" __global__ void attention_combine_##S(const float* partial, T* out, int nh, int hd, int splits) { \
        attention_combine<T>(partial, out, nh, hd, splits);                                                     \
    }                                                                                                           \
    extern "C" __global__ void route_experts_##S(const T* x, const float* gate, int* ids, float* weights, int h, \
                                                 int e, int k, float scaling, int norm_topk) {                  \
        route_experts<T>(x, gate, ids, weights, h, e, k, scaling, norm_topk);                                   \
    }                                                                                                           \
    extern "C" __global__ void moe_gate_up_##S(const T* x, const T* w, const int* ids, T* act, int n_slots,     \
                                               int k, int h, int inter) {                                       \
        moe_gate_up<T>(x, w, ids, act, n_slots, k, h, inter);                                                   \
    }                                                                                                           \
    extern "C" __global__ void moe_down_##S(const T* act, const T* w, const int* ids, const float* weights,     \
                                            float* y, int n_slots, int h, int inter) {                          \
        moe_down<T>(act, w, ids, weights, y, n_slots, h, inter);                                                \
    }                                                                                                           \
    extern "C" __global__ void moe_combine_##S(const float* y, const T* shared, const T* x, T* x_out, int k,    \
                                               int h) { moe_combine<T>(y, shared, x, x_out, k, h); }            \
    extern "C" __global__ void silu_mul_##S(const T* gate_up, T* out, int inter) {                              \
        silu_mul<T>(gate_up, out, inter);                                                                       \
    }                                                                                                           \
    extern "C" __global__ void greedy_pick_##S(T* logits, const int* bans, const int* n_bans, int max_bans,     \
                                               int* out, int vocab) {                                           \
        greedy_pick<T>(logits, bans, n_bans, max_bans, out, vocab);                                             \
    }

INSTANTIATE(float, f32)
INSTANTIATE(bf16, bf16)
