// The decode step's attention: each row's query against its sequence's key/value cache, split over the
// positions.

#pragma once

#include "async_copy.cuh"
#include "common.cuh"

// Split-K decode attention: grid (B, nh, splits), ATTN_WARPS warps a block, a block taking splits blockIdx.z,
// blockIdx.z + gridDim.z, ... of its (row, head). A split covers split_chunk(len) consecutive positions
// (ATTN_MIN_CHUNK, more only past 4096 of them), a tile of at most ATTN_TILE at a time. Within a warp, hd/8
// lanes form a lane group that holds one position (8 dims each, 16 bytes of k and of v). The block's lane
// groups deal a tile's positions out in turn, group g taking g, g + groups, ..., and every group requests all
// of its keys (into registers) and values (copied into shared memory, where each lane later reads only what it
// copied) before it uses any: a tile costs one trip to memory. The tile's scores go to shared memory, where
// every warp reads the same max and sum; each group weighs its own values, and the groups' sums are added in
// group order. The order of every sum depends on hd and the sequence's length alone, so a row's attention
// depends neither on the rows beside it nor on the grid. The split's state [max, sum, acc[hd]] goes to
// `partial[((b·nh + h)·ATTN_MAX_SPLITS + split)·(hd + 2)]`; the split that finishes a (row, head) last
// (counted in `done`, reset for the next launch) merges the splits into out (B, nh·hd).
#define ATTN_WARPS 4
#define ATTN_THREADS (ATTN_WARPS * 32)
// Blocks an SM holds: 64 registers a thread, a tile's keys among them, and 26 KB of shared memory each. With
// the values in registers as well, a thread took 117 and an SM four blocks (H200, 2026-11-28).
#define ATTN_MIN_BLOCKS 8
#define ATTN_MAX_HEAD_DIM 256
#define ATTN_MIN_CHUNK 64
#define ATTN_MAX_SPLITS 64
#define ATTN_TILE 64
// Lane groups of a block: 32 · ATTN_WARPS lanes, hd/8 a group; their sums take groups · hd = 1024 floats.
#define ATTN_GROUP_SUMS (ATTN_WARPS * 32 * 8)
__device__ __forceinline__ int split_chunk(int len) {
    return max((len + ATTN_MAX_SPLITS - 1) / ATTN_MAX_SPLITS, ATTN_MIN_CHUNK);
}

// Positions of a tile one lane group takes: 8 in bf16 (32 registers of keys), 4 in f32, so that a tile of 64
// at hd 128 is one round of loads. The tile's values, tile · hd ≤ groups · P · hd elements, take at most
// ATTN_VALUE_BYTES.
#define ATTN_VALUE_BYTES (16 * 1024)
template <typename T>
__host__ __device__ constexpr int group_positions() {
    return 16 / sizeof(T);
}

// Merges online-softmax states i < n (n ≤ ATTN_MAX_SPLITS), each [max, sum, acc[hd]] read through `value(i,
// j)`, into `acc` (shared, hd floats); returns {max, sum} of the merged state. `scratch`: ATTN_MERGE_SCRATCH
// floats. The first warp takes the max and the sum, a lane the states lane, lane + 32; then each dim's
// weighted values are summed in MERGE_PARTS interleaved parts side by side, and the parts added in order. The
// order of every sum depends on n and hd alone.
#define MERGE_PARTS 4
#define ATTN_MERGE_SCRATCH (2 * ATTN_MAX_SPLITS + MERGE_PARTS * ATTN_MAX_HEAD_DIM)
struct Softmax {
    float max, sum;
};

template <typename Value>
__device__ Softmax merge_states(Value value, int n, int hd, float* scratch, float* acc) {
    float* weight = scratch;
    float* sum = scratch + ATTN_MAX_SPLITS;
    float* parts = scratch + 2 * ATTN_MAX_SPLITS;
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

__shared__ float attn_scores[ATTN_TILE];
__shared__ float attn_group_sums[ATTN_GROUP_SUMS];
__shared__ float attn_scratch[ATTN_MERGE_SCRATCH];
__shared__ float attn_merged[ATTN_MAX_HEAD_DIM];
// The tile's values, in flight while its scores are made.
__shared__ uint4 attn_values[ATTN_VALUE_BYTES / sizeof(uint4)];

// The tile's max and the sum of its exp(score - m_new), m_new = max(m, the tile's max), the same in every
// warp: each reads all `n` (≤ ATTN_TILE) scores, a lane two of them, and reduces them in lane order.
__device__ __forceinline__ Softmax tile_softmax(float m, int n) {
    const int lane = threadIdx.x % 32;
    const float s0 = lane < n ? attn_scores[lane] : -INFINITY;
    const float s1 = lane + 32 < n ? attn_scores[lane + 32] : -INFINITY;
    const float m_new = fmaxf(m, warp_max(fmaxf(s0, s1)));
    const float e0 = lane < n ? expf(s0 - m_new) : 0.0f;
    const float e1 = lane + 32 < n ? expf(s1 - m_new) : 0.0f;
    return {m_new, warp_sum(e0 + e1)};
}

// One split of (row, head): its positions' softmax a tile at a time, its state written to `partial`; the split
// that arrives last merges the row's.
template <typename T>
__device__ void attention_split(const float qv[8], const T* K, const T* V, float* partial, unsigned* done,
                                T* out, int hd, int head_row, int split, int len, int chunk, int live) {
    constexpr int P = group_positions<T>();
    const int lane = threadIdx.x % 32;
    const int group_lanes = hd / 8, groups = blockDim.x / group_lanes;
    const int group = threadIdx.x / group_lanes, dim = (lane % group_lanes) * 8;
    const int tile = min(ATTN_TILE, groups * P);
    const int start = split * chunk, end = min(len, start + chunk);
    // This lane's 8 dims of the tile's values.
    const T* values = reinterpret_cast<const T*>(attn_values) + dim;
    float acc[8] = {0.0f};
    float m = -INFINITY, l = 0.0f;
    for (int t0 = start; t0 < end; t0 += tile) {
        const int n = min(tile, end - t0);
        Raw8<T> keys[P] = {};
#pragma unroll
        for (int k = 0; k < P; ++k) {
            const int i = group + k * groups;
            if (i < n) {
                fetch8(K + (size_t)(t0 + i) * hd, keys[k]);
                const T* v = V + (size_t)(t0 + i) * hd;
#pragma unroll
                for (int c = 0; c < (int)sizeof(Raw8<T>) / 16; ++c)
                    cp_async_16(smem_address(values + (size_t)i * hd) + c * 16, v + c * 16 / sizeof(T));
            }
        }
        cp_async_commit();
#pragma unroll
        for (int k = 0; k < P; ++k) {
            const int i = group + k * groups;
            float kv[8];
            unpack8(keys[k], kv);
            float dot = 0.0f;
#pragma unroll
            for (int j = 0; j < 8; ++j) dot += qv[j] * kv[j];
            // Every lane shuffles, whether its position is in the tile or not.
            for (int o = group_lanes / 2; o > 0; o >>= 1) dot += __shfl_xor_sync(0xffffffffu, dot, o);
            if (i < n && lane % group_lanes == 0) attn_scores[i] = dot;
        }
        __syncthreads();
        const Softmax t = tile_softmax(m, n);
        const float correction = expf(m - t.max);
        l = l * correction + t.sum;
#pragma unroll
        for (int j = 0; j < 8; ++j) acc[j] *= correction;
        // This lane's own copies: no other lane's need waiting for.
        cp_async_wait<0>();
#pragma unroll
        for (int k = 0; k < P; ++k) {
            const int i = group + k * groups;
            if (i >= n) break;
            const float e = expf(attn_scores[i] - t.max);
            float vv[8];
            load8(values + (size_t)i * hd, vv);
#pragma unroll
            for (int j = 0; j < 8; ++j) acc[j] += e * vv[j];
        }
        m = t.max;
        // The next tile's scores overwrite these.
        __syncthreads();
    }
    float* mine = attn_group_sums + group * hd + dim;
#pragma unroll
    for (int j = 0; j < 8; ++j) mine[j] = acc[j];
    __syncthreads();
    float* split_state = partial + ((size_t)head_row * ATTN_MAX_SPLITS + split) * (hd + 2);
    for (int d = threadIdx.x; d < hd; d += blockDim.x) {
        float a = 0.0f;
        for (int g = 0; g < groups; ++g) a += attn_group_sums[g * hd + d];
        split_state[2 + d] = a;
    }
    if (threadIdx.x == 0) {
        split_state[0] = m;
        split_state[1] = l;
    }
    if (!last_to_arrive(&done[head_row], live)) return;
    const float* head_states = partial + (size_t)head_row * ATTN_MAX_SPLITS * (hd + 2);
    const Softmax total = merge_states([&](int i, int j) { return __ldcg(head_states + i * (hd + 2) + j); },
                                       live, hd, attn_scratch, attn_merged);
    for (int d = threadIdx.x; d < hd; d += blockDim.x)
        out[(size_t)head_row * hd + d] = from_float<T>(attn_merged[d] / total.sum);
}

// Grid (B, nh, splits): ATTN_MAX_SPLITS blocks per (row, head) for few rows, a block a split; fewer for many,
// so that no block is placed only to find its split past the sequence's end.
template <typename T>
__device__ void attention_decode(const T* q, const uint64_t* k_cache, const uint64_t* v_cache, const int* pos,
                                 const int* cap, float* partial, unsigned* done, T* out, int nh, int nkv, int hd,
                                 float scale) {
    const int row = blockIdx.x, head = blockIdx.y;
    // Read together: none of them waits for another.
    const int len = pos[row] + 1, capacity = cap[row];
    const uint64_t k_at = k_cache[row], v_at = v_cache[row];
    const int chunk = split_chunk(len);
    const int live = (len + chunk - 1) / chunk;
    if ((int)blockIdx.z >= live) return;
    const int dim = (threadIdx.x % (hd / 8)) * 8;
    const int kv_head = head / (nh / nkv), head_row = row * nh + head;
    const T* K = reinterpret_cast<const T*>(k_at) + (size_t)kv_head * capacity * hd + dim;
    const T* V = reinterpret_cast<const T*>(v_at) + (size_t)kv_head * capacity * hd + dim;
    float qv[8];
    load8(q + (size_t)head_row * hd + dim, qv);
#pragma unroll
    for (int j = 0; j < 8; ++j) qv[j] *= scale;
    for (int split = blockIdx.z; split < live; split += gridDim.z) {
        attention_split<T>(qv, K, V, partial, done, out, hd, head_row, split, len, chunk, live);
        // The next split's group sums overwrite these.
        __syncthreads();
    }
}
