// The decode step's attention: each row's query against its sequence's key/value cache, split over the
// positions.

#pragma once

#include "common.cuh"

// Split-K decode attention. Grid (B, nh, ATTN_MAX_SPLITS) for few rows, (B, nh, fewer) for many (see
// attention_decode), up to ATTN_WARPS warps a block. A split covers `split_chunk` consecutive positions
// (ATTN_MIN_CHUNK, more only past 64 of them). Within a warp, hd/8 lanes hold one position (8 dims each, one
// 16-byte load of k and of v). A split's positions are dealt to `lane_warps` · 256/hd lane groups, group v taking
// positions start + v, start + v + groups, ..., and each keeps an online softmax (max, sum, weighted values) in
// f32. With 16 warps a split of 64 positions takes two steps at hd 128 (few sequences: the latency of each block
// matters); with 4 warps, eight (many: blocks enough to hide it). `lane_warps` is a multiple of the block's
// warps, each of whose lane groups runs lane_warps / warps of them in turn: with lane_warps = ATTN_WARPS
// whatever the warps, the states and their merge are the same for every batch size, so a row's attention does
// not depend on the rows beside it. The block merges them into
// `partial[((b·nh + h)·ATTN_MAX_SPLITS + split)·(hd + 2)]` as [max, sum, acc[hd]]. The split that finishes a
// (row, head) last (counted in `done`, reset for the next launch) merges the splits into out (B, nh·hd).
#define ATTN_WARPS 16
#define ATTN_MAX_HEAD_DIM 256
#define ATTN_MIN_CHUNK 64
#define ATTN_MAX_SPLITS 64
// Positions a lane group requests before it takes the first of them, where rows are many: its loads overlap,
// and the online softmax still takes the positions one by one in the same order. Two cover a 64-position
// split's turn at hd 128.
#define ATTN_AHEAD 2
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

// The merge's scratch and its result. At file scope, a kernel has one of each however many instances of
// attention_split it holds; declared in the template, each instance had its own, and the blocks of many rows
// lost their place on the SM to a copy they never use.
__shared__ float attn_scratch[ATTN_MERGE_SCRATCH];
__shared__ float attn_merged[ATTN_MAX_HEAD_DIM];

// One split of (row, head): its positions' online softmax, merged into its state in `partial`; the split that
// arrives last merges the row's.
template <typename T, int AHEAD>
__device__ void attention_split(const T* q, const uint64_t* k_cache, const uint64_t* v_cache, const int* cap,
                                float* partial, unsigned* done, T* out, int nh, int nkv, int hd, float scale,
                                int lane_warps, int row, int head, int split, int len, int chunk, int live) {
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
    float* scratch = attn_scratch;
    float* merged = attn_merged;
    const int stride = hd + 2;
    for (int turn = 0; turn < turns; ++turn) {
        // The warp's first lane group this turn: p - group is the same for every lane of the warp, so its
        // lanes take the same number of steps and the shuffles below see them all.
        const int first = (warp * turns + turn) * groups;
        float acc[8] = {0.0f};
        float m = -INFINITY, l = 0.0f;
        for (int p0 = start + first + group; p0 - group < end; p0 += AHEAD * all_groups) {
            Raw8<T> keys[AHEAD] = {}, values[AHEAD] = {};
#pragma unroll
            for (int a = 0; a < AHEAD; ++a) {
                const int p = p0 + a * all_groups;
                if (p < end) { fetch8(K + (size_t)p * hd, keys[a]); fetch8(V + (size_t)p * hd, values[a]); }
            }
#pragma unroll
            for (int a = 0; a < AHEAD; ++a) {
                const int p = p0 + a * all_groups;
                if (p - group >= end) break;
                const bool here = p < end;
                float kv[8], vv[8];
                unpack8(keys[a], kv);
                unpack8(values[a], vv);
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
    if (threadIdx.x == 0) {
        split_state[0] = block.max;
        split_state[1] = block.sum;
    }
    if (!last_to_arrive(&done[head_row], live)) return;
    const float* head_states = partial + head_row * ATTN_MAX_SPLITS * stride;
    const Softmax total = merge_states([&](int i, int j) { return __ldcg(head_states + i * stride + j); }, live,
                                       hd, scratch, merged);
    for (int d = threadIdx.x; d < hd; d += blockDim.x) out[head_row * hd + d] = from_float<T>(merged[d] / total.sum);
}

// Grid (B, nh, splits): a block takes splits blockIdx.z, blockIdx.z + gridDim.z, ... of its (row, head). Where
// rows are many, fewer blocks than ATTN_MAX_SPLITS, so that no block is placed only to find its split past the
// sequence's end; a split's sums are the same whichever block takes it.
template <typename T>
__device__ void attention_decode(const T* q, const uint64_t* k_cache, const uint64_t* v_cache, const int* pos,
                                 const int* cap, float* partial, unsigned* done, T* out, int nh, int nkv, int hd,
                                 float scale, int lane_warps) {
    const int row = blockIdx.x, head = blockIdx.y;
    const int len = pos[row] + 1;
    const int chunk = split_chunk(len);
    const int live = (len + chunk - 1) / chunk;
    if (gridDim.z >= ATTN_MAX_SPLITS) {
        // Few rows: a block a split, each position loaded as it is taken (what the latency of one page wants).
        if (blockIdx.z < live)
            attention_split<T, 1>(q, k_cache, v_cache, cap, partial, done, out, nh, nkv, hd, scale, lane_warps,
                                  row, head, blockIdx.z, len, chunk, live);
        return;
    }
    for (int split = blockIdx.z; split < live; split += gridDim.z)
        attention_split<T, ATTN_AHEAD>(q, k_cache, v_cache, cap, partial, done, out, nh, nkv, hd, scale,
                                       lane_warps, row, head, split, len, chunk, live);
}
