// Flash-attention forward on tensor cores: out = softmax(q·kᵀ·scale + bias, masked) · v, bf16 in and out.
//
// One block owns a tile of query rows of one (batch, head); it streams key/value tiles through shared
// memory (cp.async, double buffered), computes scores with mma.sync m16n8k16 (bf16 in, f32 accumulate),
// keeps an online softmax in f32 and accumulates P·V in f32 with P rounded to bf16, like the reference.
// The optional bias is SAM's decomposed relative position term: bias_h[i][j / bias_cols] +
// bias_w[i][j % bias_cols], summed and rounded to bf16 once, as the reference materialises it as a bf16
// mask. The mask keeps key j for query i iff j < visible_prefix || j <= i + (kv_len - q_len), which covers
// full (visible_prefix = kv_len), causal (0) and prefix-bidirectional attention.
// Needs sm_80+ (cp.async, ldmatrix, bf16 mma); builds for compute_80.

#include <cuda_bf16.h>
#include <stdint.h>

typedef __nv_bfloat16 bf16;

namespace flash_attn {

constexpr float kLog2e = 1.4426950408889634f;

// ---------------------------------------------------------------------------------------------------
// Shared-memory tiles: rows of HD bf16, stored in 16-byte chunks whose position is XOR-swizzled with the
// row index, so that the 8 rows read by one ldmatrix phase hit 8 different bank groups.
template <int HD>
__device__ __forceinline__ int swizzled(int row, int chunk) {
    return row * HD + ((chunk ^ (row & 7)) << 3);
}

__device__ __forceinline__ uint32_t smem_addr(const void* p) {
    return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// 16-byte async copy global -> shared; src_bytes = 0 writes zeros (tile rows past the sequence end).
__device__ __forceinline__ void cp_async_16(void* dst, const void* src, int src_bytes) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n"
                 :: "r"(smem_addr(dst)), "l"(src), "r"(src_bytes));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void cp_async_wait() { asm volatile("cp.async.wait_group %0;\n" :: "n"(N) : "memory"); }

// Copy `rows` rows of HD elements (row i at src + i * row_stride) into a swizzled tile; rows at or past
// `valid` become zeros so padded keys/values/queries never inject NaN/Inf. `vec` = 16-byte aligned rows
// (cp.async path); otherwise a plain element-wise copy keeps odd strides working.
template <int HD, int THREADS>
__device__ __forceinline__ void load_tile(bf16* tile, const bf16* src, long long row_stride, int rows,
                                          int valid, bool vec) {
    constexpr int CHUNKS = HD / 8;
    if (vec) {
        for (int c = threadIdx.x; c < rows * CHUNKS; c += THREADS) {
            const int row = c / CHUNKS, chunk = c % CHUNKS;
            const bool in = row < valid;
            const bf16* g = in ? src + row * row_stride + chunk * 8 : src;
            cp_async_16(tile + swizzled<HD>(row, chunk), g, in ? 16 : 0);
        }
    } else {
        for (int e = threadIdx.x; e < rows * HD; e += THREADS) {
            const int row = e / HD, col = e % HD;
            const bf16 x = row < valid ? src[row * row_stride + col] : __float2bfloat16(0.f);
            tile[swizzled<HD>(row, col >> 3) + (col & 7)] = x;
        }
    }
}

// ---------------------------------------------------------------------------------------------------
// Tensor-core fragments (PTX ISA "mma.m16n8k16" layouts; g = lane / 4, t = lane % 4):
//   A 16x16: a0 = (g, 2t..), a1 = (g+8, 2t..), a2 = (g, 2t+8..), a3 = (g+8, 2t+8..)
//   B 16x8:  b0 = (k 2t.., n g), b1 = (k 2t+8.., n g)
//   C 16x8:  c0,c1 = (g, 2t, 2t+1), c2,c3 = (g+8, 2t, 2t+1)
__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], const bf16* p) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(smem_addr(p)));
}
__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t (&r)[4], const bf16* p) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(smem_addr(p)));
}

// c += a · b on one 16x8x16 tile.
__device__ __forceinline__ void mma_bf16(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
                 "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

__device__ __forceinline__ uint32_t pack_bf16x2(float lo, float hi) {
    __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<uint32_t*>(&v);
}

__device__ __forceinline__ float fast_exp2(float x) {  // ex2.approx(-inf) = 0
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
    return y;
}

__device__ __forceinline__ float bf16_bits_to_float(unsigned short b) {
    return __uint_as_float(static_cast<uint32_t>(b) << 16);
}

// The bias of key j: the two bf16 terms summed and rounded to bf16 once (the reference's bf16 mask).
__device__ __forceinline__ float rel_pos_bias(const bf16* bh_row, const bf16* bw_row, int jq, int jr) {
    const float h = bf16_bits_to_float(__ldg(reinterpret_cast<const unsigned short*>(bh_row) + jq));
    const float w = bf16_bits_to_float(__ldg(reinterpret_cast<const unsigned short*>(bw_row) + jr));
    return __bfloat162float(__float2bfloat16_rn(h + w));
}

// The biases of keys j and j + 1 with j and bias_cols even: they share the bias_h entry, and their
// bias_w pair is one aligned 32-bit load (the caller checks bias_w rows are 4-byte aligned).
__device__ __forceinline__ void rel_pos_bias_pair(const bf16* bh_row, const bf16* bw_row, int jq, int jr,
                                                  float& b0, float& b1) {
    const float h = bf16_bits_to_float(__ldg(reinterpret_cast<const unsigned short*>(bh_row) + jq));
    const uint32_t w = __ldg(reinterpret_cast<const unsigned int*>(bw_row + jr));
    b0 = __bfloat162float(__float2bfloat16_rn(h + bf16_bits_to_float(w & 0xffffu)));
    b1 = __bfloat162float(__float2bfloat16_rn(h + bf16_bits_to_float(w >> 16)));
}

// Step the key position (quotient, remainder) = (j / cols, j % cols) forward by d.
__device__ __forceinline__ void advance_col(int& jq, int& jr, int d, int cols) {
    jr += d;
    while (jr >= cols) { jr -= cols; ++jq; }
}

__device__ __forceinline__ float quad_max(float x) {
    x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 1));
    return fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 2));
}
__device__ __forceinline__ float quad_sum(float x) {
    x += __shfl_xor_sync(0xffffffffu, x, 1);
    return x + __shfl_xor_sync(0xffffffffu, x, 2);
}

// Number of keys query row i may see: the visible set is always the prefix [0, limit).
__device__ __forceinline__ int key_limit(int i, int q_len, int kv_len, int visible_prefix) {
    const int causal_end = i + (kv_len - q_len) + 1;
    return min(kv_len, max(visible_prefix, causal_end));
}

// ---------------------------------------------------------------------------------------------------
// Per-warp state: 16 query rows; this thread holds rows g and g+8 of the warp's slice.
template <int HD, int BKV>
struct WarpState {
    uint32_t q[HD / 16][4];   // Q as A fragments, one per 16-wide slice of head_dim
    float o[HD / 8][4];       // output accumulator, one C fragment per 8 columns of head_dim
    float m[2], l[2];         // running max (log2 domain) and this thread's partial row sums
};

// Turn raw scores of one key tile into log2-domain logits: scale, bias, mask (-inf).
template <int BKV, bool MASK>
__device__ __forceinline__ void scores_to_logits(float (&s)[BKV / 8][4], int kv0, int lane, float scale_log2,
                                                 const bf16* bh0, const bf16* bw0, const bf16* bh1,
                                                 const bf16* bw1, int bias_cols, bool bias_paired, int lim0,
                                                 int lim1) {
    const int jbase = kv0 + 2 * (lane & 3);  // even: kv0 is a multiple of the tile
    if (bh0 != nullptr && bias_paired) {
        int jq = jbase / bias_cols, jr = jbase - jq * bias_cols;
#pragma unroll
        for (int nt = 0; nt < BKV / 8; ++nt) {
            const int j = jbase + nt * 8;
            float b[4] = {0.f, 0.f, 0.f, 0.f};
            if (!MASK || j < lim0) rel_pos_bias_pair(bh0, bw0, jq, jr, b[0], b[1]);  // j < kv_len: in range
            if (!MASK || j < lim1) rel_pos_bias_pair(bh1, bw1, jq, jr, b[2], b[3]);
#pragma unroll
            for (int e = 0; e < 2; ++e) {
                s[nt][e] = (!MASK || j + e < lim0) ? s[nt][e] * scale_log2 + b[e] * kLog2e : -INFINITY;
                s[nt][2 + e] = (!MASK || j + e < lim1) ? s[nt][2 + e] * scale_log2 + b[2 + e] * kLog2e : -INFINITY;
            }
            advance_col(jq, jr, 8, bias_cols);
        }
    } else if (bh0 != nullptr) {
        int jq = jbase / bias_cols, jr = jbase - jq * bias_cols;
#pragma unroll
        for (int nt = 0; nt < BKV / 8; ++nt) {
#pragma unroll
            for (int e = 0; e < 2; ++e) {
                int q1 = jq, r1 = jr;
                if (e == 1) advance_col(q1, r1, 1, bias_cols);
                const int j = jbase + nt * 8 + e;
                float& x0 = s[nt][e];
                float& x1 = s[nt][2 + e];
                if (!MASK || j < lim0) x0 = x0 * scale_log2 + rel_pos_bias(bh0, bw0, q1, r1) * kLog2e;
                else x0 = -INFINITY;
                if (!MASK || j < lim1) x1 = x1 * scale_log2 + rel_pos_bias(bh1, bw1, q1, r1) * kLog2e;
                else x1 = -INFINITY;
            }
            advance_col(jq, jr, 8, bias_cols);
        }
    } else {
#pragma unroll
        for (int nt = 0; nt < BKV / 8; ++nt) {
#pragma unroll
            for (int e = 0; e < 2; ++e) {
                const int j = jbase + nt * 8 + e;
                s[nt][e] = (!MASK || j < lim0) ? s[nt][e] * scale_log2 : -INFINITY;
                s[nt][2 + e] = (!MASK || j < lim1) ? s[nt][2 + e] * scale_log2 : -INFINITY;
            }
        }
    }
}

// One key/value tile for one warp: S = Q·Kᵀ, online softmax, O += P·V.
template <int HD, int BKV, bool MASK>
__device__ __forceinline__ void attend_tile(WarpState<HD, BKV>& st, const bf16* ks, const bf16* vs, int kv0,
                                            int lane, float scale_log2, const bf16* bh0, const bf16* bw0,
                                            const bf16* bh1, const bf16* bw1, int bias_cols, bool bias_paired,
                                            int lim0, int lim1) {
    const int mat = lane >> 3, r8 = lane & 7;

    float s[BKV / 8][4];
#pragma unroll
    for (int nt = 0; nt < BKV / 8; ++nt) s[nt][0] = s[nt][1] = s[nt][2] = s[nt][3] = 0.f;

    // S = Q·Kᵀ. K rows are keys with head_dim contiguous: exactly the "col" B operand, no transpose.
#pragma unroll
    for (int kk = 0; kk < HD / 16; ++kk) {
#pragma unroll
        for (int p = 0; p < BKV / 16; ++p) {
            uint32_t b[4];
            ldmatrix_x4(b, ks + swizzled<HD>(p * 16 + (mat >> 1) * 8 + r8, kk * 2 + (mat & 1)));
            mma_bf16(s[2 * p], st.q[kk], b[0], b[1]);
            mma_bf16(s[2 * p + 1], st.q[kk], b[2], b[3]);
        }
    }

    scores_to_logits<BKV, MASK>(s, kv0, lane, scale_log2, bh0, bw0, bh1, bw1, bias_cols, bias_paired, lim0,
                                lim1);

    // Online softmax (rows g and g+8); a row's 4 owning lanes agree on its max via quad shuffles.
    float mx0 = -INFINITY, mx1 = -INFINITY;
#pragma unroll
    for (int nt = 0; nt < BKV / 8; ++nt) {
        mx0 = fmaxf(mx0, fmaxf(s[nt][0], s[nt][1]));
        mx1 = fmaxf(mx1, fmaxf(s[nt][2], s[nt][3]));
    }
    mx0 = fmaxf(st.m[0], quad_max(mx0));
    mx1 = fmaxf(st.m[1], quad_max(mx1));
    const float base0 = mx0 == -INFINITY ? 0.f : mx0;  // row with nothing visible yet: keep zeros
    const float base1 = mx1 == -INFINITY ? 0.f : mx1;
    const float alpha0 = fast_exp2(st.m[0] - base0), alpha1 = fast_exp2(st.m[1] - base1);
    st.m[0] = mx0;
    st.m[1] = mx1;

    float sum0 = 0.f, sum1 = 0.f;
#pragma unroll
    for (int nt = 0; nt < BKV / 8; ++nt) {
        s[nt][0] = fast_exp2(s[nt][0] - base0);
        s[nt][1] = fast_exp2(s[nt][1] - base0);
        s[nt][2] = fast_exp2(s[nt][2] - base1);
        s[nt][3] = fast_exp2(s[nt][3] - base1);
        sum0 += s[nt][0] + s[nt][1];
        sum1 += s[nt][2] + s[nt][3];
    }
    st.l[0] = st.l[0] * alpha0 + sum0;
    st.l[1] = st.l[1] * alpha1 + sum1;
#pragma unroll
    for (int nt = 0; nt < HD / 8; ++nt) {
        st.o[nt][0] *= alpha0; st.o[nt][1] *= alpha0;
        st.o[nt][2] *= alpha1; st.o[nt][3] *= alpha1;
    }

    // O += P·V with P rounded to bf16. The S accumulator layout of two adjacent 8-key tiles is the A
    // fragment of one 16-key slice; V rows are keys, so ldmatrix.trans yields the B operand.
#pragma unroll
    for (int kk = 0; kk < BKV / 16; ++kk) {
        uint32_t a[4];
        a[0] = pack_bf16x2(s[2 * kk][0], s[2 * kk][1]);
        a[1] = pack_bf16x2(s[2 * kk][2], s[2 * kk][3]);
        a[2] = pack_bf16x2(s[2 * kk + 1][0], s[2 * kk + 1][1]);
        a[3] = pack_bf16x2(s[2 * kk + 1][2], s[2 * kk + 1][3]);
#pragma unroll
        for (int p = 0; p < HD / 16; ++p) {
            uint32_t b[4];
            ldmatrix_x4_trans(b, vs + swizzled<HD>(kk * 16 + (mat & 1) * 8 + r8, p * 2 + (mat >> 1)));
            mma_bf16(st.o[2 * p], a, b[0], b[1]);
            mma_bf16(st.o[2 * p + 1], a, b[2], b[3]);
        }
    }
}

__device__ __forceinline__ bool aligned16(const void* p) {
    return (reinterpret_cast<uintptr_t>(p) & 15) == 0;
}

// ---------------------------------------------------------------------------------------------------
// The kernel body. WARPS warps x 16 query rows = BQ rows per block; BKV keys per tile.
// Shared memory: Q tile (BQ x HD) + 2 stages x (K + V tiles of BKV x HD), all bf16.
template <int HD, int WARPS, int BKV>
__device__ __forceinline__ void flash_attention_fwd(
    const bf16* __restrict__ q, const bf16* __restrict__ k, const bf16* __restrict__ v, bf16* __restrict__ out,
    const bf16* __restrict__ bias_h, const bf16* __restrict__ bias_w,
    int heads, int kv_heads, int q_len, int kv_len,
    long long q_sb, long long q_sh, long long q_st, long long k_sb, long long k_sh, long long k_st,
    long long v_sb, long long v_sh, long long v_st, long long o_sb, long long o_sh, long long o_st,
    long long bh_sb, long long bh_sh, long long bh_st, long long bw_sb, long long bw_sh, long long bw_st,
    int bias_cols, float scale, int visible_prefix) {
    constexpr int BQ = WARPS * 16;
    constexpr int THREADS = WARPS * 32;
    constexpr int CHUNKS = HD / 8;
    __shared__ __align__(128) bf16 q_tile[BQ * HD];
    __shared__ __align__(128) bf16 k_tile[2][BKV * HD];
    __shared__ __align__(128) bf16 v_tile[2][BKV * HD];

    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    // Heaviest (latest, for causal) query tiles first, so the tail of the grid is made of short blocks.
    const int q0 = (gridDim.x - 1 - blockIdx.x) * BQ;
    const int head = blockIdx.y, batch = blockIdx.z;
    const int kv_head = head / (heads / kv_heads);

    const bf16* qb = q + batch * q_sb + head * q_sh + q0 * q_st;
    const bf16* kb = k + batch * k_sb + kv_head * k_sh;
    const bf16* vb = v + batch * v_sb + kv_head * v_sh;
    bf16* ob = out + batch * o_sb + head * o_sh + q0 * o_st;

    const bool vec_q = aligned16(q) && (q_sb % 8 | q_sh % 8 | q_st % 8) == 0;
    const bool vec_kv = aligned16(k) && aligned16(v) && (k_sb % 8 | k_sh % 8 | k_st % 8) == 0 &&
                        (v_sb % 8 | v_sh % 8 | v_st % 8) == 0;
    const bool vec_o = aligned16(out) && (o_sb % 8 | o_sh % 8 | o_st % 8) == 0;

    // Keys this block needs: up to the limit of its last real row; tiles past the first row's limit
    // need per-element masking.
    const int q_rows = min(BQ, q_len - q0);
    const int kv_end = key_limit(q0 + q_rows - 1, q_len, kv_len, visible_prefix);
    const int n_tiles = (kv_end + BKV - 1) / BKV;

    // This thread's two query rows (clamped for reads when past q_len; their output is dropped).
    const int row0 = q0 + warp * 16 + lane / 4, row1 = row0 + 8;
    const int lim0 = key_limit(row0, q_len, kv_len, visible_prefix);
    const int lim1 = key_limit(row1, q_len, kv_len, visible_prefix);
    const int warp_first = q0 + warp * 16;
    const int warp_lim_lo = key_limit(warp_first, q_len, kv_len, visible_prefix);
    const int warp_lim_hi = key_limit(warp_first + 15, q_len, kv_len, visible_prefix);
    const bool warp_active = warp_first < q_len;

    const bf16 *bh0 = nullptr, *bw0 = nullptr, *bh1 = nullptr, *bw1 = nullptr;
    if (bias_h != nullptr && bias_w != nullptr) {
        const int r0 = min(row0, q_len - 1), r1 = min(row1, q_len - 1);
        bh0 = bias_h + batch * bh_sb + head * bh_sh + r0 * bh_st;
        bh1 = bias_h + batch * bh_sb + head * bh_sh + r1 * bh_st;
        bw0 = bias_w + batch * bw_sb + head * bw_sh + r0 * bw_st;
        bw1 = bias_w + batch * bw_sb + head * bw_sh + r1 * bw_st;
    }
    // Even bias_cols with 4-byte aligned bias_w rows: key pairs share a bias_h entry (fewer loads).
    const bool bias_paired = bias_cols % 2 == 0 && (reinterpret_cast<uintptr_t>(bias_w) & 3) == 0 &&
                             (bw_sb % 2 | bw_sh % 2 | bw_st % 2) == 0;
    const float scale_log2 = scale * kLog2e;

    // Prologue: Q (group 0) and the first key/value tile (group 1).
    load_tile<HD, THREADS>(q_tile, qb, q_st, BQ, q_rows, vec_q);
    cp_async_commit();
    if (n_tiles > 0) {
        load_tile<HD, THREADS>(k_tile[0], kb, k_st, BKV, min(BKV, kv_len), vec_kv);
        load_tile<HD, THREADS>(v_tile[0], vb, v_st, BKV, min(BKV, kv_len), vec_kv);
    }
    cp_async_commit();
    cp_async_wait<1>();
    __syncthreads();

    WarpState<HD, BKV> st;
    {
        const int mat = lane >> 3, r8 = lane & 7;
#pragma unroll
        for (int kk = 0; kk < HD / 16; ++kk)
            ldmatrix_x4(st.q[kk], q_tile + swizzled<HD>(warp * 16 + (mat & 1) * 8 + r8, kk * 2 + (mat >> 1)));
    }
#pragma unroll
    for (int nt = 0; nt < HD / 8; ++nt) st.o[nt][0] = st.o[nt][1] = st.o[nt][2] = st.o[nt][3] = 0.f;
    st.m[0] = st.m[1] = -INFINITY;
    st.l[0] = st.l[1] = 0.f;

    for (int t = 0; t < n_tiles; ++t) {
        // Prefetch the next tile into the other stage while this one is consumed.
        if (t + 1 < n_tiles) {
            const int next = (t + 1) * BKV;
            const int valid = min(BKV, kv_len - next);
            load_tile<HD, THREADS>(k_tile[(t + 1) & 1], kb + next * k_st, k_st, BKV, valid, vec_kv);
            load_tile<HD, THREADS>(v_tile[(t + 1) & 1], vb + next * v_st, v_st, BKV, valid, vec_kv);
        }
        cp_async_commit();
        cp_async_wait<1>();
        __syncthreads();

        const int kv0 = t * BKV;
        if (warp_active && kv0 < warp_lim_hi) {  // skip tiles wholly above this warp's causal edge
            const bf16* ks = k_tile[t & 1];
            const bf16* vs = v_tile[t & 1];
            if (kv0 + BKV > warp_lim_lo)
                attend_tile<HD, BKV, true>(st, ks, vs, kv0, lane, scale_log2, bh0, bw0, bh1, bw1, bias_cols,
                                           bias_paired, lim0, lim1);
            else
                attend_tile<HD, BKV, false>(st, ks, vs, kv0, lane, scale_log2, bh0, bw0, bh1, bw1,
                                            bias_cols, bias_paired, lim0, lim1);
        }
        __syncthreads();  // the stage just read is refilled by the next iteration's prefetch
    }

    // Normalise, round once to bf16, and stage the warp's 16 rows through its own slice of q_tile
    // (only this warp ever read those rows) so global stores are whole 16-byte chunks.
    if (!warp_active) return;
    const float l0 = quad_sum(st.l[0]), l1 = quad_sum(st.l[1]);
    const float inv0 = l0 > 0.f ? 1.f / l0 : 0.f, inv1 = l1 > 0.f ? 1.f / l1 : 0.f;
    bf16* stage = q_tile + warp * 16 * HD;
    const int g = lane / 4, c2 = 2 * (lane & 3);
#pragma unroll
    for (int nt = 0; nt < HD / 8; ++nt) {
        *reinterpret_cast<uint32_t*>(stage + swizzled<HD>(g, nt) + c2) =
            pack_bf16x2(st.o[nt][0] * inv0, st.o[nt][1] * inv0);
        *reinterpret_cast<uint32_t*>(stage + swizzled<HD>(g + 8, nt) + c2) =
            pack_bf16x2(st.o[nt][2] * inv1, st.o[nt][3] * inv1);
    }
    __syncwarp();
    const int warp_rows = min(16, q_len - warp_first);
    bf16* wo = ob + warp * 16 * o_st;
    if (vec_o) {
        for (int c = lane; c < warp_rows * CHUNKS; c += 32) {
            const int row = c / CHUNKS, chunk = c % CHUNKS;
            *reinterpret_cast<uint4*>(wo + row * o_st + chunk * 8) =
                *reinterpret_cast<const uint4*>(stage + swizzled<HD>(row, chunk));
        }
    } else {
        for (int e = lane; e < warp_rows * HD; e += 32) {
            const int row = e / HD, col = e % HD;
            wo[row * o_st + col] = stage[swizzled<HD>(row, col >> 3) + (col & 7)];
        }
    }
}

}  // namespace flash_attn

// ---------------------------------------------------------------------------------------------------
// Launch configuration (dynamic shared memory 0; static shared memory is exactly 48 KiB in both):
//   flash_attention_hd64_bf16:  BLOCK_Q = 128, grid (ceil(q_len / 128), heads, batch), block 256 threads
//   flash_attention_hd128_bf16: BLOCK_Q = 64,  grid (ceil(q_len / 64),  heads, batch), block 128 threads
// heads must be a multiple of kv_heads. Any strides work; rows that are 16-byte aligned (pointers aligned,
// all strides multiples of 8 elements) take the fast cp.async / vector-store paths.
#define FLASH_ATTENTION_ARGS                                                                               \
    const bf16 *q, const bf16 *k, const bf16 *v, bf16 *out, const bf16 *bias_h, const bf16 *bias_w,        \
        int batch, int heads, int kv_heads, int q_len, int kv_len, long long q_sb, long long q_sh,         \
        long long q_st, long long k_sb, long long k_sh, long long k_st, long long v_sb, long long v_sh,    \
        long long v_st, long long o_sb, long long o_sh, long long o_st, long long bh_sb, long long bh_sh,  \
        long long bh_st, long long bw_sb, long long bw_sh, long long bw_st, int bias_cols, float scale,    \
        int visible_prefix
#define FLASH_ATTENTION_PASS                                                                               \
    q, k, v, out, bias_h, bias_w, heads, kv_heads, q_len, kv_len, q_sb, q_sh, q_st, k_sb, k_sh, k_st,      \
        v_sb, v_sh, v_st, o_sb, o_sh, o_st, bh_sb, bh_sh, bh_st, bw_sb, bw_sh, bw_st, bias_cols, scale,    \
        visible_prefix

extern "C" __global__ void __launch_bounds__(256, 2) flash_attention_hd64_bf16(FLASH_ATTENTION_ARGS) {
    (void)batch;
    flash_attn::flash_attention_fwd<64, 8, 64>(FLASH_ATTENTION_PASS);
}

extern "C" __global__ void __launch_bounds__(128, 2) flash_attention_hd128_bf16(FLASH_ATTENTION_ARGS) {
    (void)batch;
    flash_attn::flash_attention_fwd<128, 4, 32>(FLASH_ATTENTION_PASS);
}

#undef FLASH_ATTENTION_ARGS
#undef FLASH_ATTENTION_PASS
