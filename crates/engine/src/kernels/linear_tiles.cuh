// The linear layers of a decode step on tensor cores, summed the same way whatever the batch size.
//
// out (B, N) = bf16(x · Wᵀ), x (B, K) bf16, W (N, K) bf16 or int8 rows. The weights are mma's M side, 16 rows a
// warp; the rows of x are its N side, 8 a tile and up to TILE_PAGES a block (a block's last tile padded with its
// first row, whose extra results are never stored). K is summed in a fixed order: the TILE_QUARTERS warps of a
// row group take the 64-wide K blocks q, q + 4, q + 8, … each into its own accumulators, and their four partial
// sums are added in warp order. Nothing in that order depends on B, and an mma's output column depends on its
// own column of B alone, so a row of out is the same whatever rows run beside it (Sums::BatchInvariant), and
// the weights are read once for up to TILE_PAGES rows. Up to FEW_PAGES rows (a step of a few pages) take one
// tile and hold their weights several K blocks ahead (FewPages); the sums are the same.
//
// Each lane loads its 16 consecutive weights of a K block (two 16-byte loads in bf16, one in int8) straight
// into mma A fragments: K position kb + 16t + 4s + i (t = lane % 4, i < 4) is slot i of mma step s, a
// permutation of K inside each 64-wide block. x is read in the same permutation, so each output is a sum of
// the same products; only the order of the f32 sums differs from K order. int8 weights become bf16 in
// registers, scale · q rounded as dequantize_int8 rounds, so their sums are those of the dequantized weights.

#pragma once

#include "common.cuh"
#include "mma.cuh"
#include "norm.cuh"
#include "weights.cuh"

#define TILE_PAGES 64                          // rows of x a block takes (8 mma tiles)
#define TILE_QUARTERS 4                        // warps of a row group, each a quarter of the K blocks
#define TILE_GROUPS 2                          // row groups (16 weight rows each) a block
#define TILE_THREADS (32 * TILE_QUARTERS * TILE_GROUPS)
#define TILE_K 64                              // K per block step of a warp

// A lane's 16 weights of a K block as 8 bf16 pairs, K order.
struct Pairs16 {
    uint32_t w[8];
};

__device__ __forceinline__ void load_pairs(const bf16* row, int c, int, Pairs16& out) {
    const uint4 lo = *reinterpret_cast<const uint4*>(row + c);
    const uint4 hi = *reinterpret_cast<const uint4*>(row + c + 8);
    out.w[0] = lo.x; out.w[1] = lo.y; out.w[2] = lo.z; out.w[3] = lo.w;
    out.w[4] = hi.x; out.w[5] = hi.y; out.w[6] = hi.z; out.w[7] = hi.w;
}

// A lane's 16 weights of a K block as loaded, turned into bf16 pairs only when multiplied: loads requested
// blocks ahead are not waited for by their conversion.
template <typename W>
struct BlockWeights;

template <>
struct BlockWeights<Dense<bf16>> {
    Pairs16 raw;
    __device__ __forceinline__ void fetch(const bf16* row, int c, int k) { load_pairs(row, c, k, raw); }
    __device__ __forceinline__ Pairs16 pairs() const { return raw; }
};

// c a multiple of 16: the 16 weights share one scale.
template <>
struct BlockWeights<Int8> {
    Int8::Held raw;
    __device__ __forceinline__ void fetch(const uint8_t* row, int c, int k) { Int8::fetch(row, c, k, raw); }
    __device__ __forceinline__ Pairs16 pairs() const {
        float v[16];
        Int8::unpack(raw, v);
        Pairs16 out;
#pragma unroll
        for (int i = 0; i < 8; ++i) {
            const __nv_bfloat162 pair = __floats2bfloat162_rn(v[2 * i], v[2 * i + 1]);
            out.w[i] = *reinterpret_cast<const uint32_t*>(&pair);
        }
        return out;
    }
};

__device__ __forceinline__ void load_pairs(const uint8_t* row, int c, int k, Pairs16& out) {
    BlockWeights<Int8> held;
    held.fetch(row, c, k);
    out = held.pairs();
}

// 16 floats of a row normed into shared memory (bf16 values, as the norm rounds them) as 8 bf16 pairs.
__device__ __forceinline__ void load_pairs(const float* row, int c, int, Pairs16& out) {
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        const float4 v = *reinterpret_cast<const float4*>(row + c + 4 * i);
        const __nv_bfloat162 a = __floats2bfloat162_rn(v.x, v.y), b = __floats2bfloat162_rn(v.z, v.w);
        out.w[2 * i] = *reinterpret_cast<const uint32_t*>(&a);
        out.w[2 * i + 1] = *reinterpret_cast<const uint32_t*>(&b);
    }
}

// acc += one K block of the lane's weight rows (lo: row g, hi: row g + 8) times one tile of x.
__device__ __forceinline__ void multiply_pairs(const Pairs16& lo, const Pairs16& hi, const Pairs16& x, float acc[4]) {
#pragma unroll
    for (int s = 0; s < 4; ++s) {
        const uint32_t a[4] = {lo.w[2 * s], hi.w[2 * s], lo.w[2 * s + 1], hi.w[2 * s + 1]};
        const uint32_t b[2] = {x.w[2 * s], x.w[2 * s + 1]};
        mma_bf16_16x8x16(acc, a, b);
    }
}

// acc[nt] += the K block at c of this lane's weight rows (lo: row g, hi: row g + 8) times x's rows of tile nt
// (x_rows[nt] points at the lane's row g of it). x is loaded X_AHEAD tiles at a time, all requested before
// any is multiplied: one L2 round trip per X_AHEAD tiles rather than per tile.
#define X_AHEAD 4
template <typename X>
__device__ __forceinline__ void multiply_block(const Pairs16& lo, const Pairs16& hi, const X x_rows[8],
                                               int tiles, int c, float acc[8][4]) {
#pragma unroll
    for (int nt0 = 0; nt0 < 8; nt0 += X_AHEAD) {
        if (nt0 >= tiles) break;
        Pairs16 xv[X_AHEAD];
#pragma unroll
        for (int i = 0; i < X_AHEAD; ++i)
            if (nt0 + i < tiles) load_pairs(x_rows[nt0 + i], c, 0, xv[i]);
#pragma unroll
        for (int i = 0; i < X_AHEAD; ++i) {
            if (nt0 + i >= tiles) break;
            multiply_pairs(lo, hi, xv[i], acc[nt0 + i]);
        }
    }
}

// A block's rows of x one after another from `x`, K apart: a plain layer's (bf16), or rows normed into shared
// memory (float).
template <typename X>
struct Consecutive {
    typedef const X* Row;
    const X* x;
    int k;
    __device__ __forceinline__ Row operator()(int page) const { return x + (size_t)page * k; }
};

// The quarters' partial sums a block hands to its first quarter.
typedef float QuarterSums[TILE_GROUPS][TILE_QUARTERS - 1][8][4][32];

// Where a block's warp works: its 16 weight rows, its quarter of the K blocks, the block's rows of x.
struct TilePlace {
    int group, quarter, g, t;
    int row0;   // the warp's first weight row
    int page0;  // the block's first row of x
    int pages;  // and how many
};

// `first_row`: the first of the 16 weight rows this warp's row group takes (the output layout's first_row).
__device__ __forceinline__ TilePlace tile_place(int rows, int first_row) {
    TilePlace p;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    p.group = warp / TILE_QUARTERS;
    p.quarter = warp % TILE_QUARTERS;
    p.g = lane >> 2;
    p.t = lane & 3;
    p.row0 = first_row;
    p.page0 = blockIdx.y * TILE_PAGES;
    p.pages = min(TILE_PAGES, rows - p.page0);
    return p;
}

// The quarters' partial sums of the block's first `tiles` tiles added in warp order by the first quarter, into
// its acc. Every thread of the block takes part.
template <int TILES>
__device__ void add_quarters(const TilePlace& p, float acc[TILES][4], int tiles, QuarterSums& partial) {
    const int lane = threadIdx.x & 31;
    if (p.quarter > 0)
#pragma unroll
        for (int nt = 0; nt < TILES; ++nt)
#pragma unroll
            for (int q = 0; q < 4; ++q) partial[p.group][p.quarter - 1][nt][q][lane] = acc[nt][q];
    __syncthreads();
    if (p.quarter > 0) return;
#pragma unroll
    for (int nt = 0; nt < TILES; ++nt) {
        if (nt >= tiles) break;
#pragma unroll
        for (int q = 0; q < 4; ++q)
#pragma unroll
            for (int i = 0; i < TILE_QUARTERS - 1; ++i) acc[nt][q] += partial[p.group][i][nt][q][lane];
    }
}

// acc[nt][q] of a first-quarter lane: weight row g (q < 2) or g + 8, row 2t + q % 2 of tile nt of x.
__device__ __forceinline__ int sum_weight_row(const TilePlace& p, int q) { return p.row0 + p.g + (q >> 1) * 8; }
__device__ __forceinline__ int sum_page(const TilePlace& p, int nt, int q) { return nt * 8 + 2 * p.t + (q & 1); }

// A plain linear layer's outputs: out (B, N), block x taking weight rows 32x .. 32x + 31.
struct RowsOut {
    bf16* out;
    int n;

    __device__ __forceinline__ int first_row(int group) const { return (blockIdx.x * TILE_GROUPS + group) * 16; }

    // Asks L2 for the block's weight rows.
    template <typename W>
    __device__ __forceinline__ void prefetch(typename W::Row w, int n, int k) const {
        const int first = first_row(0);
        prefetch_l2_block(W::row(w, first, k), (size_t)min(TILE_GROUPS * 16, n - first) * W::row_bytes(k));
    }

    template <int TILES>
    __device__ void store(const TilePlace& p, float acc[TILES][4], int tiles, QuarterSums& partial) const {
        add_quarters<TILES>(p, acc, tiles, partial);
        if (p.quarter > 0) return;
#pragma unroll
        for (int nt = 0; nt < TILES; ++nt) {
            if (nt >= tiles) break;
#pragma unroll
            for (int q = 0; q < 4; ++q) {
                const int r = sum_weight_row(p, q), page = sum_page(p, nt, q);
                if (r < n && page < p.pages) out[(size_t)(p.page0 + page) * n + r] = __float2bfloat16(acc[nt][q]);
            }
        }
    }
};

// A warp's K loop for a block of up to TILE_PAGES rows of x: the next K block's weights are requested before
// this one is multiplied (the first before the wait for the kernel ahead), x's tiles as multiply_block reads
// them.
template <typename W>
struct ManyPages {
    Pairs16 lo, hi;

    // Requests the warp's first K block (at c) of its weight rows.
    __device__ __forceinline__ void request(typename W::Row lo_row, typename W::Row hi_row, int c, int k) {
        if (c >= k) return;
        load_pairs(lo_row, c, k, lo);
        load_pairs(hi_row, c, k, hi);
    }

    // The K loop over the block's rows of x (Rows: bf16 rows, or floats normed into shared memory, or a tile's
    // gathered slots), then the quarters' sums stored.
    template <typename Rows, typename Out>
    __device__ void multiply_and_store(const TilePlace& p, const Rows& x, typename W::Row lo_row, typename W::Row hi_row,
                                       QuarterSums& partial, const Out& out, int k) {
        const int tiles = (p.pages + 7) / 8;
        // Rows of x past the block's read its first: their results are dropped.
        typename Rows::Row x_rows[8];
#pragma unroll
        for (int nt = 0; nt < 8; ++nt) {
            const int page = nt * 8 + p.g;
            x_rows[nt] = x(page < p.pages ? page : 0);
        }
        float acc[8][4];
#pragma unroll
        for (int nt = 0; nt < 8; ++nt)
#pragma unroll
            for (int q = 0; q < 4; ++q) acc[nt][q] = 0.0f;
        const int step = TILE_K * TILE_QUARTERS;
        for (int c = p.quarter * TILE_K + 16 * p.t; c < k; c += step) {
            Pairs16 next_lo, next_hi;
            const bool more = c + step < k;
            if (more) {
                load_pairs(lo_row, c + step, k, next_lo);
                load_pairs(hi_row, c + step, k, next_hi);
            }
            multiply_block(lo, hi, x_rows, tiles, c, acc);
            if (more) {
                lo = next_lo;
                hi = next_hi;
            }
        }
        out.template store<8>(p, acc, tiles, partial);
    }
};

// A warp's K loop for a block of up to 8 rows of x (one tile), as a decode step of a few pages has: the first
// FEW_DEPTH K blocks of the warp's weights are requested before the wait for the kernel ahead (a 1,280-wide
// layer's five: all of them), and each block's x with them, so the loop waits for memory about once rather
// than once a block. Each output is the same sum as ManyPages gives it: the same mma over the same fragments,
// in the same order.
#define FEW_PAGES 8
#define FEW_DEPTH 5
template <typename W, int DEPTH = FEW_DEPTH>
struct FewPages {
    BlockWeights<W> lo[DEPTH], hi[DEPTH];

    __device__ __forceinline__ void request(typename W::Row lo_row, typename W::Row hi_row, int c, int k) {
        const int step = TILE_K * TILE_QUARTERS;
#pragma unroll
        for (int d = 0; d < DEPTH; ++d)
            if (c + d * step < k) {
                lo[d].fetch(lo_row, c + d * step, k);
                hi[d].fetch(hi_row, c + d * step, k);
            }
    }

    template <typename Rows, typename Out>
    __device__ void multiply_and_store(const TilePlace& p, const Rows& x, typename W::Row lo_row, typename W::Row hi_row,
                                       QuarterSums& partial, const Out& out, int k) {
        const typename Rows::Row x_row = x(p.g < p.pages ? p.g : 0);
        const int step = TILE_K * TILE_QUARTERS, first = p.quarter * TILE_K + 16 * p.t;
        Pairs16 xv[DEPTH];
#pragma unroll
        for (int d = 0; d < DEPTH; ++d)
            if (first + d * step < k) load_pairs(x_row, first + d * step, k, xv[d]);
        float acc[1][4] = {{0.0f, 0.0f, 0.0f, 0.0f}};
        for (int c = first; c < k; c += DEPTH * step) {
#pragma unroll
            for (int d = 0; d < DEPTH; ++d) {
                const int at = c + d * step;
                if (at >= k) break;
                multiply_pairs(lo[d].pairs(), hi[d].pairs(), xv[d], acc[0]);
                const int next = at + DEPTH * step;
                if (next < k) {
                    lo[d].fetch(lo_row, next, k);
                    hi[d].fetch(hi_row, next, k);
                    load_pairs(x_row, next, k, xv[d]);
                }
            }
        }
        out.template store<1>(p, acc, 1, partial);
    }
};

// A MoE layer's output not yet added to the residual x (moe_combine's inputs: the routed experts' y (B·top_k, K)
// and the shared experts' (B, K), f32), for a projection whose blocks norm its rows: they add it themselves, and
// block 0 writes the sums (the next residual) to `sum_out`. y null: x is the rows.
struct MoeRows {
    const float* y;
    const float* shared;
    int top_k;
    bf16* sum_out;
};

// Rows page0 .. page0 + pages of x (or of x plus `moe`), RMSNorm-ed into `normed`, a row of k floats each.
__device__ void norm_block_rows(const bf16* x, const MoeRows& moe, const bf16* norm_w, float eps, float* normed,
                                int page0, int pages, int k) {
    const bf16* block_x = x + (size_t)page0 * k;
    for (int b = 0; b < pages; ++b) {
        float* cache = normed + (size_t)b * k;
        if (!moe.y) {
            normed_row(block_x, (const bf16*)nullptr, norm_w, (bf16*)nullptr, (bf16*)nullptr, cache, b, k, eps);
            continue;
        }
        const MoeSum<bf16> sum = {moe.y + (size_t)page0 * moe.top_k * k,
                                  moe.shared ? moe.shared + (size_t)page0 * k : nullptr, block_x, moe.top_k};
        bf16* sum_out = blockIdx.x == 0 ? moe.sum_out + (size_t)page0 * k : nullptr;
        normed_source(sum, norm_w, sum_out, (bf16*)nullptr, cache, b, k, eps);
    }
}

// Grid (ceil(N / (16 · TILE_GROUPS)), ceil(B / TILE_PAGES)), block TILE_THREADS, K a multiple of TILE_K;
// Pages: ManyPages, or FewPages where B ≤ FEW_PAGES; Out: where the sums go and which weight rows a block
// takes (RowsOut for a plain layer). With `norm_w`, x is first RMSNorm-ed (each block normalises its rows
// itself into dynamic shared memory, a float per value, while its first weights are on their way), which saves
// the norm its own launch; the normed values are those of the rms_norm kernel, so the sums are the same either
// way. With `moe`, the rows normed are x plus a MoE layer's output, which saves moe_combine its launch too.
template <typename W, typename Pages, typename Out>
__device__ void linear_tiles(const bf16* x, const bf16* norm_w, float eps, typename W::Row w, const Out& out,
                             int rows, int n, int k, const MoeRows& moe = {}) {
    extern __shared__ float normed[];
    __shared__ QuarterSums partial;
    const TilePlace p = tile_place(rows, out.first_row((threadIdx.x >> 5) / TILE_QUARTERS));
    // Weight rows past N read row N - 1: their results are dropped.
    const typename W::Row lo_row = W::row(w, min(p.row0 + p.g, n - 1), k);
    const typename W::Row hi_row = W::row(w, min(p.row0 + p.g + 8, n - 1), k);
    // The weights need nothing an earlier kernel writes: the block asks for all of its rows, and loads its first
    // blocks of them, before it waits for the kernel ahead (launched as its dependent, it may be placed while
    // that kernel still runs), so their trip from memory overlaps the wait.
    out.template prefetch<W>(w, n, k);
    Pages pages;
    pages.request(lo_row, hi_row, p.quarter * TILE_K + 16 * p.t, k);
    follow_previous_kernel();
    const bf16* block_x = x + (size_t)p.page0 * k;
    if (!norm_w) {
        pages.multiply_and_store(p, Consecutive<bf16>{block_x, k}, lo_row, hi_row, partial, out, k);
        return;
    }
    norm_block_rows(x, moe, norm_w, eps, normed, p.page0, p.pages, k);
    pages.multiply_and_store(p, Consecutive<float>{normed, k}, lo_row, hi_row, partial, out, k);
}
