// Device helpers shared by the consumer warpgroups of the warp-specialized forwards
// (forward_wgmma_ws.cu, forward_kernel_stride.cu): the consumer's named barrier, the release of
// consumed stages to the producer, and the 16-bit epilogue's transposing store of the
// accumulators.
// sm_90a only: callers compile these under CONVT_SM90A_DEVICE.
#pragma once

#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>

#include <cstdint>

#include "bulk_copy.cuh"
#include "wgmma.cuh"

namespace convt {
namespace ws {

#ifdef CONVT_SM90A_DEVICE
// Barrier `id` (1, 2: one per consumer) among the consumer's 128 threads.
__device__ __forceinline__ void consumer_sync(int id) {
  asm volatile("bar.sync %0, 128;\n" ::"r"(id) : "memory");
}

// After a stage's MMAs are committed: the previous stage's MMAs are done once at most this
// stage's group is in flight, so its stage goes back to the producer (one arrival per warp on
// its `empty` barrier). prev: the previous stage, -1 before the first; becomes s.
__device__ __forceinline__ void release_previous(uint64_t* empty, int& prev, int s, int lane) {
  wgmma::wait<1>();
  if (prev >= 0 && lane == 0) bulk::mbar_arrive(&empty[prev]);
  prev = s;
}
// After the last stage of an item: all its MMAs done, the last stage back to the producer.
__device__ __forceinline__ void release_last(uint64_t* empty, int prev, int lane) {
  wgmma::wait<0>();
  if (lane == 0) bulk::mbar_arrive(&empty[prev]);
}

// Two floats as one register of two T (bfloat16 / float16), `lo` in the low half.
template <typename T>
__device__ __forceinline__ uint32_t pack_pair(float lo, float hi) {
  return static_cast<uint32_t>(static_cast<T>(lo).x) | (static_cast<uint32_t>(static_cast<T>(hi).x) << 16);
}

// V consecutive outputs from V floats (16-byte aligned in shared memory for V >= 4, 8 for V = 2)
// to T, one global store of V x sizeof(T) bytes (aligned to it): V = 1, 2, 4 (float or 16-bit),
// 8 (16-bit). The paired-phase NCHW epilogue's whole-row runs (forward_wgmma_ws.cu).
template <typename T, int V>
__device__ __forceinline__ void store_run(T* dst, const float* src) {
  static_assert(V == 1 || V == 2 || V == 4 || (V == 8 && sizeof(T) == 2), "up to 16 bytes per store");
  if constexpr (V == 1) {
    *dst = static_cast<T>(*src);
  } else if constexpr (V == 2) {
    const float2 a = *reinterpret_cast<const float2*>(src);
    if constexpr (std::is_same_v<T, float>) {
      *reinterpret_cast<float2*>(dst) = a;
    } else {
      *reinterpret_cast<uint32_t*>(dst) = pack_pair<T>(a.x, a.y);
    }
  } else {
    const float4 a = *reinterpret_cast<const float4*>(src);
    if constexpr (std::is_same_v<T, float>) {
      *reinterpret_cast<float4*>(dst) = a;
    } else if constexpr (V == 4) {
      *reinterpret_cast<uint2*>(dst) = make_uint2(pack_pair<T>(a.x, a.y), pack_pair<T>(a.z, a.w));
    } else {
      const float4 b = *reinterpret_cast<const float4*>(src + 4);
      *reinterpret_cast<uint4*>(dst) = make_uint4(pack_pair<T>(a.x, a.y), pack_pair<T>(a.z, a.w),
                                                  pack_pair<T>(b.x, b.y), pack_pair<T>(b.z, b.w));
    }
  }
}

// The 16-bit epilogue's first step: the accumulators D[co][px] (co = 16 warp + g, + 8: bias
// b_lo / b_hi added) stored transposed, as rows [px][channels] of a staging tile, by
// stmatrix.trans. row_addr: this lane's row address for the first 16 pixels (see the callers);
// each further 16 pixels are pitch_bytes x 16 on. Pixel blocks JJ0 .. JJ0 + NJJ - 1 of 16 pixels
// (accumulators 8 JJ0 ..) go to the staging rows from 0: a half tile at a time where the room
// is short (forward_wgmma_ws.cu, WsParams::half_staged).
template <typename T, int JJ0, int NJJ, int NACC>
__device__ __forceinline__ void stage_transposed_part(const float (&acc)[NACC], uint32_t row_addr, int pitch_bytes,
                                                      float b_lo, float b_hi) {
  static_assert(JJ0 >= 0 && (JJ0 + NJJ) * 8 <= NACC, "pixel blocks inside the accumulators");
#pragma unroll
  for (int jj = 0; jj < NJJ; ++jj) {
    const int j0 = 2 * (JJ0 + jj), j1 = j0 + 1;
    wgmma::stmatrix_x4_trans(row_addr + static_cast<uint32_t>(jj * 16 * pitch_bytes),
                             pack_pair<T>(acc[4 * j0] + b_lo, acc[4 * j0 + 1] + b_lo),
                             pack_pair<T>(acc[4 * j0 + 2] + b_hi, acc[4 * j0 + 3] + b_hi),
                             pack_pair<T>(acc[4 * j1] + b_lo, acc[4 * j1 + 1] + b_lo),
                             pack_pair<T>(acc[4 * j1 + 2] + b_hi, acc[4 * j1 + 3] + b_hi));
  }
}
// All NACC / 8 pixel blocks.
template <typename T, int NACC>
__device__ __forceinline__ void stage_transposed(const float (&acc)[NACC], uint32_t row_addr, int pitch_bytes,
                                                 float b_lo, float b_hi) {
  stage_transposed_part<T, 0, NACC / 8>(acc, row_addr, pitch_bytes, b_lo, b_hi);
}
#endif  // CONVT_SM90A_DEVICE

}  // namespace ws
}  // namespace convt
