// 32-bit tap walk along one axis, shared by the gather kernels (direct, depthwise,
// col2im). geometry.h has the math (axis_phase); this is its GPU form.
//
// Output coordinate o receives taps t0, t0 + step, t0 + 2*step, ... (below the kernel
// size) from input coordinates i0, i0 - in_step, ... where t0 depends only on the
// residue (o + padding) mod stride. A table per residue replaces the search for
// strides up to kMaxTapTable, so a thread finds its taps with one modulo and one
// division, and never tests a tap that cannot reach it.
//
// 32-bit on purpose: these run once per output element, and 64-bit division is a
// slow software routine on the GPU. Callers check extents on the host (< 2^30) and
// still form memory offsets in 64 bits.
#pragma once

#include "../geometry.h"

namespace convt {

constexpr int kMaxTapTable = 32;

struct AxisTaps {
  int kernel, stride, padding, dilation;
  int step;                 // tap step: stride / gcd(stride, dilation)
  int in_step;              // input step per tap step: dilation / gcd(stride, dilation)
  int t0[kMaxTapTable];     // first tap per residue, or `kernel` when none reaches it
};

// Host: the table for one axis.
inline AxisTaps make_axis_taps(int64_t kernel, int64_t stride, int64_t padding, int64_t dilation) {
  AxisTaps a{};
  a.kernel = static_cast<int>(kernel);
  a.stride = static_cast<int>(stride);
  a.padding = static_cast<int>(padding);
  a.dilation = static_cast<int>(dilation);
  const int64_t g = gcd64(stride, dilation);
  a.step = static_cast<int>(stride / g);
  a.in_step = static_cast<int>(dilation / g);
  for (int r = 0; r < kMaxTapTable; ++r) {
    const AxisPhase ph = axis_phase(r % stride, stride, dilation, kernel);
    a.t0[r] = ph.first_tap < 0 ? a.kernel : static_cast<int>(ph.first_tap);
  }
  return a;
}

// Where the walk for output coordinate o starts: first tap and its input coordinate.
// When no tap reaches o, tap == kernel and the caller's loop runs zero times.
struct TapStart {
  int tap;
  int in;
};

__device__ __forceinline__ TapStart first_tap(const AxisTaps& a, int o) {
  const int q = o + a.padding;
  const int r = q % a.stride;
  int t = a.kernel;
  if (a.stride <= kMaxTapTable) {
    t = a.t0[r];
  } else {
    for (int c = 0; c < a.step && c < a.kernel; ++c) {
      if ((c * a.dilation) % a.stride == r) {
        t = c;
        break;
      }
    }
  }
  return {t, (q - t * a.dilation) / a.stride};  // exact when t < kernel
}

// Calls f(tap, input_coordinate) for every tap from `s` whose input coordinate lies in
// [0, in_extent). Input coordinates fall as taps rise: the first ones may be past the
// end (skipped), and the walk stops at the first negative one.
template <typename F>
__device__ __forceinline__ void for_each_tap(const AxisTaps& a, TapStart s, int in_extent, F&& f) {
  int i = s.in;
  for (int t = s.tap; t < a.kernel; t += a.step, i -= a.in_step) {
    if (i >= in_extent) continue;
    if (i < 0) break;
    f(t, i);
  }
}

}  // namespace convt
