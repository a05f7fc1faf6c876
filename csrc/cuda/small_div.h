// Division of small non-negative ints by a divisor fixed for a launch (the warp-specialized
// forward's slot pitch P), as one multiply and one shift instead of the compiler's integer
// division (~12 dependent instructions with a reciprocal).
//
// Why: the ws forward's consumers decode every output slot into (row, column) of the tile in
// their epilogue, and the kernel is bound by those threads' issue, not by its MMAs or memory (run
// XG/XH, ncu: 11-12% more instructions from the tall-tile decode cost 22-24% of the kernel time).
//
// Exact for 0 <= n < 1024 and 1 <= d <= 1024 (checked for every pair): with m = ceil(2^20 / d),
// m d = 2^20 + e, 0 <= e < d, n m / 2^20 = n / d + n e / (d 2^20) and n e < n d <= 2^20, so the
// excess stays below 1 / d, the gap from n / d's fraction to the next integer; n m < 2^30.
#pragma once

#include <cstdint>

namespace convt {

constexpr int kSmallDivLimit = 1024;  // n and d below / up to this
constexpr int kSmallDivShift = 20;

// The multiplier for divisor d (1 <= d <= kSmallDivLimit).
inline uint32_t small_div_multiplier(int d) {
  return static_cast<uint32_t>(((uint64_t{1} << kSmallDivShift) + d - 1) / d);
}

#ifdef __CUDACC__
// n / d for 0 <= n < kSmallDivLimit, m = small_div_multiplier(d).
__device__ __forceinline__ int small_div(int n, uint32_t m) {
  return static_cast<int>((static_cast<uint32_t>(n) * m) >> kSmallDivShift);
}
#endif

}  // namespace convt
