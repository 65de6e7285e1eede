// RMSNorm of a row into shared memory: its own kernel, and the first stage of the router and of the
// projections that take a normed input.

#pragma once

#include "common.cuh"

// Where a norm's row comes from, 8 values at a time, each in T (as the kernel that would otherwise write the
// row rounds it): the row itself, the residual add x + delta, or x plus a MoE layer's output.
template <typename T>
struct RowOf {
    const T* x;
    __device__ __forceinline__ void load(size_t row, int h, int c, float v[8]) const { load8(x + row * h + c, v); }
};

template <typename T>
struct ResidualAdd {
    const T* x;
    const T* delta;
    __device__ __forceinline__ void load(size_t row, int h, int c, float v[8]) const {
        float d[8];
        load8(x + row * h + c, v);
        load8(delta + row * h + c, d);
#pragma unroll
        for (int q = 0; q < 8; ++q) v[q] = round_to<T>(v[q] + d[q]);
    }
};

// moe_combine's arithmetic, so that a kernel after the experts can take their output without that launch:
// the k routed outputs y (B·k, h) added in order, rounded, then the shared experts' (B, h) if any, then x.
template <typename T>
struct MoeSum {
    const float* y;
    const float* shared;
    const T* x;
    int k;
    __device__ __forceinline__ void load(size_t row, int h, int c, float v[8]) const {
        float acc[8] = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
        for (int r = 0; r < k; ++r) {
            float part[8];
            load8(y + (row * k + r) * h + c, part);
#pragma unroll
            for (int q = 0; q < 8; ++q) acc[q] += part[q];
        }
        float sh[8], xv[8];
        if (shared) load8(shared + row * h + c, sh);
        load8(x + row * h + c, xv);
#pragma unroll
        for (int q = 0; q < 8; ++q) {
            float ffn = round_to<T>(acc[q]);
            if (shared) ffn = round_to<T>(ffn + sh[q]);
            v[q] = round_to<T>(xv[q] + ffn);
        }
    }
};

// RMSNorm of row `row` of `source` into `cache` (h floats, shared): T(T(v · rsqrt(mean(v²) + eps)) · w).
// `sum_out` / `out`, when given, receive v and the normed row in T. Every thread of the block takes part, 8
// values at a time (h a multiple of 8): a row of up to 8 · blockDim values is one round of loads, the norm
// weights requested with them, so that the norm waits on memory once rather than once per value a thread takes.
template <typename T, typename Source>
__device__ void normed_source(const Source& source, const T* w, T* sum_out, T* out, float* cache, size_t row, int h,
                              float eps) {
    const int first = threadIdx.x * 8, stride = blockDim.x * 8;
    float w_first[8];
    if (first < h) load8(w + first, w_first);
    float ss = 0.0f;
    for (int c = first; c < h; c += stride) {
        float v[8];
        source.load(row, h, c, v);
        if (sum_out) store8(sum_out + row * h + c, v);
        store8(cache + c, v);
#pragma unroll
        for (int q = 0; q < 8; ++q) ss += v[q] * v[q];
    }
    const float inv = 1.0f / sqrtf(block_sum(ss) / h + eps);
    for (int c = first; c < h; c += stride) {
        float wv[8], n[8];
        if (c == first) {
#pragma unroll
            for (int q = 0; q < 8; ++q) wv[q] = w_first[q];
        } else {
            load8(w + c, wv);
        }
        float v[8];
        load8(cache + c, v);
#pragma unroll
        for (int q = 0; q < 8; ++q) n[q] = round_to<T>(round_to<T>(v[q] * inv) * wv[q]);
        if (out) store8(out + row * h + c, n);
        store8(cache + c, n);
    }
    __syncthreads();
}

// normed_source of x, or of x + delta (the residual add, its sum to `sum_out`) when `delta` is given.
template <typename T>
__device__ void normed_row(const T* x, const T* delta, const T* w, T* sum_out, T* out, float* cache, size_t row,
                           int h, float eps) {
    if (delta)
        normed_source(ResidualAdd<T>{x, delta}, w, sum_out, out, cache, row, h, eps);
    else
        normed_source(RowOf<T>{x}, w, (T*)nullptr, out, cache, row, h, eps);
}

// RMSNorm, one row per block, with the residual add first when `delta` is given (its sum to `sum_out`).
// Dynamic shared memory: h floats.
template <typename T>
__device__ void rms_norm(const T* x, const T* delta, const T* w, T* sum_out, T* out, int h, float eps) {
    extern __shared__ float row_cache[];
    normed_row(x, delta, w, sum_out, out, row_cache, blockIdx.x, h, eps);
}
