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

// SAM's relative-position terms for one (batch, head) and query grid row qh a block:
//   out_h[b, head, i, kh] = Σ_c q[b, head, i, c] · Rh[qh, kh, c],  out_w[b, head, i, kw] = Σ_c q[..] · Rw[qw, kw, c]
// for the queries i = qh·w + qw of that row, with f32 sums rounded to bf16 (the reference's bf16 einsum).
// q is strided (batch, head, row; last dim contiguous), Rh (h, h, HD) and Rw (w, w, HD) contiguous, out_h
// (B, heads, h·w, h) and out_w (B, heads, h·w, w) contiguous. Rh[qh] sits in shared memory with rows padded
// by one 4-byte word, so the lanes of a warp (one key row each) read distinct banks. Grid (h, heads, B),
// block REL_WARPS warps, a warp per query; h, w ≤ REL_MAX_SIDE.
constexpr int REL_WARPS = 4;
constexpr int REL_MAX_SIDE = 64;

template <int HD>
__device__ void rel_pos_terms(const bf16* q, long long q_batch, long long q_head, long long q_row, const bf16* rh,
                              const bf16* rw, bf16* out_h, bf16* out_w, int heads, int h, int w) {
    constexpr int ROW = HD + 2;
    __shared__ __align__(16) bf16 table[REL_MAX_SIDE * ROW];
    __shared__ float query[REL_WARPS][HD];
    const int qh = blockIdx.x, head = blockIdx.y, b = blockIdx.z;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    for (int e = threadIdx.x; e < h * HD; e += REL_WARPS * 32) {
        table[(e / HD) * ROW + e % HD] = rh[((long long)qh * h) * HD + e];
    }
    __syncthreads();
    const long long n = (long long)h * w;
    const long long head_row = ((long long)b * heads + head) * n;
    for (int qw = warp; qw < w; qw += REL_WARPS) {
        const long long i = (long long)qh * w + qw;
        const bf16* q_i = q + b * q_batch + head * q_head + i * q_row;
        for (int c = lane; c < HD; c += 32) query[warp][c] = __bfloat162float(q_i[c]);
        __syncwarp();
        for (int kh = lane; kh < h; kh += 32) {
            const __nv_bfloat162* r = reinterpret_cast<const __nv_bfloat162*>(table + kh * ROW);
            float acc = 0.0f;
#pragma unroll
            for (int c = 0; c < HD / 2; ++c) {
                const float2 f = __bfloat1622float2(r[c]);
                acc += query[warp][2 * c] * f.x + query[warp][2 * c + 1] * f.y;
            }
            out_h[(head_row + i) * h + kh] = __float2bfloat16(acc);
        }
        for (int kw = lane; kw < w; kw += 32) {
            const uint4* r = reinterpret_cast<const uint4*>(rw + ((long long)qw * w + kw) * HD);
            float acc = 0.0f;
#pragma unroll
            for (int chunk = 0; chunk < HD / 8; ++chunk) {
                float f[8];
                unpack8(r[chunk], f);
#pragma unroll
                for (int k = 0; k < 8; ++k) acc += query[warp][chunk * 8 + k] * f[k];
            }
            out_w[(head_row + i) * w + kw] = __float2bfloat16(acc);
        }
        __syncwarp();
    }
}

extern "C" __global__ void __launch_bounds__(REL_WARPS * 32)
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
