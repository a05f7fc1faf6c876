// Shape and index math of a 2-D transposed convolution, shared by the CPU and
// CUDA kernels. Plain C++ (no ATen) so that it compiles in device code.
//
// Conventions (PyTorch's): input [N, Cin, H, W], weight [Cin, Cout/groups, KH, KW],
// output [N, Cout, Hout, Wout]. Input pixel i of an axis, through tap t, lands on
//     o = i * stride - padding + t * dilation
// and Hout = (H - 1) * stride - 2 * padding + dilation * (K - 1) + output_padding + 1.
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define CONVT_HOST_DEVICE __host__ __device__ __forceinline__
#define CONVT_UNROLL _Pragma("unroll")
#else
#define CONVT_HOST_DEVICE inline
#define CONVT_UNROLL
#endif

namespace convt {

// Everything a kernel needs to know about one call, after validation.
struct Geometry {
  int64_t N, Cin, Cout;  // batch, total input and output channels
  int64_t H, W;          // input spatial size
  int64_t Hout, Wout;    // output spatial size
  int64_t KH, KW;        // kernel size
  int64_t SH, SW;        // stride
  int64_t PH, PW;        // padding
  int64_t DH, DW;        // dilation
  int64_t OPH, OPW;      // output_padding
  int64_t groups;
  int64_t Cin_g, Cout_g;  // channels per group
};

// Output extent along one axis (may be < 1 for invalid arguments; callers check).
CONVT_HOST_DEVICE int64_t output_extent(int64_t in, int64_t kernel, int64_t stride,
                                        int64_t padding, int64_t dilation,
                                        int64_t output_padding) {
  return (in - 1) * stride - 2 * padding + dilation * (kernel - 1) + output_padding + 1;
}

// Output coordinate that input coordinate `i` reaches through tap `t`.
CONVT_HOST_DEVICE int64_t output_coord(int64_t i, int64_t t, int64_t stride,
                                       int64_t padding, int64_t dilation) {
  return i * stride - padding + t * dilation;
}

// floor(a / b) for b > 0 and a of either sign (C++ division truncates toward zero).
// constexpr so that kernels can size tables with it at compile time.
template <typename I>
constexpr CONVT_HOST_DEVICE I floor_div(I a, I b) {
  return a >= 0 ? a / b : -((-a + b - 1) / b);
}

// a / b rounded up, and a rounded up to a multiple of b (a >= 0, b > 0): the grid and
// tiling arithmetic of every kernel family.
CONVT_HOST_DEVICE int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
CONVT_HOST_DEVICE int64_t round_up(int64_t a, int64_t b) { return ceil_div(a, b) * b; }

// Kernel == stride with no padding, dilation or output padding: every output pixel is one tap
// of one input pixel, in kernel-row-major blocks (the forward's direct cuBLAS path and
// forward_kernel_stride.cu).
CONVT_HOST_DEVICE bool kernel_equals_stride(const Geometry& g) {
  return g.KH == g.SH && g.KW == g.SW && g.PH == 0 && g.PW == 0 && g.DH == 1 && g.DW == 1 &&
         g.Hout == g.H * g.KH && g.Wout == g.W * g.KW;
}

CONVT_HOST_DEVICE int64_t gcd64(int64_t a, int64_t b) {
  while (b != 0) {
    int64_t r = a % b;
    a = b;
    b = r;
  }
  return a;
}

// Phase (sub-pixel) decomposition along one axis.
//
// Output o receives tap t from input i = (o + padding - t * dilation) / stride when
// that division is exact. Writing q = (o + padding) mod stride ("residue"), the taps
// that reach o are those with t * dilation = q (mod stride). With g = gcd(stride,
// dilation), only residues divisible by g get any tap, and then the taps are
// t0, t0 + stride/g, t0 + 2*stride/g, ... below the kernel size. Each residue class
// is a dense stride-1 correlation over the input: no multiply by an inserted zero.
struct AxisPhase {
  int64_t first_tap;  // t0, or -1 when this residue receives no tap at all
  int64_t tap_step;   // stride / gcd(stride, dilation)
};

CONVT_HOST_DEVICE AxisPhase axis_phase(int64_t residue, int64_t stride, int64_t dilation,
                                       int64_t kernel) {
  const int64_t g = gcd64(stride, dilation);
  const int64_t step = stride / g;
  AxisPhase p{-1, step};
  if (residue % g != 0) return p;
  // Smallest t >= 0 with t * dilation = residue (mod stride); t < step when it exists.
  for (int64_t t = 0; t < step && t < kernel; ++t) {
    if ((t * dilation) % stride == residue) {
      p.first_tap = t;
      break;
    }
  }
  return p;
}

// Input coordinate feeding output coordinate o through tap t, or -1 when none
// (the division is inexact or the result is outside [0, in)).
CONVT_HOST_DEVICE int64_t input_coord(int64_t o, int64_t t, int64_t stride, int64_t padding,
                                      int64_t dilation, int64_t in) {
  const int64_t num = o + padding - t * dilation;
  if (num < 0 || num % stride != 0) return -1;
  const int64_t i = num / stride;
  return i < in ? i : -1;
}

// grad_input as a stride-1 transposed convolution, along one axis.
//
// grad_input[i] = sum_k w[k] * grad_output[i*S - P + k*D] (a strided correlation). Write
// k*D - P = q*S + r with 0 <= r < S: tap k reads the residue plane G_r[m] =
// grad_output[m*S + r] at m = i + q. Within one residue the taps' q are D' = D / gcd(S, D)
// apart. With planes X_r[u] = G_r[u + q0_r] (q0_r: the residue's smallest q),
//     grad_input[i] = sum_r sum_t w_r[t] * X_r[i + D' t],   t < L,
// a stride-1 correlation with the planes as extra channels: a stride-1 transposed
// convolution with the taps flipped, dilation D' and padding D' (L - 1), whose output
// has exactly `in` positions when each plane holds in + D' (L - 1) of them.
// At stride 1 there is one plane, X_0 = grad_output shifted by -P, and no copy is needed.
struct AsForwardAxis {
  static constexpr int kMaxResidues = 16;
  int nres;                          // residues some tap reads
  int residue[kMaxResidues];         // r of each, ascending
  int64_t q0[kMaxResidues];          // smallest q of each
  int64_t dil;                       // D'
  int64_t taps;                      // L: the most taps any residue has, spread D' apart
  int64_t extent;                    // plane length: in + D' (L - 1)
  bool ok;                           // stride <= kMaxResidues
};

inline AsForwardAxis as_forward_axis(int64_t kernel, int64_t stride, int64_t padding,
                                     int64_t dilation, int64_t in) {
  AsForwardAxis a{};
  a.ok = stride <= AsForwardAxis::kMaxResidues;
  if (!a.ok) return a;
  a.dil = dilation / gcd64(stride, dilation);
  int64_t qmin[AsForwardAxis::kMaxResidues], qmax[AsForwardAxis::kMaxResidues];
  bool used[AsForwardAxis::kMaxResidues] = {};
  for (int64_t k = 0; k < kernel; ++k) {
    const int64_t v = k * dilation - padding;
    const int64_t q = floor_div(v, stride);
    const int r = static_cast<int>(v - q * stride);
    qmin[r] = used[r] && qmin[r] < q ? qmin[r] : q;
    qmax[r] = used[r] && qmax[r] > q ? qmax[r] : q;
    used[r] = true;
  }
  a.taps = 1;
  for (int r = 0; r < stride; ++r) {
    if (!used[r]) continue;
    a.residue[a.nres] = r;
    a.q0[a.nres] = qmin[r];
    ++a.nres;
    const int64_t span = (qmax[r] - qmin[r]) / a.dil + 1;
    a.taps = span > a.taps ? span : a.taps;
  }
  a.extent = in + a.dil * (a.taps - 1);
  return a;
}

// Tap of plane `slot` at flipped position t (the transposed convolution's tap index), or
// -1 when no tap of the kernel lands there (the slot is padding in the flattened kernel).
CONVT_HOST_DEVICE int64_t as_forward_tap(const AsForwardAxis& a, int slot, int64_t t,
                                         int64_t kernel, int64_t stride, int64_t padding,
                                         int64_t dilation) {
  const int64_t q = a.q0[slot] + a.dil * (a.taps - 1 - t);
  const int64_t num = q * stride + a.residue[slot] + padding;  // = k * dilation
  if (num < 0 || num % dilation != 0) return -1;
  const int64_t k = num / dilation;
  return k < kernel ? k : -1;
}

// The tap that "owns" output coordinate o along one axis for the grad_bias sums of kernels that
// read grad_output through the taps (the rows grad_weight kernel): of the taps that reach o from
// inside the input (o = i * stride - padding + t * dilation, 0 <= i < in), the smallest. Each
// coordinate then has one owner, and a kernel that sums only the coordinates its tap owns sums
// every one exactly once. Returns -1 where no tap reaches o (such elements are never read; the
// caller keeps the bias pass); i receives the input coordinate.
// (I: int64_t on the host, int in kernels whose positions are 32-bit.)
template <typename I>
CONVT_HOST_DEVICE int owning_tap(I o, I kernel, I stride, I padding, I dilation, I in, I& i) {
  for (I t = 0; t < kernel; ++t) {
    const I v = o + padding - t * dilation;
    if (v < 0) break;  // (v only falls as t grows)
    if (v % stride == 0 && v / stride < in) {
      i = v / stride;
      return static_cast<int>(t);
    }
  }
  return -1;
}

// Columns of one group of taps, for grad_weight's rows kernel (backward_grad_weight_rows.cu).
//
// Input column iw reaches output column iw*S + (kj*D - P) through tap kj. Writing
// kj*D - P = q*S + r with 0 <= r < S, that is column (iw + q)*S + r: the taps with the
// same residue r read the same "plane" of every S-th output column, each shifted by its q.
// The kernel stages, for a segment of input columns iw0 .. iw0 + L - 1, each plane's
// columns iw0 + qmin + c (c < L + halo) once, and every tap of the group reads its
// L columns from plane[tap] at offset shift[tap]. At stride 1 there is one plane.
struct ColumnTapGroup {
  static constexpr int kMaxTaps = 4;
  static constexpr int kMaxPlanes = 2;
  int taps;                 // real taps in the group: kj0 .. kj0 + taps - 1
  int planes;               // distinct residues (may exceed kMaxPlanes: then unusable)
  int residue[kMaxPlanes];  // r of each plane
  int plane[kMaxTaps];      // plane read by tap j (0 for the padding slots j >= taps)
  int shift[kMaxTaps];      // q_j - qmin (0 for the padding slots)
  int64_t qmin;             // smallest q of the group
  int halo;                 // largest shift: staged columns beyond the segment
};

CONVT_HOST_DEVICE ColumnTapGroup column_tap_group(int64_t kj0, int64_t group_taps,
                                                  int64_t kernel, int64_t stride,
                                                  int64_t padding, int64_t dilation) {
  // Written without run-time indexing into the small arrays (kernels keep them in registers).
  ColumnTapGroup c{};
  const int64_t last = kj0 + group_taps < kernel ? kj0 + group_taps : kernel;
  c.taps = static_cast<int>(last - kj0);
  int64_t q[ColumnTapGroup::kMaxTaps];
  int r[ColumnTapGroup::kMaxTaps];
CONVT_UNROLL
  for (int j = 0; j < ColumnTapGroup::kMaxTaps; ++j) {
    const int64_t v = (kj0 + j) * dilation - padding;
    q[j] = floor_div(v, stride);
    r[j] = static_cast<int>(v - q[j] * stride);
    if (j < c.taps) c.qmin = (j == 0 || q[j] < c.qmin) ? q[j] : c.qmin;
  }
CONVT_UNROLL
  for (int j = 0; j < ColumnTapGroup::kMaxTaps; ++j) {
    c.plane[j] = 0;
    c.shift[j] = 0;
    if (j >= c.taps) continue;
    int p;
    if (c.planes > 0 && c.residue[0] == r[j]) {
      p = 0;
    } else if (c.planes > 1 && c.residue[1] == r[j]) {
      p = 1;
    } else {
      p = c.planes++;
      if (p == 0) c.residue[0] = r[j];
      if (p == 1) c.residue[1] = r[j];
    }
    c.plane[j] = p < ColumnTapGroup::kMaxPlanes ? p : 0;
    c.shift[j] = static_cast<int>(q[j] - c.qmin);
    c.halo = c.shift[j] > c.halo ? c.shift[j] : c.halo;
  }
  return c;
}

}  // namespace convt
