// A decode step's routed and shared experts on the linear tiles (linear_tiles.cuh), for a step of a few pages:
// the expert's weight rows are mma's M side, loaded by each lane straight into registers, a warp's quarter of K
// requested blocks ahead (FewPages), and a tile of up to 8 of the expert's slots is the N side, their rows of x
// gathered through the plan (moe_plan.cuh). A slot's sums are the tiles' sums, in one order whatever the slots
// beside it, and moe_prefill.cu's decode kernels (the Quarters order), which take the steps of more rows, sum
// in the same order: Sums::BatchInvariant at every batch size. (The grouped GEMMs stream the weights through
// shared memory, a 16-slot tile on mma's M side; for a step of a page they read them at 1.7–1.9 TB/s, these at
// 2.66.)
//
// Launch: grid (x, routed_tiles<SLOTS>(T·k, E) + S · parts), TILE_THREADS, no dynamic shared memory; gate/up
// x = I / (TILE_GROUPS · 8) and parts = ceil(I_s / I), down x = ceil(H / (TILE_GROUPS · 16)) and parts = 1. Row
// tile y is a routed expert's (locate_row_tile) or, past those, one of the S = ceil(T / SLOTS) tiles of tokens
// for the shared experts (none where the layer has none). SLOTS: 8 (FewPages). H, I and I_s multiples of
// TILE_K.

#pragma once

#include "linear_tiles.cuh"
#include "moe_plan.cuh"

// Block y's slots: a routed expert's (known only once the plan is read) or tokens of the shared experts' (known
// at once, so their weights are requested before the wait for the kernel ahead).
// The shared experts may be wider than the grid's x spans (gate/up's x spans the routed experts' I): their
// tokens then take `parts` tiles, part p covering the block columns from p · gridDim.x.
struct ExpertTile {
    bool shared;
    int first, rows, part;
};

template <int SLOTS>
__device__ __forceinline__ ExpertTile tile_of_block(int n_slots, int n_experts, int tokens, bool has_shared,
                                                    int parts) {
    const int routed = routed_tiles<SLOTS>(n_slots, n_experts);
    if ((int)blockIdx.y < routed) return {false, 0, 0, 0};
    const int shared = (int)blockIdx.y - routed, first = shared / parts * SLOTS;
    return {true, first, has_shared ? max(0, min(SLOTS, tokens - first)) : 0, shared % parts};
}

// The routed tile's slots from the plan, its expert's weights (E stacked matrices of `rows` rows).
template <typename W, int SLOTS>
__device__ __forceinline__ typename W::Row routed_tile(const int* offsets, int n_experts, typename W::Experts w,
                                                      int rows, int k, ExpertTile& tile) {
    const RowTile located = locate_row_tile<SLOTS>(offsets, n_experts, blockIdx.y);
    tile.first = located.first;
    tile.rows = located.rows;
    return W::expert(w, located.expert, rows, k);
}

// The tile's slots: routed, order[first + i] (token slot / k); shared, token first + i.
struct TileSlots {
    const int* order;
    int first;
    bool shared;
    __device__ __forceinline__ int operator()(int i) const { return shared ? first + i : order[first + i]; }
};

// The tile's rows of x: slot i's row `width` wide, at row slot / k.
struct SlotRows {
    typedef const bf16* Row;
    const bf16* x;
    TileSlots slots;
    int k, width;
    __device__ __forceinline__ Row operator()(int i) const { return x + (size_t)(slots(i) / k) * width; }
};

// A warp's place in an expert tile: its quarter of K, its weight rows from first_row, the tile's slots.
__device__ __forceinline__ TilePlace expert_place(int first_row, int slots) {
    TilePlace p = tile_place(slots, first_row);
    p.page0 = 0;
    p.pages = slots;
    return p;
}

// Gate/up's sums: a row group's 16 weight rows are gate rows j .. j + 7 (lo) and their up rows (hi), so that a
// lane's sums hold gate and up of one j for slots 2t and 2t + 1, and the SwiGLU happens in registers:
// act[slot, j] = T(T(silu(T(g))) · T(u)), as silu(gate) * up on bf16 tensors.
struct SwigluOut {
    bf16* act;
    TileSlots slots;
    int width;

    template <int TILES>
    __device__ void store(const TilePlace& p, float acc[TILES][4], int tiles, QuarterSums& partial) const {
        add_quarters<TILES>(p, acc, tiles, partial);
        if (p.quarter > 0) return;
        const int j = p.row0 + p.g;
#pragma unroll
        for (int nt = 0; nt < TILES; ++nt) {
            if (nt >= tiles) break;
#pragma unroll
            for (int q = 0; q < 2; ++q) {
                const int page = sum_page(p, nt, q);
                if (page >= p.pages) continue;
                const float gate = round_to<bf16>(silu(round_to<bf16>(acc[nt][q])));
                act[(size_t)slots(page) * width + j] = __float2bfloat16(gate * round_to<bf16>(acc[nt][q + 2]));
            }
        }
    }
};

// Down's sums, kept in f32 for the combine: routed slots y[slot, r] = f32(T(act[slot] · down[r])) ·
// weight[slot], the shared tile's tokens shared_y[token, r] unweighted (`weights` null).
struct DownOut {
    float* y;
    const float* weights;
    TileSlots slots;
    int h;

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
                if (r >= h || page >= p.pages) continue;
                const int slot = slots(page);
                const float v = round_to<bf16>(acc[nt][q]);
                y[(size_t)slot * h + r] = weights ? v * weights[slot] : v;
            }
        }
    }
};

// act (T·k, I) of the routed slots and shared_act (T, I_s) of the tokens: see SwigluOut. Block x takes j from
// x · TILE_GROUPS · 8, a row group 8 of them; grid x = I / (TILE_GROUPS · 8), and each shared tile of tokens
// ceil(I_s / I) row tiles (ExpertTile's parts). w (E, 2I, H), shared_w (2I_s, H) or null.
template <typename W, typename Pages, int SLOTS>
__device__ void expert_gate_up_tiles(const bf16* x, typename W::Experts w, typename W::Row shared_w,
                                     const int* offsets, const int* order, bf16* act, bf16* shared_act, int k,
                                     int h, int inter, int shared_inter, int n_experts, int tokens) {
    __shared__ QuarterSums partial;
    const int parts = max(1, (shared_inter + inter - 1) / inter);
    ExpertTile tile = tile_of_block<SLOTS>(tokens * k, n_experts, tokens, shared_w != nullptr, parts);
    const int width = tile.shared ? shared_inter : inter;
    const int j0 = (tile.part * gridDim.x + blockIdx.x) * TILE_GROUPS * 8;
    if (j0 >= width || (tile.shared && tile.rows == 0)) return;
    TilePlace p = expert_place(j0 + ((threadIdx.x >> 5) / TILE_QUARTERS) * 8, 0);
    const int c = p.quarter * TILE_K + 16 * p.t;
    Pages pages;
    const auto request = [&](typename W::Row m) {
        pages.request(W::row(m, p.row0 + p.g, h), W::row(m, width + p.row0 + p.g, h), c, h);
    };
    typename W::Row matrix = shared_w;
    if (tile.shared) request(matrix);
    follow_previous_kernel();
    if (!tile.shared) {
        matrix = routed_tile<W, SLOTS>(offsets, n_experts, w, 2 * inter, h, tile);
        if (tile.rows == 0) return;
        request(matrix);
    }
    p.pages = tile.rows;
    const TileSlots slots = {order, tile.first, tile.shared};
    const SlotRows rows = {x, slots, tile.shared ? 1 : k, h};
    const SwigluOut out = {tile.shared ? shared_act : act, slots, width};
    pages.multiply_and_store(p, rows, W::row(matrix, p.row0 + p.g, h), W::row(matrix, width + p.row0 + p.g, h),
                             partial, out, h);
}

// y (T·k, H) of the routed slots, weighted, and shared_y (T, H) of the tokens: see DownOut. Block x takes output
// rows from x · TILE_GROUPS · 16. w (E, H, I), shared_w (H, I_s) or null; act (T·k, I), shared_act (T, I_s).
template <typename W, typename Pages, int SLOTS>
__device__ void expert_down_tiles(const bf16* act, typename W::Experts w, typename W::Row shared_w,
                                  const int* offsets, const int* order, const float* weights, float* y,
                                  const bf16* shared_act, float* shared_y, int h, int inter, int shared_inter,
                                  int n_experts, int tokens, int k) {
    __shared__ QuarterSums partial;
    ExpertTile tile = tile_of_block<SLOTS>(tokens * k, n_experts, tokens, shared_w != nullptr, 1);
    if (tile.shared && tile.rows == 0) return;
    const int width = tile.shared ? shared_inter : inter;
    TilePlace p = expert_place((blockIdx.x * TILE_GROUPS + (threadIdx.x >> 5) / TILE_QUARTERS) * 16, 0);
    // Weight rows past H read row H - 1: their results are dropped.
    const int lo = min(p.row0 + p.g, h - 1), hi = min(p.row0 + p.g + 8, h - 1);
    const int c = p.quarter * TILE_K + 16 * p.t;
    Pages pages;
    const auto request = [&](typename W::Row m) {
        pages.request(W::row(m, lo, width), W::row(m, hi, width), c, width);
    };
    typename W::Row matrix = shared_w;
    if (tile.shared) request(matrix);
    follow_previous_kernel();
    if (!tile.shared) {
        matrix = routed_tile<W, SLOTS>(offsets, n_experts, w, h, inter, tile);
        if (tile.rows == 0) return;
        request(matrix);
    }
    p.pages = tile.rows;
    const TileSlots slots = {order, tile.first, tile.shared};
    const SlotRows rows = {tile.shared ? shared_act : act, slots, 1, width};
    const DownOut out = {tile.shared ? shared_y : y, tile.shared ? nullptr : weights, slots, h};
    pages.multiply_and_store(p, rows, W::row(matrix, lo, width), W::row(matrix, hi, width), partial, out, width);
}
