// Hopper tensor-map copies (TMA, cp.async.bulk.tensor): one thread moves a 4-D box of a
// global tensor into shared memory with one instruction, completing on an mbarrier
// (bulk_copy.cuh's mbar_* functions). Boxes may start at negative coordinates or run past
// the tensor's end: those elements are written as zeros, so a convolution tile's halo needs
// no bounds checks. Used by forward_wgmma.cu for its channels_last input tiles, which
// per-thread cp.asyncs (16-bit) or register loads (float32) staged with per-slot address math
// (ncu, run DC: 60 instructions per warp per MMA).
//
// Host side: the driver's cuTensorMapEncodeTiled, reached through the runtime's entry-point
// query so that the extension does not link libcuda itself.
#pragma once

#include <cuda.h>
#include <cuda_runtime.h>
#include <cudaTypedefs.h>

#include <c10/core/ScalarType.h>

#include <cstdint>

#include "bulk_copy.cuh"

namespace convt {
namespace tma {

// The map's element type for float (read as TF32 by the MMAs), bfloat16 or float16.
inline CUtensorMapDataType data_type(c10::ScalarType dtype) {
  return dtype == c10::kFloat      ? CU_TENSOR_MAP_DATA_TYPE_FLOAT32
         : dtype == c10::kBFloat16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16
                                   : CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
}

// A 4-D tiled map. dims[0] is the innermost (contiguous) dimension; strides_bytes[i] is the
// byte stride of dims[i + 1] (multiples of 16); box[i] <= 256 and box[0] times the element
// size a multiple of 16 bytes. Returns false where the driver rejects it (the caller then
// takes another path).
// swizzle: CU_TENSOR_MAP_SWIZZLE_NONE for the interleave layouts of wgmma.cuh; 128B for boxes
// whose inner dimension is 128 bytes, stored as swizzled 128-byte rows (1024-byte aligned dst).
inline bool encode_4d(CUtensorMap* map, CUtensorMapDataType type, const void* base, const uint64_t dims[4],
                      const uint64_t strides_bytes[3], const uint32_t box[4],
                      CUtensorMapSwizzle swizzle = CU_TENSOR_MAP_SWIZZLE_NONE) {
  using Encode = PFN_cuTensorMapEncodeTiled_v12000;
  static Encode encode = [] {
    void* fn = nullptr;
    cudaDriverEntryPointQueryResult q{};
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000, cudaEnableDefault, &q) !=
            cudaSuccess ||
        q != cudaDriverEntryPointSuccess) {
      (void)cudaGetLastError();
      fn = nullptr;
    }
    return reinterpret_cast<Encode>(fn);
  }();
  if (encode == nullptr) return false;
  const cuuint32_t elem_strides[4] = {1, 1, 1, 1};
  cuuint64_t d[4], s[3];
  cuuint32_t b[4];
  for (int i = 0; i < 4; ++i) {
    d[i] = dims[i];
    b[i] = box[i];
  }
  for (int i = 0; i < 3; ++i) s[i] = strides_bytes[i];
  const CUresult r = encode(map, type, 4, const_cast<void*>(base), d, s, b, elem_strides,
                            CU_TENSOR_MAP_INTERLEAVE_NONE, swizzle,
                            CU_TENSOR_MAP_L2_PROMOTION_L2_128B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  return r == CUDA_SUCCESS;
}

#ifdef CONVT_SM90A_DEVICE
// Issuing thread: the box at coordinates (c0 innermost .. c3) into dst (128-byte aligned),
// completing on bar; the caller announced the bytes with mbarrier arrive.expect_tx.
__device__ __forceinline__ void load_4d(void* dst, const CUtensorMap* map, int c0, int c1, int c2, int c3,
                                        uint64_t* bar) {
  asm volatile(
      "cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%2, %3, %4, %5}], [%6];\n" ::"r"(bulk::smem_addr(dst)),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(bulk::smem_addr(bar))
      : "memory");
}

// Announces `bytes` on bar (one arrival: the barriers are initialised for one).
__device__ __forceinline__ void expect_bytes(uint64_t* bar, uint32_t bytes) { bulk::arrive_expect(bar, bytes); }
#endif  // CONVT_SM90A_DEVICE

}  // namespace tma
}  // namespace convt
