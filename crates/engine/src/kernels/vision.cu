// Kernels of the vision encoders, where stock ops cost far more than the bytes they move (candle's broadcast
// bias add ran at ~25 GB/s on the H100, its permuting copies at ~300 GB/s):
// - linear_epilogue: what follows a linear layer's matmul in one pass (bias, exact GELU, residual add, and
//   for SAM's windowed blocks the merge of the windows back into the grid);
// - window_split: SAM's zero-padded cut of a (B, h, w, C) grid into ws×ws windows;
// - rel_pos_terms: SAM's decomposed relative-position terms q·Rh and q·Rw, read straight from the strided q
//   of the fused qkv projection;
// - rope_heads: the rotary embedding of the encoder and of the LM's prompt pass, read straight from the
//   fused qkv projection's rows;
// - layer_norm: SAM's LayerNorms, a warp a row (candle's kernel gives a 768-wide row one warp a block).
// Every intermediate the reference rounds to bf16 is rounded here too. bf16 only; needs sm_80+.

#include <cuda_bf16.h>
#include <stdint.h>

typedef __nv_bfloat16 bf16;

namespace vision {

constexpr int THREADS = 256;

__device__ __forceinline__ float rounded(float x) { return __bfloat162float(__float2bfloat16(x)); }

__device__ __forceinline__ void unpack8(uint4 raw, float* out) {
    const __nv_bfloat162* pairs = reinterpret_cast<const __nv_bfloat162*>(&raw);
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        const float2 f = __bfloat1622float2(pairs[i]);
        out[2 * i] = f.x;
        out[2 * i + 1] = f.y;
    }
}

__device__ __forceinline__ uint4 pack8(const float* in) {
    uint4 raw;
    __nv_bfloat162* pairs = reinterpret_cast<__nv_bfloat162*>(&raw);
#pragma unroll
    for (int i = 0; i < 4; ++i) pairs[i] = __floats2bfloat162_rn(in[2 * i], in[2 * i + 1]);
    return raw;
}

// The grid of windows over a (B, h, w) token grid padded to multiples of ws: window (b, wy, wx) is row
// (b·n_rows + wy)·n_cols + wx of the windowed layout, its tokens row-major inside it.
struct Windows {
    int h, w, ws;

    __device__ __forceinline__ int n_rows() const { return (h + ws - 1) / ws; }
    __device__ __forceinline__ int n_cols() const { return (w + ws - 1) / ws; }

    // The windowed row holding grid token `token` = (b·h + y)·w + x.
    __device__ __forceinline__ long long windowed_row(long long token) const {
        const int x = token % w;
        const long long by = token / w;
        const int y = by % h;
        const long long b = by / h;
        const long long window = (b * n_rows() + y / ws) * n_cols() + x / ws;
        return (window * ws + y % ws) * ws + x % ws;
    }

    // The grid token of windowed row `row`, or -1 for a padding position.
    __device__ __forceinline__ long long grid_token(long long row) const {
        const int ix = row % ws;
        const long long r = row / ws;
        const int iy = r % ws;
        const long long window = r / ws;
        const int wx = window % n_cols();
        const long long bw = window / n_cols();
        const int wy = bw % n_rows();
        const long long b = bw / n_rows();
        const int y = wy * ws + iy, x = wx * ws + ix;
        return (y < h && x < w) ? (b * h + y) * w + x : -1;
    }
};

}  // namespace vision

using namespace vision;

// out[r] = residual[r] + act(y[source(r)] + bias), rounded after each op. source(r) = r, or with ws > 0 the
// windowed row of grid token r (grid h×w). act is the exact GELU when `gelu`. bias and residual may be null;
// out may be y when ws == 0. 8 columns a thread: cols % 8 == 0. Grid ceil(rows·cols / 8 / 256), block 256.
extern "C" __global__ void __launch_bounds__(THREADS) linear_epilogue_bf16(const bf16* y, const bf16* bias,
                                                                           const bf16* residual, bf16* out,
                                                                           long long rows, int cols, int gelu,
                                                                           int h, int w, int ws) {
    const long long i = (long long)blockIdx.x * THREADS + threadIdx.x;
    const int per_row = cols / 8;
    if (i >= rows * per_row) return;
    const long long r = i / per_row;
    const int c = (int)(i % per_row) * 8;
    const long long source = ws > 0 ? Windows{h, w, ws}.windowed_row(r) : r;
    float v[8];
    unpack8(*reinterpret_cast<const uint4*>(y + source * cols + c), v);
    if (bias) {
        float b[8];
        unpack8(*reinterpret_cast<const uint4*>(bias + c), b);
#pragma unroll
        for (int k = 0; k < 8; ++k) v[k] = rounded(v[k] + b[k]);
    }
    if (gelu) {
#pragma unroll
        for (int k = 0; k < 8; ++k) v[k] = rounded(0.5f * v[k] * (1.0f + erff(v[k] * 0.70710678118654752f)));
    }
    if (residual) {
        float x[8];
        unpack8(*reinterpret_cast<const uint4*>(residual + r * cols + c), x);
#pragma unroll
        for (int k = 0; k < 8; ++k) v[k] = x[k] + v[k];
    }
    *reinterpret_cast<uint4*>(out + r * cols + c) = pack8(v);
}

// (B, h, w, C) → (B·n_rows·n_cols, ws, ws, C) windows, zeros where a window runs past the grid. 8 channels a
// thread: C % 8 == 0. Grid ceil(windowed_rows·C / 8 / 256), block 256.
extern "C" __global__ void __launch_bounds__(THREADS) window_split_bf16(const bf16* x, bf16* out,
                                                                        long long windowed_rows, int c, int h,
                                                                        int w, int ws) {
    const long long i = (long long)blockIdx.x * THREADS + threadIdx.x;
    const int per_row = c / 8;
    if (i >= windowed_rows * per_row) return;
    const long long row = i / per_row;
    const int col = (int)(i % per_row) * 8;
    const long long token = Windows{h, w, ws}.grid_token(row);
    const uint4 zero = make_uint4(0, 0, 0, 0);
    *reinterpret_cast<uint4*>(out + row * c + col) =
        token < 0 ? zero : *reinterpret_cast<const uint4*>(x + token * c + col);
}

// SAM's relative-position terms:
//   out_h[b, head, i, kh] = Σ_c q[b, head, i, c] · Rh[qh, kh, c],  out_w[b, head, i, kw] = Σ_c q[..] · Rw[qw, kw, c]
// for the queries i = qh·w + qw, with f32 sums rounded to bf16 (the reference's bf16 einsum). q is strided
// (batch, head, row; last dim contiguous), Rh (h, h, HD) and Rw (w, w, HD) contiguous, out_h (B, heads, h·w, h)
// and out_w (B, heads, h·w, w) contiguous. Grid (h + w, ceil(heads / heads a block), B): block x < h takes
// the queries of grid row qh = x and writes their out_h, block x ≥ h those of column qw = x − h and writes
// their out_w. Its table (Rh[qh] or Rw[qw]), the same for every head, sits in shared memory; a thread holds one
// query in registers and reads the table's rows as every lane's same address, a broadcast of 16 bytes per 8
// products. The results go through shared memory so that each head's rows are written whole.
// h, w ≤ REL_MAX_SIDE; a block takes blockDim.x / max(h, w) heads; q's rows 16-byte aligned.
constexpr int REL_MAX_SIDE = 64;
constexpr int REL_THREADS = 256;
// Staged results: a thread's row of keys, padded to an odd count of 4-byte words so that the threads of a warp
// write distinct banks.
constexpr int REL_STAGE_WORDS = REL_MAX_SIDE / 2 + 1;

// q·(a key row) in the order the kernel before this one summed in, so that the terms did not change with it:
// for q·Rh (PAIRED) each pair of products summed before it is added, for q·Rw a product at a time.
template <int HD, bool PAIRED>
__device__ __forceinline__ float key_term(const float (&query)[HD], const uint4* row) {
    float acc = 0.0f;
#pragma unroll
    for (int chunk = 0; chunk < HD / 8; ++chunk) {
        float f[8];
        unpack8(row[chunk], f);
        const float* q = query + chunk * 8;
#pragma unroll
        for (int k = 0; k < 8; k += 2) {
            if (PAIRED) {
                acc += q[k] * f[k] + q[k + 1] * f[k + 1];
            } else {
                acc += q[k] * f[k];
                acc += q[k + 1] * f[k + 1];
            }
        }
    }
    return acc;
}

template <int HD>
__device__ void rel_pos_terms(const bf16* q, long long q_batch, long long q_head, long long q_row, const bf16* rh,
                              const bf16* rw, bf16* out_h, bf16* out_w, int heads, int h, int w) {
    __shared__ __align__(16) bf16 table[REL_MAX_SIDE * HD];
    __shared__ uint32_t stage[REL_THREADS * REL_STAGE_WORDS];
    const int b = blockIdx.z;
    const bool by_row = (int)blockIdx.x < h;
    const int line = by_row ? blockIdx.x : blockIdx.x - h;
    const int keys = by_row ? h : w, count = by_row ? w : h;
    const int per_block = blockDim.x / max(h, w);
    const int first_head = blockIdx.y * per_block;
    const int local_head = threadIdx.x / count, k = threadIdx.x % count;
    const int head = first_head + local_head;
    const bool live = local_head < per_block && head < heads;
    const uint4* src = reinterpret_cast<const uint4*>((by_row ? rh : rw) + (long long)line * keys * HD);
    for (int c = threadIdx.x; c < keys * HD / 8; c += blockDim.x) reinterpret_cast<uint4*>(table)[c] = src[c];
    const long long n = (long long)h * w;
    // The grid index of the line's query number `at`.
    const auto query_index = [=](int at) { return by_row ? (long long)line * w + at : (long long)at * w + line; };
    const long long i = query_index(k);
    float query[HD];
    if (live) {
        const uint4* q_i = reinterpret_cast<const uint4*>(q + b * q_batch + head * q_head + i * q_row);
#pragma unroll
        for (int chunk = 0; chunk < HD / 8; ++chunk) unpack8(q_i[chunk], query + chunk * 8);
    }
    __syncthreads();
    bf16* mine = reinterpret_cast<bf16*>(stage + threadIdx.x * REL_STAGE_WORDS);
    if (live) {
        for (int r = 0; r < keys; ++r) {
            const uint4* row = reinterpret_cast<const uint4*>(table + r * HD);
            mine[r] = __float2bfloat16(by_row ? key_term<HD, true>(query, row) : key_term<HD, false>(query, row));
        }
    }
    __syncthreads();
    // Each head's results, row by row: a query's keys are contiguous in out, and by grid row so are the
    // line's queries.
    bf16* out = by_row ? out_h : out_w;
    const int heads_here = min(per_block, heads - first_head);
    for (int e = threadIdx.x; e < heads_here * count * keys; e += blockDim.x) {
        const int r = e % keys, kk = (e / keys) % count, hh = e / (keys * count);
        const long long head_row = ((long long)b * heads + first_head + hh) * n;
        const bf16* staged = reinterpret_cast<const bf16*>(stage + (hh * count + kk) * REL_STAGE_WORDS);
        out[(head_row + query_index(kk)) * keys + r] = staged[r];
    }
}

extern "C" __global__ void __launch_bounds__(REL_THREADS)
    rel_pos_terms_hd64_bf16(const bf16* q, long long q_batch, long long q_head, long long q_row, const bf16* rh,
                            const bf16* rw, bf16* out_h, bf16* out_w, int heads, int h, int w) {
    rel_pos_terms<64>(q, q_batch, q_head, q_row, rh, rw, out_h, out_w, heads, h, w);
}

// The rotary embedding (rotate-half layout) of `heads` heads read in place from a fused projection's rows:
// qkv (B·T, width) with the heads' columns from `first`, cos/sin (T, hd/2) for row b at b·cos_batch (0 when
// the rows share positions) → out (B, heads, T, hd) contiguous. Each product, sum and difference is a bf16
// operation, as in candle's rope kernel (and the reference's bf16 tensor ops), so the result is theirs bit
// for bit. A thread per rotated pair: grid ceil(pairs / 256), block 256, pairs = B·heads·T·hd/2.
extern "C" __global__ void __launch_bounds__(THREADS) rope_heads_bf16(const bf16* qkv, const bf16* cos,
                                                                      const bf16* sin, bf16* out, long long pairs,
                                                                      int tokens, int heads, int head_dim,
                                                                      int width, int first, long long cos_batch) {
    const long long i = (long long)blockIdx.x * THREADS + threadIdx.x;
    if (i >= pairs) return;
    const int half = head_dim / 2;
    const int d = i % half;
    const long long row = i / half;  // (b·heads + head)·T + t
    const int t = row % tokens;
    const long long bh = row / tokens;
    const int head = bh % heads;
    const long long b = bh / heads;
    const bf16* src = qkv + (b * tokens + t) * width + first + head * head_dim;
    const long long angle = b * cos_batch + t * half + d;
    const bf16 c = cos[angle], s = sin[angle];
    const bf16 x1 = src[d], x2 = src[d + half];
    bf16* dst = out + row * head_dim;
    dst[d] = x1 * c - x2 * s;
    dst[d + half] = x1 * s + x2 * c;
}

constexpr int LN_CHUNKS = 4;

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
    for (int offset = 16; offset > 0; offset /= 2) v += __shfl_xor_sync(0xffffffffu, v, offset);
    return v;
}

// nn.LayerNorm over the last dim: (rows, cols) → (rows, cols). The row stays in registers: its mean, then the
// mean of its squared deviations, in f32; (x − mean)·rstd·weight + bias rounded once, as the reference's
// fused kernel does. A warp a row: cols % 8 == 0 and cols ≤ 256·LN_CHUNKS. Grid ceil(rows / 8), block 256.
extern "C" __global__ void __launch_bounds__(THREADS) layer_norm_bf16(const bf16* x, const bf16* weight,
                                                                      const bf16* bias, bf16* out, long long rows,
                                                                      int cols, float eps) {
    const long long row = (long long)blockIdx.x * (THREADS / 32) + threadIdx.x / 32;
    const int lane = threadIdx.x % 32;
    if (row >= rows) return;
    const int chunks = cols / 8;
    const bf16* in = x + row * cols;
    float v[LN_CHUNKS][8];
    float sum = 0.0f;
#pragma unroll
    for (int c = 0; c < LN_CHUNKS; ++c) {
        const int chunk = lane + c * 32;
        if (chunk >= chunks) break;
        unpack8(*reinterpret_cast<const uint4*>(in + chunk * 8), v[c]);
#pragma unroll
        for (int k = 0; k < 8; ++k) sum += v[c][k];
    }
    const float mean = warp_sum(sum) / cols;
    float squares = 0.0f;
#pragma unroll
    for (int c = 0; c < LN_CHUNKS; ++c) {
        if (lane + c * 32 >= chunks) break;
#pragma unroll
        for (int k = 0; k < 8; ++k) squares += (v[c][k] - mean) * (v[c][k] - mean);
    }
    const float rstd = rsqrtf(warp_sum(squares) / cols + eps);
#pragma unroll
    for (int c = 0; c < LN_CHUNKS; ++c) {
        const int chunk = lane + c * 32;
        if (chunk >= chunks) break;
        float w[8], b[8];
        unpack8(*reinterpret_cast<const uint4*>(weight + chunk * 8), w);
        unpack8(*reinterpret_cast<const uint4*>(bias + chunk * 8), b);
#pragma unroll
        for (int k = 0; k < 8; ++k) v[c][k] = (v[c][k] - mean) * rstd * w[k] + b[k];
        *reinterpret_cast<uint4*>(out + row * cols + chunk * 8) = pack8(v[c]);
    }
}
