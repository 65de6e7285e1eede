// RMSNorm of a row into shared memory: its own kernel, and the first stage of the router and of the
// projections that take a normed input.

#pragma once

#include "common.cuh"

// RMSNorm of row `row` into `cache` (h floats, shared): T(T(v · rsqrt(mean(v²) + eps)) · w) with v = x, or
// v = T(x + delta) (the residual add) when `delta` is given. `sum_out` / `out`, when given, receive v and
// the normed row in T. Every thread of the block takes part, 8 values at a time (h a multiple of 8): a row of
// up to 8 · blockDim values is one round of loads, the norm weights requested with them, so that the norm
// waits on memory once rather than once per value a thread takes.
template <typename T>
__device__ void normed_row(const T* x, const T* delta, const T* w, T* sum_out, T* out, float* cache, size_t row,
                           int h, float eps) {
    x += row * h;
    const int first = threadIdx.x * 8, stride = blockDim.x * 8;
    float w_first[8];
    if (first < h) load8(w + first, w_first);
    float ss = 0.0f;
    for (int c = first; c < h; c += stride) {
        float v[8];
        load8(x + c, v);
        if (delta) {
            float d[8];
            load8(delta + row * h + c, d);
#pragma unroll
            for (int q = 0; q < 8; ++q) v[q] = round_to<T>(v[q] + d[q]);
            if (sum_out) store8(sum_out + row * h + c, v);
        }
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

// RMSNorm, one row per block, with the residual add first when `delta` is given (its sum to `sum_out`).
// Dynamic shared memory: h floats.
template <typename T>
__device__ void rms_norm(const T* x, const T* delta, const T* w, T* sum_out, T* out, int h, float eps) {
    extern __shared__ float row_cache[];
    normed_row(x, delta, w, sum_out, out, row_cache, blockIdx.x, h, eps);
}
