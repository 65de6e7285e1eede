// The weight matrices the row kernels read: dense in the activations' type, or DeepRead's int8 rows.

#pragma once

#include "common.cuh"

// How the row kernels read a weight matrix (N, K), row by row, `width` values a lane at a time: `fetch` requests
// them as loaded (`Held`), `unpack` turns them into floats, so that loads requested early are converted late.
// Dense<T>: in the activations' type T, 8 values (16 bytes in bf16), routed experts stacked (E, N, K). Int8:
// DeepRead's int8 rows (quant/matrix.rs): a row holds its K int8 weights, then an f16 scale per block of 32,
// padded to 16 bytes, so that a lane reads 16 weights in one 16-byte load; routed experts stacked (E, N, row
// bytes). Int8 is weight-only: the weights are dequantized in registers (scale · q in f32) and the activations
// stay in T.
template <typename T>
struct Dense {
    typedef const T* Row;
    typedef const T* Experts;
    typedef Raw8<T> Held;
    static constexpr int width = 8;
    static __device__ __forceinline__ Row row(Row w, size_t r, int k) { return w + r * k; }
    static __device__ __forceinline__ Row expert(Experts w, int e, int rows, int k) {
        return w + (size_t)e * rows * k;
    }
    static __device__ __forceinline__ void fetch(Row row, int c, int, Held& held) { fetch8(row + c, held); }
    static __device__ __forceinline__ void unpack(const Held& held, float out[8]) { ::unpack8(held, out); }
    static __device__ __forceinline__ void unpack8(const Held& held, int, float out[8]) { ::unpack8(held, out); }
    static __device__ __forceinline__ int row_bytes(int k) { return k * (int)sizeof(T); }
};

// Four int8 (a word's bytes, lowest first) as floats, exactly, without I2F, which sm_80–sm_90 issue at a quarter
// of the FMA rate and which decided the MoE kernels' speed at many rows: each byte, its sign bit flipped to make
// it q + 128, becomes the low byte of 2^23's bits (the float 2^23 + q + 128), and 2^23 + 128 is taken off.
__device__ __forceinline__ void int8x4_to_float(uint32_t word, float out[4]) {
    const uint32_t biased = word ^ 0x80808080u;
#pragma unroll
    for (int i = 0; i < 4; ++i) out[i] = __uint_as_float(__byte_perm(biased, 0x4B000000u, 0x7650 | i)) - 8388736.0f;
}

struct Int8 {
    typedef const uint8_t* Row;
    typedef const uint8_t* Experts;
    struct Held {
        uint4 q;
        __half d;
    };
    static constexpr int width = 16;
    // K bytes of weights, then K/32 two-byte scales rounded up to 16 bytes (K a multiple of 32).
    static __device__ __forceinline__ int row_bytes(int k) { return k + (k / 16 + 15) / 16 * 16; }
    static __device__ __forceinline__ Row row(Row w, size_t r, int k) { return w + r * row_bytes(k); }
    static __device__ __forceinline__ Row expert(Experts w, int e, int rows, int k) {
        return w + (size_t)e * rows * row_bytes(k);
    }
    // c a multiple of 16: the 16 weights share their block's scale.
    static __device__ __forceinline__ void fetch(Row row, int c, int k, Held& held) {
        held.q = *reinterpret_cast<const uint4*>(row + c);
        held.d = reinterpret_cast<const __half*>(row + k)[c / 32];
    }
    static __device__ __forceinline__ void unpack(const Held& held, float out[16]) {
        unpack8(held, 0, out);
        unpack8(held, 8, out + 8);
    }
    // Values p to p + 7 of the 16 (p 0 or 8).
    static __device__ __forceinline__ void unpack8(const Held& held, int p, float out[8]) {
        const float d = __half2float(held.d);
        const uint32_t* words = reinterpret_cast<const uint32_t*>(&held.q) + p / 4;
        int8x4_to_float(words[0], out);
        int8x4_to_float(words[1], out + 4);
#pragma unroll
        for (int i = 0; i < 8; ++i) out[i] *= d;
    }
};

// `width` weights of row `row` from column c as floats.
template <typename W>
__device__ __forceinline__ void load_weights(typename W::Row row, int c, int k, float out[W::width]) {
    typename W::Held held;
    W::fetch(row, c, k, held);
    W::unpack(held, out);
}

// `width` consecutive values of x as floats (width a multiple of 8).
template <int WIDTH, typename T>
__device__ __forceinline__ void load_wide(const T* p, float out[WIDTH]) {
#pragma unroll
    for (int i = 0; i < WIDTH; i += 8) load8(p + i, out + i);
}
