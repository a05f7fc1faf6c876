// Pack<T, V>: V elements of T as one aligned vector, so that a load or store of it is one
// vector instruction (8 or 16 bytes). Shared by the vectorised kernels (forward_depthwise.cu,
// backward_s2d_gemm.cu); callers check the pointer's alignment before casting to it.
// launch_vector_or_element: the element type of the copies that move 16-byte vectors where
// lengths and pointers allow, else single elements.
#pragma once

#include <cuda_runtime.h>  // uint4

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

}  // namespace convt
