// What the decode kernels share: the activation types and rounding through them, warp and block sums, and
// 8 values at a time loaded and stored (the 16-byte accesses every row kernel is built on).

#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>

typedef __nv_bfloat16 bf16;

__device__ __forceinline__ float to_float(float x) { return x; }
__device__ __forceinline__ float to_float(bf16 x) { return __bfloat162float(x); }

template <typename T> __device__ __forceinline__ T from_float(float x);
template <> __device__ __forceinline__ float from_float<float>(float x) { return x; }
template <> __device__ __forceinline__ bf16 from_float<bf16>(float x) { return __float2bfloat16(x); }

// Round through T: what a T-typed tensor op stores.
template <typename T> __device__ __forceinline__ float round_to(float x) { return to_float(from_float<T>(x)); }

// Programmatic dependent launch (compute capability 9.0 on; dependent_launch.rs): a decode kernel may be
// placed on the SMs while the kernel ahead of it still runs. It waits here, before it touches any memory an
// earlier kernel writes or reads, then lets the kernel after it be placed in turn. A plain launch passes
// straight through.
__device__ __forceinline__ void follow_previous_kernel() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;" ::: "memory");
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

// Asks L2 for the bytes [p, p + bytes), a 128-byte line per thread of the block at a time, so that the loads
// that follow find them there. It holds no registers.
__device__ __forceinline__ void prefetch_l2_block(const void* p, size_t bytes) {
    const char* c = static_cast<const char*>(p);
    for (size_t off = (size_t)threadIdx.x * 128; off < bytes; off += (size_t)blockDim.x * 128)
        asm volatile("prefetch.global.L2 [%0];" ::"l"(c + off));
}

__device__ __forceinline__ float warp_sum(float v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

__device__ __forceinline__ float warp_max(float v) {
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

// Sum over the block (blockDim.x a multiple of 32, at most 1024); every thread gets the total.
__device__ float block_sum(float v) {
    __shared__ float partial[32];
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    v = warp_sum(v);
    __syncthreads();
    if (lane == 0) partial[warp] = v;
    __syncthreads();
    float total = 0.0f;
    for (int w = 0; w < (int)blockDim.x / 32; ++w) total += partial[w];
    return total;
}

// 8 consecutive values as floats (16-byte aligned: rows are multiples of 8 elements).
__device__ __forceinline__ void load8(const float* p, float out[8]) {
    const float4 a = *reinterpret_cast<const float4*>(p);
    const float4 b = *reinterpret_cast<const float4*>(p + 4);
    out[0] = a.x; out[1] = a.y; out[2] = a.z; out[3] = a.w;
    out[4] = b.x; out[5] = b.y; out[6] = b.z; out[7] = b.w;
}

__device__ __forceinline__ void load8(const bf16* p, float out[8]) {
    const uint4 raw = *reinterpret_cast<const uint4*>(p);
    const bf16* v = reinterpret_cast<const bf16*>(&raw);
#pragma unroll
    for (int i = 0; i < 8; ++i) out[i] = __bfloat162float(v[i]);
}

// 8 consecutive values kept as loaded (16 bytes per 4 floats or 8 bf16): loads requested early are converted
// late without holding 8 floats per chunk in registers.
template <typename T>
struct Raw8 {
    uint4 v[sizeof(T) / 2];
};

template <typename T>
__device__ __forceinline__ void fetch8(const T* p, Raw8<T>& raw) {
#pragma unroll
    for (int i = 0; i < (int)(sizeof(T) / 2); ++i) raw.v[i] = reinterpret_cast<const uint4*>(p)[i];
}

template <typename T>
__device__ __forceinline__ void unpack8(const Raw8<T>& raw, float out[8]) {
    const T* v = reinterpret_cast<const T*>(raw.v);
#pragma unroll
    for (int i = 0; i < 8; ++i) out[i] = to_float(v[i]);
}

__device__ __forceinline__ float silu(float x) { return x / (1.0f + expf(-x)); }

// 8 values rounded to T, stored as one or two 16-byte writes (16-byte aligned, as load8).
template <typename T>
__device__ __forceinline__ void store8(T* p, const float v[8]) {
    Raw8<T> raw;
    T* out = reinterpret_cast<T*>(raw.v);
#pragma unroll
    for (int i = 0; i < 8; ++i) out[i] = from_float<T>(v[i]);
#pragma unroll
    for (int i = 0; i < (int)(sizeof(T) / 2); ++i) reinterpret_cast<uint4*>(p)[i] = raw.v[i];
}

// Called by every thread of a block after it wrote what another block may read: true in the block that is
// the `arrivals`-th to arrive at `done` (which it resets for the next launch). That block then reads the
// others' writes (fenced here, read with __ldcg).
__device__ bool last_to_arrive(unsigned* done, unsigned arrivals) {
    __shared__ bool last;
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0) {
        last = atomicAdd(done, 1u) == arrivals - 1;
        if (last) *done = 0;
    }
    __syncthreads();
    if (last) __threadfence();
    return last;
}
