// Pack<T, V>: V elements of T as one aligned vector, so that a load or store of it is one
// vector instruction (8 or 16 bytes). Shared by the vectorised kernels (forward_depthwise.cu,
// backward_s2d_gemm.cu); callers check the pointer's alignment before casting to it.
#pragma once

namespace convt {

template <typename T, int V>
struct alignas(sizeof(T) * V) Pack {
  T v[V];
};

}  // namespace convt
