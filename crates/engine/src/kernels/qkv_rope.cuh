// The decode step's fused q/k/v projection with its rotary embedding and cache write in the same kernel: the
// tiles of linear_tiles.cuh, whose sums go straight where attention reads them rather than to a (B, 3·H) row
// that a kernel of its own would rotate and copy.

#pragma once

#include "common.cuh"
#include "linear_tiles.cuh"

// Rotate-half RoPE of one pair (x1 at dim i, x2 at i + hd/2), in T as the straightforward path does it:
// x1·c − x2·s to dim i, x1·s + x2·c to dim i + hd/2. rope_kv_write and RopeOut share it, so the two give the
// same values.
template <typename T>
__device__ __forceinline__ T rotate_first(T x1, T x2, T c, T s) {
    return x1 * c - x2 * s;
}
template <typename T>
__device__ __forceinline__ T rotate_second(T x1, T x2, T c, T s) {
    return x1 * s + x2 * c;
}

// Row b's destination of head h of a q/k/v projection: q heads (h < nh) their place in q_out (B, nh, hd), k and v
// heads their position pos[b] in the layer's caches (k_cache[b] / v_cache[b]: (nkv, cap[b], hd)). rope_kv_write
// and RopeOut share it.
template <typename T>
__device__ __forceinline__ T* head_destination(int h, int b, T* q_out, const uint64_t* k_cache,
                                               const uint64_t* v_cache, const int* pos, const int* cap, int nh,
                                               int nkv, int hd) {
    if (h < nh) return q_out + ((size_t)b * nh + h) * hd;
    const bool key = h < nh + nkv;
    const int kv_head = key ? h - nh : h - nh - nkv;
    T* cache = reinterpret_cast<T*>(key ? k_cache[b] : v_cache[b]);
    return cache + ((size_t)kv_head * cap[b] + pos[b]) * hd;
}

// Where the fused projection's sums go: q heads rotated to q_out (B, nh, hd); k heads rotated and v heads as
// they are to row b's caches (k_cache[b] / v_cache[b]: (nkv, cap[b], hd)) at pos[b]; cos/sin (B, hd/2). Block
// x takes head x / (hd / 32) and its dims c·16 .. c·16 + 15 (c = x % (hd / 32)) of both halves: row group 0
// the first half's, group 1 the second's, so that each rotated pair meets in the block. hd a multiple of 32.
struct RopeOut {
    const bf16* cos;
    const bf16* sin;
    const uint64_t* k_cache;
    const uint64_t* v_cache;
    const int* pos;
    const int* cap;
    bf16* q_out;
    int nh, nkv, hd;

    __device__ __forceinline__ int head() const { return blockIdx.x / (hd / 32); }

    __device__ __forceinline__ int first_row(int group) const {
        return head() * hd + group * (hd / 2) + (blockIdx.x % (hd / 32)) * 16;
    }

    // Asks L2 for the block's two runs of 16 weight rows (N is a whole number of heads: no run is cut).
    template <typename W>
    __device__ __forceinline__ void prefetch(typename W::Row w, int, int k) const {
#pragma unroll
        for (int group = 0; group < TILE_GROUPS; ++group)
            prefetch_l2_block(W::row(w, first_row(group), k), (size_t)16 * W::row_bytes(k));
    }

    template <int TILES>
    __device__ void store(const TilePlace& p, float acc[TILES][4], int tiles, QuarterSums& partial) const {
        add_quarters<TILES>(p, acc, tiles, partial);
        // Each group's sums, rounded as the projection's output is, in the space the quarters' sums took: a lane
        // of group 1 holds the partner of the same lane's value in group 0.
        float(*halves)[8][4][32] = reinterpret_cast<float(*)[8][4][32]>(&partial[0][0][0][0][0]);
        const int lane = threadIdx.x & 31;
        __syncthreads();
        if (p.quarter == 0)
#pragma unroll
            for (int nt = 0; nt < TILES; ++nt) {
                if (nt >= tiles) break;
#pragma unroll
                for (int q = 0; q < 4; ++q) halves[p.group][nt][q][lane] = round_to<bf16>(acc[nt][q]);
            }
        __syncthreads();
        if (p.quarter > 0) return;
        const int half = hd / 2, h = head();
        const bool rotated = h < nh + nkv;
#pragma unroll
        for (int nt = 0; nt < TILES; ++nt) {
            if (nt >= tiles) break;
#pragma unroll
            for (int q = 0; q < 4; ++q) {
                const int page = sum_page(p, nt, q);
                if (page >= p.pages) continue;
                const int b = p.page0 + page;
                const int i = sum_weight_row(p, q) - h * hd - p.group * half;
                const bf16 x1 = __float2bfloat16(halves[0][nt][q][lane]);
                const bf16 x2 = __float2bfloat16(halves[1][nt][q][lane]);
                bf16 v = p.group == 0 ? x1 : x2;
                if (rotated) {
                    const bf16 c = cos[(size_t)b * half + i], s = sin[(size_t)b * half + i];
                    v = p.group == 0 ? rotate_first(x1, x2, c, s) : rotate_second(x1, x2, c, s);
                }
                head_destination(h, b, q_out, k_cache, v_cache, pos, cap, nh, nkv, hd)[p.group * half + i] = v;
            }
        }
    }
};
