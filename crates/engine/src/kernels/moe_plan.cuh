// The plan of a MoE layer's grouped GEMMs: its slots grouped by expert. The prompt's own kernel (moe_prefill.cu's
// moe_plan) and a decode step's router (moe_decode.cuh's route_experts) make it alike.

#pragma once

#include "common.cuh"

#define MOE_MAX_EXPERTS 1024
#define FULL_MASK 0xffffffffu

__device__ __forceinline__ int warp_inclusive_scan(int v) {
    const int lane = threadIdx.x & 31;
#pragma unroll
    for (int o = 1; o < 32; o <<= 1) {
        const int t = __shfl_up_sync(FULL_MASK, v, o);
        if (lane >= o) v += t;
    }
    return v;
}

// Exclusive prefix sum over the block (one value per thread, blockDim.x a multiple of 32); *total gets the sum.
__device__ int block_exclusive_scan(int v, int* total) {
    __shared__ int warp_totals[32];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
    const int inclusive = warp_inclusive_scan(v);
    if (lane == 31) warp_totals[warp] = inclusive;
    __syncthreads();
    if (warp == 0) {
        const int t = warp_inclusive_scan(lane < warps ? warp_totals[lane] : 0);
        if (lane < warps) warp_totals[lane] = t;
    }
    __syncthreads();
    *total = warp_totals[warps - 1];
    return (warp > 0 ? warp_totals[warp - 1] : 0) + inclusive - v;
}

// atomicAdd(&counters[expert], 1) for every slot, PLAN_UNROLL loads of ids in flight per thread (their latency
// is what there is to hide); with `order` given, each slot is stored at the position its atomic returned.
// (Same-expert lanes could share one atomic, but finding them costs more than the conflicts do, even when
// most tokens pick the same experts.)
#define PLAN_UNROLL 4
__device__ void claim_slots(const int* ids, int n_slots, int* counters, int* order) {
    const int lane = threadIdx.x & 31;
    const int stride = blockDim.x * PLAN_UNROLL;
    for (int base = (threadIdx.x & ~31) * PLAN_UNROLL; base < n_slots; base += stride) {
        int slot[PLAN_UNROLL], expert[PLAN_UNROLL];
#pragma unroll
        for (int u = 0; u < PLAN_UNROLL; ++u) {
            slot[u] = base + u * 32 + lane;
            expert[u] = slot[u] < n_slots ? __ldcg(ids + slot[u]) : -1;
        }
#pragma unroll
        for (int u = 0; u < PLAN_UNROLL; ++u) {
            if (expert[u] < 0) continue;
            const int at = atomicAdd(&counters[expert[u]], 1);
            if (order) order[at] = slot[u];
        }
    }
}

// Groups the slots by expert: offsets[e]..offsets[e+1] index into `order`, which lists slot ids of expert e
// (in no particular order: each slot's output is computed on its own, so the results do not depend on it).
// Count per expert, prefix-sum the counts, then scatter through per-expert cursors. Every thread of the block
// takes part; n_experts ≤ blockDim.x and ≤ MOE_MAX_EXPERTS. ids are read past L1: in the router another block
// wrote them.
__device__ void plan_slots(const int* ids, int n_slots, int n_experts, int* offsets /*E+1*/, int* order /*n_slots*/) {
    __shared__ int cursor[MOE_MAX_EXPERTS];
    for (int e = threadIdx.x; e < n_experts; e += blockDim.x) cursor[e] = 0;
    __syncthreads();
    claim_slots(ids, n_slots, cursor, nullptr);
    __syncthreads();
    const int count = threadIdx.x < n_experts ? cursor[threadIdx.x] : 0;
    int total;
    const int start = block_exclusive_scan(count, &total);  // its barriers keep `count` read before the write
    if (threadIdx.x < n_experts) {
        offsets[threadIdx.x] = start;
        cursor[threadIdx.x] = start;
    }
    if (threadIdx.x == 0) offsets[n_experts] = total;
    __syncthreads();
    claim_slots(ids, n_slots, cursor, order);
}

// ---------------------------------------------------------------------------------------------------------
// Which slots a block serves

// Row tile `tile` of the flattened list: experts in index order, ceil(count / BM) tiles each. Its slots are
// order[first .. first + rows); rows = 0 past the last tile.
struct RowTile {
    int expert;
    int first;
    int rows;
};

// Every warp works the tile out for itself (a warp-wide scan of the tile counts), so no shared memory or
// barrier is needed; offsets is tiny and cached.
template <int BM>
__device__ RowTile locate_row_tile(const int* offsets, int n_experts, int tile) {
    const int lane = threadIdx.x & 31;
    int before = 0;  // tiles of the experts already scanned
    for (int e0 = 0; e0 < n_experts; e0 += 32) {
        const int e = e0 + lane;
        const int start = e < n_experts ? offsets[e] : 0;
        const int count = e < n_experts ? offsets[e + 1] - start : 0;
        const int tiles = (count + BM - 1) / BM;
        const int inclusive = warp_inclusive_scan(tiles);
        const int first_tile = before + inclusive - tiles;
        const unsigned hit = __ballot_sync(FULL_MASK, tile >= first_tile && tile < first_tile + tiles);
        if (hit) {
            const int src = __ffs(hit) - 1;
            const int t = tile - __shfl_sync(FULL_MASK, first_tile, src);
            const int expert_start = __shfl_sync(FULL_MASK, start, src);
            const int expert_count = __shfl_sync(FULL_MASK, count, src);
            return {e0 + src, expert_start + t * BM, min(BM, expert_count - t * BM)};
        }
        before += __shfl_sync(FULL_MASK, inclusive, 31);
    }
    return {0, 0, 0};
}

// The routed experts' row tiles of BM slots a launch provides for: at most ceil(slots / BM) + E (each expert's
// slots in tiles), and at most one a slot; grouped_experts.rs's `row_tiles` counts them alike.
template <int BM>
__device__ __forceinline__ int routed_tiles(int n_slots, int n_experts) {
    return min((n_slots + BM - 1) / BM + n_experts, n_slots);
}
