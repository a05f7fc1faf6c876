// Pack<T, V>: V elements of T as one aligned vector, so that a load or store of it is one
// vector instruction (8 or 16 bytes). Shared by the vectorised kernels (forward_depthwise.cu,
// backward_s2d_gemm.cu); callers check the pointer's alignment before casting to it.
// launch_vector_or_element / launch_width_or_element: the element type (or vector width) of the
// copies that move 16-byte vectors where lengths and pointers allow, else single elements.
// operand_digits: the innermost digits of the wgmma forwards' packed weights.
#pragma once

#include <cuda_runtime.h>  // uint4

#include <cstdint>
#include <type_traits>

namespace convt {

template <typename T, int V>
struct alignas(sizeof(T) * V) Pack {
  T v[V];
};

// Calls launch(uint4{}) where `vec` (16-byte vectors apply), else launch(T{}); `launch` is a
// generic lambda that instantiates its kernel for the element type it is given.
template <typename T, typename Launch>
void launch_vector_or_element(bool vec, Launch&& launch) {
  if (vec) {
    launch(uint4{});
  } else {
    launch(T{});
  }
}

// Calls launch(std::integral_constant<int, kVec>{}) where `vec` (kVec-element vectors apply),
// else launch(std::integral_constant<int, 1>{}): for kernels templated on a vector width.
template <int kVec, typename Launch>
void launch_width_or_element(bool vec, Launch&& launch) {
  if (vec) {
    launch(std::integral_constant<int, kVec>{});
  } else {
    launch(std::integral_constant<int, 1>{});
  }
}

// A packed weight's index split into the digits of its wgmma operand block
// [quantum q < Q][channel co_l < CO][element e < EPQ] (EPQ elements per 16-byte quantum) and the
// block's index `rest`: the innermost layout of every forward weight packing
// (forward_wgmma.cu, forward_wgmma_ws.cu, forward_kernel_stride.cu).
struct OperandDigits {
  int e, co_l, q;
  int64_t rest;
};
template <int EPQ, int CO, int Q>
__host__ __device__ __forceinline__ OperandDigits operand_digits(int64_t idx) {
  OperandDigits d;
  d.e = static_cast<int>(idx % EPQ);
  idx /= EPQ;
  d.co_l = static_cast<int>(idx % CO);
  idx /= CO;
  d.q = static_cast<int>(idx % Q);
  d.rest = idx / Q;
  return d;
}

}  // namespace convt
