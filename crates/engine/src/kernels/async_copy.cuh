// Copies global → shared memory that run while the threads that asked for them go on (cp.async, sm_80 and
// later): the GEMMs' pipelines and the values of a decode-attention tile.

#pragma once

#include <stdint.h>

__device__ __forceinline__ uint32_t smem_address(const void* p) {
    return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// A 16-byte copy global → shared that skips L1. The L2 is told to fetch the 256 bytes around it: a GEMM's
// k-step reads only 64 bytes of each row, and its next k-steps' pieces of the weight rows are then already on
// chip (T = 1131: 287 → 253 µs for gate_up + down).
__device__ __forceinline__ void cp_async_16(uint32_t dst, const void* src) {
    asm volatile("cp.async.cg.shared.global.L2::256B [%0], [%1], 16;\n" ::"r"(dst), "l"(src));
}

__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }

// Waits until at most PENDING of the thread's committed groups are still in flight.
template <int PENDING>
__device__ __forceinline__ void cp_async_wait() {
    asm volatile("cp.async.wait_group %0;\n" ::"n"(PENDING) : "memory");
}
