// Hopper bulk copies (cp.async.bulk, the TMA engine without a tensor map) completing on a
// shared-memory mbarrier. One thread moves a contiguous global block into shared memory
// with one instruction; the other threads wait on the barrier's phase. Used by
// forward_wgmma.cu for the pre-packed weights of a chunk, which per-thread cp.async
// copied at ~20 instructions per 16 bytes.
// sm_90a only: callers compile these under CONVT_SM90A_DEVICE (wgmma.cuh defines it).
#pragma once

#include <cstdint>

#include "wgmma.cuh"

namespace convt {
namespace bulk {

#ifdef CONVT_SM90A_DEVICE
__device__ __forceinline__ uint32_t smem_addr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// One arrival completes a phase (the issuing thread's arrive.expect_tx), together with
// the transaction bytes it announced.
__device__ __forceinline__ void mbar_init(uint64_t* bar) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;\n" ::"r"(smem_addr(bar)) : "memory");
}

// `count` arrivals complete a phase, where several threads release a barrier
// (forward_wgmma_ws.cu: one per warp of a consumer warpgroup).
__device__ __forceinline__ void mbar_init(uint64_t* bar, uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(smem_addr(bar)), "r"(count) : "memory");
}

// One plain arrival (no transaction bytes).
__device__ __forceinline__ void mbar_arrive(uint64_t* bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(smem_addr(bar)) : "memory");
}

// Makes the initialisation visible to the async proxy (the copy engine); a block barrier
// after it publishes the barrier to the other threads.
__device__ __forceinline__ void fence_mbar_init() {
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}

// Issuing thread: the barrier's one arrival, announcing `bytes` of copies to come.
__device__ __forceinline__ void arrive_expect(uint64_t* bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(smem_addr(bar)),
               "r"(bytes)
               : "memory");
}

// Starts a copy global -> shared (16-byte aligned addresses, size a multiple of 16) that
// completes `bytes` of what arrive_expect announced on `bar`.
__device__ __forceinline__ void copy_g2s_only(void* dst, const void* src, uint32_t bytes, uint64_t* bar) {
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(
          smem_addr(dst)),
      "l"(src), "r"(bytes), "r"(smem_addr(bar))
      : "memory");
}

// Issuing thread: announce `bytes` and start the copy global -> shared, one copy completing
// the barrier's phase.
__device__ __forceinline__ void copy_g2s(void* dst, const void* src, uint32_t bytes, uint64_t* bar) {
  arrive_expect(bar, bytes);
  copy_g2s_only(dst, src, bytes, bar);
}

// Waits until the barrier's phase `parity` (0, 1, 0, ... for its 1st, 2nd, 3rd use) completed.
__device__ __forceinline__ void mbar_wait(uint64_t* bar, uint32_t parity) {
  asm volatile(
      "{\n.reg .pred done;\n"
      "WAIT:\n"  // a label local to this { } scope, so every inlined copy has its own
      "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
      "@!done bra WAIT;\n}\n" ::"r"(smem_addr(bar)),
      "r"(parity)
      : "memory");
}
#endif  // CONVT_SM90A_DEVICE

}  // namespace bulk
}  // namespace convt
