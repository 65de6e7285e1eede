// The routed experts of the MoE layers during prefill, on tensor cores.
//
// Prefill routes T tokens to k experts each: T·k slots (slot s = token s / k, its (s % k)-th choice). Instead of
// one GEMV per slot, the slots are grouped by expert (moe_plan) and each expert's slots are multiplied by its
// weights as a small GEMM: blocks take a tile of one expert's slots × output columns (TileShape) and run bf16
// mma.sync (m16n8k16, f32 accumulators) over a cp.async pipeline. The slots' rows of x / act are gathered while
// they are copied into shared memory, so nothing is permuted in device memory. int8 weights (_int8) are read
// as int8 and turned into bf16 tiles in shared memory; the products are those of the dequantized weights.
//
// Rounding mirrors the reference model: each linear's output is rounded to bf16, silu's output too, and the
// product gate·up; only the order of the f32 sums differs from a straightforward dot product.
//
// Launch sequence (all on one stream, no host read-back):
//   moe_plan                 <<<1, MOE_PLAN_THREADS>>>
//   moe_gate_up_{grouped,narrow}_*  <<<(max(I, I_s) / (BN / 2), R + S), THREADS>>>
//   moe_down_{grouped,narrow}_*     <<<(ceil(H / BN), R + S), THREADS>>>
// with the tile shape's BM, BN and THREADS (Wide for _grouped_, Narrow for _narrow_). R = min(ceil(n_slots / BM) +
// E, n_slots) bounds the row tiles of all experts together (Σ ceil(count_e / BM)), and tiles past the real ones
// exit at once. With the layer's shared experts (I_s wide) given, S = ceil(T / BM) row tiles of tokens follow
// for them; else S = 0.
// H, I and I_s must be multiples of 64, n_experts at most MOE_MAX_EXPERTS.

#include "async_copy.cuh"
#include "common.cuh"
#include "mma.cuh"
#include "moe_plan.cuh"
#include "weights.cuh"

// A block's tile: BM slots × BN output columns, BK of the reduction per pipeline stage, STAGES stages. Each warp
// takes 32 output columns (gate/up's SwiGLU needs a warp's 16 gate columns and their 16 up columns together),
// and half of the slots where there are 64 or more. How K is summed is the order's (InOrder, Quarters below),
// not the shape's: in either order, the shapes give the same sums, bit for bit.
template <int BM_, int BN_, int BK_, int STAGES_>
struct TileShape {
    static constexpr int BM = BM_, BN = BN_, BK = BK_, STAGES = STAGES_;
    static constexpr int WARPS_M = BM >= 64 ? 2 : 1;
    static constexpr int WARPS_N = BN / 32;
    static constexpr int THREADS = 32 * WARPS_M * WARPS_N;
    static constexpr int WARP_ROWS = BM / WARPS_M;
    static constexpr int M_TILES = WARP_ROWS / 16;       // m16 pieces per warp
    static constexpr int CHUNKS = BK / 8;                // 16-byte chunks of a row per stage
    static constexpr int COPY_ROWS = THREADS / CHUNKS;   // rows one pass of the block's copies covers
    static constexpr int A_COPIES = BM / COPY_ROWS;
    static constexpr int B_COPIES = BN / COPY_ROWS;
    static constexpr int STAGE_ELEMS = (BM + BN) * BK;  // A then B of one pipeline stage
    static constexpr int STAGE_BYTES = 2 * STAGE_ELEMS;
    static constexpr int B_BYTES_AT = 2 * BM * BK;
    static_assert(BK == 32 || BK == 64, "stage_offset swizzles 64- and 128-byte rows");
    static_assert(BM % COPY_ROWS == 0 && BN % COPY_ROWS == 0, "whole passes of copies");
    static_assert(STAGES * STAGE_BYTES <= 48 * 1024, "static shared memory");
};

// Prompts: each expert's weights are read once per 128 slots. (A 64-slot tile with 4 stages and 3 blocks per SM
// measured no faster at T = 1131 and 15% slower at 16·1131: each expert's weights are read twice as often.)
typedef TileShape<128, 128, 32, 3> Wide;
// Decode steps, a few slots an expert: 16-slot tiles, and narrower column blocks with deeper stages, so a step's
// few experts are spread over many blocks with many bytes in flight.
typedef TileShape<16, 64, 64, 4> Narrow;

#define MOE_PLAN_THREADS 1024

// ---------------------------------------------------------------------------------------------------------
// Small helpers

__device__ __forceinline__ float round_bf16(float x) { return __bfloat162float(__float2bfloat16(x)); }

// bf16(bf16(silu(bf16(g))) · bf16(u)): silu(gate) * up on bf16 tensors.
__device__ __forceinline__ bf16 swiglu_bf16(float g, float u) {
    return __float2bfloat16(round_bf16(silu(round_bf16(g))) * round_bf16(u));
}

// ---------------------------------------------------------------------------------------------------------
// The plan: slots grouped by expert

// The slots grouped by expert (moe_plan.cuh's plan_slots), for a prompt: a decode step's router makes the plan
// itself (moe_decode.cuh's route_experts). Launch: grid 1, block MOE_PLAN_THREADS (1024), no dynamic shared
// memory; n_experts ≤ MOE_MAX_EXPERTS.
extern "C" __global__ void __launch_bounds__(MOE_PLAN_THREADS)
moe_plan(const int* ids, int n_slots, int n_experts, int* offsets /*E+1*/, int* order /*n_slots*/) {
    follow_previous_kernel();
    plan_slots(ids, n_slots, n_experts, offsets, order);
}

// ---------------------------------------------------------------------------------------------------------
// Which slots a block serves

// A layer's shared experts, run beside the routed ones as one more expert whose slots are the tokens (k = 1,
// weight 1), in the row tiles after the routed experts' (whose count is bounded by ceil(slots / BM) + E). As
// each kernel of the pair sees them: w its matrix, gate_up (2·inter, H) or down (H, inter), null where the
// layer has none or they run elsewhere; act (tokens, inter) bf16; y (tokens, H) f32 of bf16 values (down's).
template <typename W>
struct SharedExpert {
    const W* w;
    bf16* act;
    float* y;
    int inter;
};

#define SHARED_EXPERT -1

// Row tile blockIdx.y: a routed expert's (locate_row_tile) or, past those, the shared expert's (its expert is
// SHARED_EXPERT and its slots are tokens first .. first + rows). The routed experts have at most ceil(slots /
// BM) + E tiles, and at most one per slot (grouped_experts.rs's `row_tiles`): at one token 6 rather than 65,
// so the grid holds no thousands of empty blocks ahead of the shared expert's.
template <int BM, typename W>
__device__ RowTile locate_tile(const int* offsets, int n_experts, int tokens, int k,
                               const SharedExpert<W>& shared) {
    const int routed = routed_tiles<BM>(tokens * k, n_experts);
    const int tile = blockIdx.y;
    if (tile < routed) return locate_row_tile<BM>(offsets, n_experts, tile);
    const int first = (tile - routed) * BM;
    if (shared.w == nullptr || first >= tokens) return {0, 0, 0};
    return {SHARED_EXPERT, first, min(BM, tokens - first)};
}

// The slot behind row r of a tile: order's entry for a routed expert's, the token itself for the shared one's.
__device__ __forceinline__ int tile_slot(const RowTile& tile, const int* order, int r) {
    return tile.expert == SHARED_EXPERT ? tile.first + r : order[tile.first + r];
}

// ---------------------------------------------------------------------------------------------------------
// The tensor-core tile: acc (BM×BN, f32) = A · Bᵀ over K, A and B given as gathered row pointers

__device__ __forceinline__ void ldmatrix_x4(uint32_t r[4], uint32_t addr) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr));
}

// Copies: each thread copies 16-byte chunk tid % CHUNKS of a row's piece per k-step, of rows
// tid / CHUNKS + COPY_ROWS·i, the same rows at every k-step, so it only needs their start pointers.
template <typename S>
__device__ __forceinline__ int copy_row(int i) {
    return threadIdx.x / S::CHUNKS + i * S::COPY_ROWS;
}

// Element offset of (row, 16-byte chunk) in a stage's A or B tile (rows of BK elements). ldmatrix reads 8
// consecutive rows at one chunk; unswizzled they would share banks (64-byte rows: 4 addresses of each 128-byte
// bank line; 128-byte rows: one). XOR-ing the chunk with the row's low bits spreads them over all 32 banks.
template <typename S>
__device__ __forceinline__ int stage_offset(int row, int chunk) {
    const int swizzle = S::BK == 32 ? (row >> 1) & 3 : row & 7;
    return row * S::BK + ((chunk ^ swizzle) << 3);
}

// Copies k-step `kt` of this thread's rows of A into the stage at `stage_base`.
template <typename S>
__device__ __forceinline__ void copy_stage_a(uint32_t stage_base, const bf16* const a_row[S::A_COPIES], int kt) {
    const int chunk = threadIdx.x % S::CHUNKS;
    const int k = kt * S::BK + chunk * 8;
#pragma unroll
    for (int i = 0; i < S::A_COPIES; ++i)
        cp_async_16(stage_base + 2 * stage_offset<S>(copy_row<S>(i), chunk), a_row[i] + k);
}

// Copies k-step `kt` of this thread's rows of A and B into the stage at `stage_base`.
template <typename S>
__device__ __forceinline__ void copy_stage(uint32_t stage_base, const bf16* const a_row[S::A_COPIES],
                                           const bf16* const b_row[S::B_COPIES], int kt) {
    copy_stage_a<S>(stage_base, a_row, kt);
    const int chunk = threadIdx.x % S::CHUNKS;
    const int k = kt * S::BK + chunk * 8;
#pragma unroll
    for (int i = 0; i < S::B_COPIES; ++i)
        cp_async_16(stage_base + S::B_BYTES_AT + 2 * stage_offset<S>(copy_row<S>(i), chunk), b_row[i] + k);
}

// The warp's WARP_ROWS×32 piece of one stage: BK / 16 k16 steps of M_TILES×4 mma, fragments straight from
// ldmatrix. a_base / b_base: the stage's A (BM×BK) and B (BN×BK) tiles, laid out by stage_offset.
template <typename S>
__device__ __forceinline__ void multiply_stage(uint32_t a_base, uint32_t b_base, int warp_m, int warp_n,
                                               float acc[S::M_TILES][4][4]) {
    const int lane = threadIdx.x & 31;
#pragma unroll
    for (int kk = 0; kk < S::BK / 16; ++kk) {
        // A 16×16 at rows mt·16: lanes 0-15 address rows 0-15 of its left 8 columns, lanes 16-31 its right.
        uint32_t a[S::M_TILES][4];
#pragma unroll
        for (int mt = 0; mt < S::M_TILES; ++mt) {
            const int row = warp_m * S::WARP_ROWS + mt * 16 + (lane & 15);
            ldmatrix_x4(a[mt], a_base + 2 * stage_offset<S>(row, kk * 2 + (lane >> 4)));
        }
        // B (weights rows = output columns): one x4 load is two 8-column pieces, each as its k 0-7 and k 8-15.
        uint32_t b[4][2];
#pragma unroll
        for (int p = 0; p < 2; ++p) {
            const int row = warp_n * 32 + p * 16 + ((lane >> 4) << 3) + (lane & 7);
            uint32_t r[4];
            ldmatrix_x4(r, b_base + 2 * stage_offset<S>(row, kk * 2 + ((lane >> 3) & 1)));
            b[2 * p][0] = r[0];
            b[2 * p][1] = r[1];
            b[2 * p + 1][0] = r[2];
            b[2 * p + 1][1] = r[3];
        }
#pragma unroll
        for (int mt = 0; mt < S::M_TILES; ++mt)
#pragma unroll
            for (int nt = 0; nt < 4; ++nt) mma_bf16_16x8x16(acc[mt][nt], a[mt], b[nt]);
    }
}

template <typename S>
__device__ __forceinline__ void clear(float acc[S::M_TILES][4][4]) {
#pragma unroll
    for (int mt = 0; mt < S::M_TILES; ++mt)
#pragma unroll
        for (int nt = 0; nt < 4; ++nt)
#pragma unroll
            for (int q = 0; q < 4; ++q) acc[mt][nt][q] = 0.0f;
}

__device__ __forceinline__ void lds_128(uint32_t w[4], uint32_t addr) {
    asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(w[0]), "=r"(w[1]), "=r"(w[2]), "=r"(w[3])
                 : "r"(addr));
}

// A lane's 16 consecutive K of a stage's tile row (elements 16t .. 16t + 15 of its 64), as 8 bf16 pairs in K
// order: two 16-byte reads. With stage_offset's swizzle, the 8 rows g of a lane group t hit 8 different chunks,
// so a warp's read takes the four wavefronts its 512 bytes need.
template <typename S>
__device__ __forceinline__ void lane_pairs(uint32_t tile, int row, int t, uint32_t w[8]) {
    lds_128(w, tile + 2 * stage_offset<S>(row, 2 * t));
    lds_128(w + 4, tile + 2 * stage_offset<S>(row, 2 * t + 1));
}

// The orders in which a tile sums K. Each output is one or more chains of m16n8k16 mma, then the chains added.
//
// InOrder: one chain over K in order, fragments from ldmatrix (prompts, and Sums::Fastest's decode steps).
struct InOrder {
    static constexpr int CHAINS = 1;
    template <typename S>
    static __device__ __forceinline__ void multiply(uint32_t a, uint32_t b, int warp_m, int warp_n,
                                                    float acc[S::M_TILES][4][4]) {
        multiply_stage<S>(a, b, warp_m, warp_n, acc);
    }
};

// Quarters: the expert tiles' order (expert_tiles.cuh, on linear_tiles.cuh), so that a decode step's experts
// give the same sums on either kernel, whatever its batch size. The 64-wide K blocks q, q + 4, q + 8, … form
// chain q < 4, and the four chains are added in order; inside a block, lane group t's fragments of mma step s
// take K positions 16t + 4s + i (i < 4: pair 2s, then pair 2s + 1 of lane_pairs), a permutation of the block
// that A and B share, so each product is still one of x's values times its weight. A stage is one K block.
struct Quarters {
    static constexpr int CHAINS = 4;
    template <typename S>
    static __device__ __forceinline__ void multiply(uint32_t a_base, uint32_t b_base, int warp_m, int warp_n,
                                                    float acc[S::M_TILES][4][4]) {
        static_assert(S::BK == 64, "a stage is one 64-wide K block");
        const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
        // A's rows g and g + 8 of each m16 piece, for all four steps.
        uint32_t a[S::M_TILES][2][8];
#pragma unroll
        for (int mt = 0; mt < S::M_TILES; ++mt)
#pragma unroll
            for (int half = 0; half < 2; ++half)
                lane_pairs<S>(a_base, warp_m * S::WARP_ROWS + mt * 16 + half * 8 + g, t, a[mt][half]);
        // B's row g of the warp's nt-th 8 columns: its column g of the step's 16×8 fragment. All four first, so
        // that consecutive mma go to different accumulators (one accumulator's four steps depend on each other).
        uint32_t b[4][8];
#pragma unroll
        for (int nt = 0; nt < 4; ++nt) lane_pairs<S>(b_base, warp_n * 32 + nt * 8 + g, t, b[nt]);
#pragma unroll
        for (int s = 0; s < 4; ++s)
#pragma unroll
            for (int nt = 0; nt < 4; ++nt) {
                const uint32_t bs[2] = {b[nt][2 * s], b[nt][2 * s + 1]};
#pragma unroll
                for (int mt = 0; mt < S::M_TILES; ++mt) {
                    const uint32_t as[4] = {a[mt][0][2 * s], a[mt][1][2 * s], a[mt][0][2 * s + 1], a[mt][1][2 * s + 1]};
                    mma_bf16_16x8x16(acc[mt][nt], as, bs);
                }
            }
    }
};

// acc = the chains added in order: ((c0 + c1) + c2) + c3.
template <typename S, typename O>
__device__ __forceinline__ void join_chains(float chains[O::CHAINS][S::M_TILES][4][4], float acc[S::M_TILES][4][4]) {
#pragma unroll
    for (int mt = 0; mt < S::M_TILES; ++mt)
#pragma unroll
        for (int nt = 0; nt < 4; ++nt)
#pragma unroll
            for (int q = 0; q < 4; ++q) {
                float sum = chains[0][mt][nt][q];
#pragma unroll
                for (int c = 1; c < O::CHAINS; ++c) sum += chains[c][mt][nt][q];
                acc[mt][nt][q] = sum;
            }
}

// acc = A · Bᵀ for the block's BM×BN tile, K a multiple of BK, summed in order O. a_row / b_row: this thread's
// copy rows (see copy_row) of A and B, each a pointer to the row's first element. Warp w holds rows (w /
// WARPS_N)·WARP_ROWS + [0, WARP_ROWS) and columns (w % WARPS_N)·32 + [0, 32) in acc[mt][nt][]: m16n8
// accumulator pieces (mma's C layout).
template <typename S, typename O>
__device__ void multiply_tile(const bf16* const a_row[S::A_COPIES], const bf16* const b_row[S::B_COPIES], int K,
                              float acc[S::M_TILES][4][4]) {
    __shared__ __align__(128) bf16 stages[S::STAGES][S::STAGE_ELEMS];
    const int warp = threadIdx.x >> 5;
    const int warp_m = warp / S::WARPS_N, warp_n = warp % S::WARPS_N;
    const uint32_t base = smem_address(stages);
    const int ktiles = K / S::BK;
    float chains[O::CHAINS][S::M_TILES][4][4];
#pragma unroll
    for (int c = 0; c < O::CHAINS; ++c) clear<S>(chains[c]);

    // Fill all stages but one; then each step waits for its stage, refills the one freed by the previous step
    // (the barrier says every warp is done with it) and multiplies. A group is committed every step, empty or
    // not, so wait_group's count stays right at the tail. Stage kt goes to chain kt % CHAINS, unrolled so that
    // the chains stay in registers.
#pragma unroll
    for (int s = 0; s < S::STAGES - 1; ++s) {
        if (s < ktiles) copy_stage<S>(base + s * S::STAGE_BYTES, a_row, b_row, s);
        cp_async_commit();
    }
    for (int kt0 = 0; kt0 < ktiles; kt0 += O::CHAINS) {
#pragma unroll
        for (int c = 0; c < O::CHAINS; ++c) {
            const int kt = kt0 + c;
            if (kt >= ktiles) break;
            cp_async_wait<S::STAGES - 2>();
            __syncthreads();
            const int next = kt + S::STAGES - 1;
            if (next < ktiles) copy_stage<S>(base + (next % S::STAGES) * S::STAGE_BYTES, a_row, b_row, next);
            cp_async_commit();
            const uint32_t stage = base + (kt % S::STAGES) * S::STAGE_BYTES;
            O::template multiply<S>(stage, stage + S::B_BYTES_AT, warp_m, warp_n, chains[c]);
        }
    }
    cp_async_wait<0>();
    join_chains<S, O>(chains, acc);
}

// ---------------------------------------------------------------------------------------------------------
// The same tile over int8 weights (crate::quant::Int8Matrix's rows: K int8 weights, then K/32 f16 scales,
// padded to 16 bytes). A stage holds A as above and B's int8 bytes (BN rows × BK, row-major), half of bf16's;
// each k-step the block converts them to one bf16 B tile, scale · q rounded as dequantize_int8 rounds, and
// multiplies as the bf16 path does. So the sums equal those over the dequantized weights, bit for bit, in
// either shape, while the weights cross memory once, as int8.

// Where a thread's int8 copies go: the stage's B bytes are 16-byte pieces, piece p = tid + i·THREADS being
// piece p % ROW_PIECES of B row p / ROW_PIECES; so a thread keeps one column of pieces over PIECES rows.
template <typename S>
struct Int8Stage {
    static constexpr int ROW_PIECES = S::BK / 16;
    static constexpr int PIECES = S::BN * ROW_PIECES / S::THREADS;  // a thread's, per stage
    static constexpr int ROW_STRIDE = S::THREADS / ROW_PIECES;      // rows between a thread's pieces
    static constexpr int B_AT = S::B_BYTES_AT;                      // A (bf16), then B (int8)
    static constexpr int BYTES = B_AT + S::BN * S::BK;             // Wide 12 KB, Narrow 6 KB
    static_assert(S::BN * ROW_PIECES % S::THREADS == 0, "whole pieces per thread");
    static_assert(S::STAGES * BYTES + 2 * S::BN * S::BK <= 48 * 1024, "static shared memory");

    static __device__ __forceinline__ int row(int i) { return threadIdx.x / ROW_PIECES + i * ROW_STRIDE; }
    static __device__ __forceinline__ int piece() { return threadIdx.x % ROW_PIECES; }
    static __device__ __forceinline__ int offset(int i) { return B_AT + (threadIdx.x + i * S::THREADS) * 16; }
    // The f16 scale of this thread's piece of row i at k-step kt (one per 32 weights).
    static __device__ __forceinline__ float scale(const uint8_t* row_start, int k, int kt) {
        const unsigned short* scales = reinterpret_cast<const unsigned short*>(row_start + k);
        return __half2float(__ushort_as_half(__ldg(scales + (kt * S::BK + piece() * 16) / 32)));
    }
};

template <typename S>
__device__ __forceinline__ void copy_stage_int8(uint32_t stage_base, const bf16* const a_row[S::A_COPIES],
                                                const uint8_t* const b_row[Int8Stage<S>::PIECES], int kt) {
    using Q = Int8Stage<S>;
    copy_stage_a<S>(stage_base, a_row, kt);
#pragma unroll
    for (int i = 0; i < Q::PIECES; ++i)
        cp_async_16(stage_base + Q::offset(i), b_row[i] + kt * S::BK + Q::piece() * 16);
}

// This thread's pieces of a stage (16 int8 weights each), times their scales d, to bf16 in the B tile
// (stage_offset's layout: an int8 piece is two bf16 chunks).
template <typename S>
__device__ __forceinline__ void convert_stage(const uint8_t* stage, bf16* b_tile,
                                              const float d[Int8Stage<S>::PIECES]) {
    using Q = Int8Stage<S>;
#pragma unroll
    for (int i = 0; i < Q::PIECES; ++i) {
        const uint4 packed = *reinterpret_cast<const uint4*>(stage + Q::offset(i));
        const uint32_t* words = reinterpret_cast<const uint32_t*>(&packed);
        float q[16];
#pragma unroll
        for (int w = 0; w < 4; ++w) int8x4_to_float(words[w], q + 4 * w);
        __nv_bfloat162 v[8];
#pragma unroll
        for (int j = 0; j < 8; ++j) v[j] = __floats2bfloat162_rn(d[i] * q[2 * j], d[i] * q[2 * j + 1]);
        const int row = Q::row(i), chunk = 2 * Q::piece();
        *reinterpret_cast<uint4*>(b_tile + stage_offset<S>(row, chunk)) = *reinterpret_cast<const uint4*>(v);
        *reinterpret_cast<uint4*>(b_tile + stage_offset<S>(row, chunk + 1)) =
            *reinterpret_cast<const uint4*>(v + 4);
    }
}

// multiply_tile with B as int8 rows: b_row[i] is the start of this thread's row Int8Stage<S>::row(i).
template <typename S, typename O>
__device__ void multiply_tile_int8(const bf16* const a_row[S::A_COPIES],
                                   const uint8_t* const b_row[Int8Stage<S>::PIECES], int K,
                                   float acc[S::M_TILES][4][4]) {
    using Q = Int8Stage<S>;
    __shared__ __align__(128) uint8_t stages[S::STAGES][Q::BYTES];
    __shared__ __align__(128) bf16 b_tile[S::BN * S::BK];
    const int warp = threadIdx.x >> 5;
    const int warp_m = warp / S::WARPS_N, warp_n = warp % S::WARPS_N;
    const uint32_t base = smem_address(stages), b_base = smem_address(b_tile);
    const int ktiles = K / S::BK;
    float chains[O::CHAINS][S::M_TILES][4][4];
#pragma unroll
    for (int c = 0; c < O::CHAINS; ++c) clear<S>(chains[c]);

#pragma unroll
    for (int s = 0; s < S::STAGES - 1; ++s) {
        if (s < ktiles) copy_stage_int8<S>(base + s * Q::BYTES, a_row, b_row, s);
        cp_async_commit();
    }
    float d[Q::PIECES];
#pragma unroll
    for (int i = 0; i < Q::PIECES; ++i) d[i] = Q::scale(b_row[i], K, 0);
    for (int kt0 = 0; kt0 < ktiles; kt0 += O::CHAINS) {
#pragma unroll
        for (int c = 0; c < O::CHAINS; ++c) {
            const int kt = kt0 + c;
            if (kt >= ktiles) break;
            cp_async_wait<S::STAGES - 2>();
            // Every warp is done with the previous step: its ring stage and the B tile may be written.
            __syncthreads();
            const int next = kt + S::STAGES - 1;
            if (next < ktiles) copy_stage_int8<S>(base + (next % S::STAGES) * Q::BYTES, a_row, b_row, next);
            cp_async_commit();
            const int slot = kt % S::STAGES;
            convert_stage<S>(stages[slot], b_tile, d);
            if (kt + 1 < ktiles)
#pragma unroll
                for (int i = 0; i < Q::PIECES; ++i) d[i] = Q::scale(b_row[i], K, kt + 1);
            __syncthreads();
            O::template multiply<S>(base + slot * Q::BYTES, b_base, warp_m, warp_n, chains[c]);
        }
    }
    cp_async_wait<0>();
    join_chains<S, O>(chains, acc);
}

// ---------------------------------------------------------------------------------------------------------
// The two expert GEMMs

// Gate/up weight row behind B row r of a block whose act columns start at j0: the tile interleaves 16 gate
// rows and their 16 up rows, so each warp's 32 columns are gate and up of the same 16 j, and the SwiGLU
// happens in registers.
__device__ __forceinline__ int gate_up_weight_row(int r, int j0, int inter) {
    const int group = r >> 5, within = r & 31;
    return (within < 16 ? 0 : inter) + j0 + group * 16 + (within & 15);
}

// acc over the block's BN B rows: weight_row(r) is the row of w (all experts' rows in one) behind tile row r,
// K the rows' length. bf16 rows, or int8 rows (multiply_tile_int8).
template <typename S, typename O, typename WeightRow>
__device__ __forceinline__ void multiply_weights(const bf16* const a_row[S::A_COPIES], const bf16* w,
                                                 WeightRow weight_row, int K, float acc[S::M_TILES][4][4]) {
    const bf16* b_row[S::B_COPIES];
#pragma unroll
    for (int i = 0; i < S::B_COPIES; ++i) b_row[i] = w + weight_row(copy_row<S>(i)) * K;
    multiply_tile<S, O>(a_row, b_row, K, acc);
}

template <typename S, typename O, typename WeightRow>
__device__ __forceinline__ void multiply_weights(const bf16* const a_row[S::A_COPIES], const uint8_t* w,
                                                 WeightRow weight_row, int K, float acc[S::M_TILES][4][4]) {
    using Q = Int8Stage<S>;
    const uint8_t* b_row[Q::PIECES];
#pragma unroll
    for (int i = 0; i < Q::PIECES; ++i) b_row[i] = w + weight_row(Q::row(i)) * Int8::row_bytes(K);
    multiply_tile_int8<S, O>(a_row, b_row, K, acc);
}

// Where a thread's accumulators sit in the block's tile.
template <typename S>
struct WarpPlace {
    int lane, warp_m, warp_n;
    __device__ WarpPlace() : lane(threadIdx.x & 31), warp_m((threadIdx.x >> 5) / S::WARPS_N),
                             warp_n((threadIdx.x >> 5) % S::WARPS_N) {}
    // The tile row of accumulator piece mt's half (its rows g or g + 8).
    __device__ int row(int mt, int half) const { return warp_m * S::WARP_ROWS + mt * 16 + (lane >> 2) + half * 8; }
};

// act[slot, j] = bf16(bf16(silu(bf16(g))) · bf16(u)), g = x[token] · w[e, j, :], u = x[token] · w[e, I + j, :]
// for the slots of each expert e, token = slot / k; and the same for the shared expert, if any, into its own
// act. x (T, H), w (E, 2I, H) bf16 or int8 rows, act (T·k, I) bf16. Launch: see the top of the file; no
// dynamic shared memory. Block (x, y) computes act columns (BN / 2)·x + [0, BN / 2) of row tile y (see
// locate_tile); the grid's x spans the wider of I and the shared expert's.
template <typename S, typename O, typename W>
__device__ void moe_gate_up_grouped(const bf16* x, const W* w, const int* offsets, const int* order, bf16* act,
                                    int k, int h, int inter, int n_experts, int tokens, SharedExpert<W> shared) {
    const RowTile tile = locate_tile<S::BM>(offsets, n_experts, tokens, k, shared);
    if (tile.rows == 0) return;
    const bool is_shared = tile.expert == SHARED_EXPERT;
    if (is_shared) w = shared.w, act = shared.act, inter = shared.inter, k = 1;
    const size_t expert_row = is_shared ? 0 : (size_t)tile.expert * 2 * inter;
    const int j0 = blockIdx.x * (S::BN / 2);
    if (j0 >= inter) return;

    // Rows past the tile's slots repeat its last slot: harmless work, never stored.
    const bf16* a_row[S::A_COPIES];
#pragma unroll
    for (int i = 0; i < S::A_COPIES; ++i)
        a_row[i] = x + (size_t)(tile_slot(tile, order, min(copy_row<S>(i), tile.rows - 1)) / k) * h;
    float acc[S::M_TILES][4][4];
    multiply_weights<S, O>(
        a_row, w, [=](int r) { return expert_row + gate_up_weight_row(r, j0, inter); }, h, acc);

    // acc[mt][0..1] are gate columns, acc[mt][2..3] the up columns of the same j.
    const WarpPlace<S> at;
    const int j = j0 + at.warp_n * 16 + (at.lane & 3) * 2;
#pragma unroll
    for (int mt = 0; mt < S::M_TILES; ++mt)
#pragma unroll
        for (int half = 0; half < 2; ++half) {
            const int r = at.row(mt, half);
            if (r >= tile.rows) continue;
            bf16* out = act + (size_t)tile_slot(tile, order, r) * inter + j;
#pragma unroll
            for (int nt = 0; nt < 2; ++nt) {
                const float* g = &acc[mt][nt][2 * half];
                const float* u = &acc[mt][nt + 2][2 * half];
                __nv_bfloat162 v;
                v.x = swiglu_bf16(g[0], u[0]);
                v.y = swiglu_bf16(g[1], u[1]);
                *reinterpret_cast<__nv_bfloat162*>(out + nt * 8) = v;
            }
        }
}

// y[slot, r] = float(bf16(act[slot] · w[e, r, :])) · weights[slot] for the slots of each expert e; and the
// shared expert's, if any, unweighted into its own y. act (T·k, I) bf16, w (E, H, I) bf16 or int8 rows,
// weights (T·k) f32, y (T·k, H) f32. Launch: see the top of the file; no dynamic shared memory. Block (x, y)
// computes y columns BN·x + [0, BN) of row tile y.
template <typename S, typename O, typename W>
__device__ void moe_down_grouped(const bf16* act, const W* w, const int* offsets, const int* order,
                                 const float* weights, float* y, int h, int inter, int n_experts, int tokens, int k,
                                 SharedExpert<W> shared) {
    const RowTile tile = locate_tile<S::BM>(offsets, n_experts, tokens, k, shared);
    if (tile.rows == 0) return;
    const bool is_shared = tile.expert == SHARED_EXPERT;
    if (is_shared) w = shared.w, act = shared.act, y = shared.y, inter = shared.inter;
    const size_t expert_row = is_shared ? 0 : (size_t)tile.expert * h;
    const int n0 = blockIdx.x * S::BN;

    // Rows past the tile's slots repeat its last slot, columns past H its last weight row: never stored.
    const bf16* a_row[S::A_COPIES];
#pragma unroll
    for (int i = 0; i < S::A_COPIES; ++i)
        a_row[i] = act + (size_t)tile_slot(tile, order, min(copy_row<S>(i), tile.rows - 1)) * inter;
    float acc[S::M_TILES][4][4];
    multiply_weights<S, O>(
        a_row, w, [=](int r) { return expert_row + min(n0 + r, h - 1); }, inter, acc);

    const WarpPlace<S> at;
    const int n = n0 + at.warp_n * 32 + (at.lane & 3) * 2;
#pragma unroll
    for (int mt = 0; mt < S::M_TILES; ++mt)
#pragma unroll
        for (int half = 0; half < 2; ++half) {
            const int r = at.row(mt, half);
            if (r >= tile.rows) continue;
            const int slot = tile_slot(tile, order, r);
            const float weight = is_shared ? 1.0f : weights[slot];
            float* out = y + (size_t)slot * h + n;
#pragma unroll
            for (int nt = 0; nt < 4; ++nt) {
                if (n + nt * 8 >= h) break;  // H is even and n is, so n + 1 < H too
                const float* d = &acc[mt][nt][2 * half];
                *reinterpret_cast<float2*>(out + nt * 8) =
                    make_float2(round_bf16(d[0]) * weight, round_bf16(d[1]) * weight);
            }
        }
}

// The kernels: Wide and Narrow tiles summing in order, and Narrow tiles summing in quarters for a decode step
// (_decode_), each over bf16 weights and over int8 rows (see moe_gate_up_grouped and moe_down_grouped).
// MIN_BLOCKS: blocks per SM the registers must allow (the decode kernels: at 5 for int8, ptxas spills).
#define INSTANTIATE(S, O, MIN_BLOCKS, W, NAME)                                                                  \
    extern "C" __global__ void __launch_bounds__(S::THREADS, MIN_BLOCKS)                                        \
        moe_gate_up_##NAME(const bf16* x, const W* w, const int* offsets, const int* order, bf16* act, int k,   \
                           int h, int inter, int n_experts, int tokens, const W* shared_gate_up,                \
                           bf16* shared_act, int shared_inter) {                                                \
        follow_previous_kernel();                                                                               \
        const SharedExpert<W> shared = {shared_gate_up, shared_act, nullptr, shared_inter};                     \
        moe_gate_up_grouped<S, O, W>(x, w, offsets, order, act, k, h, inter, n_experts, tokens, shared);        \
    }                                                                                                           \
    extern "C" __global__ void __launch_bounds__(S::THREADS, MIN_BLOCKS)                                        \
        moe_down_##NAME(const bf16* act, const W* w, const int* offsets, const int* order, const float* weights,  \
                        float* y, int h, int inter, int n_experts, int tokens, int k, const W* shared_down,     \
                        bf16* shared_act, float* shared_y, int shared_inter) {                                  \
        follow_previous_kernel();                                                                               \
        const SharedExpert<W> shared = {shared_down, shared_act, shared_y, shared_inter};                       \
        moe_down_grouped<S, O, W>(act, w, offsets, order, weights, y, h, inter, n_experts, tokens, k, shared);  \
    }

INSTANTIATE(Wide, InOrder, 2, bf16, grouped_bf16)
INSTANTIATE(Wide, InOrder, 2, uint8_t, grouped_int8)
INSTANTIATE(Narrow, InOrder, 8, bf16, narrow_bf16)
INSTANTIATE(Narrow, InOrder, 8, uint8_t, narrow_int8)
INSTANTIATE(Narrow, Quarters, 5, bf16, decode_bf16)
INSTANTIATE(Narrow, Quarters, 4, uint8_t, decode_int8)
