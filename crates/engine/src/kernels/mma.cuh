// The tensor-core instruction the GEMMs are built on (sm_80 and later).

#pragma once

#include <stdint.h>

// d += a · b for one 16×8×16 piece (a row-major 16×16, b column-major 16×8, bf16; d f32). Fragments, with
// g = lane / 4 and t = lane % 4: a[0] holds A[g][2t, 2t + 1], a[1] A[g + 8][2t, 2t + 1], a[2] A[g][2t + 8, 2t + 9],
// a[3] A[g + 8][2t + 8, 2t + 9]; b[0] holds B[2t, 2t + 1][g], b[1] B[2t + 8, 2t + 9][g]; d[0..1] D[g][2t, 2t + 1],
// d[2..3] D[g + 8][2t, 2t + 1].
__device__ __forceinline__ void mma_bf16_16x8x16(float d[4], const uint32_t a[4], const uint32_t b[2]) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
