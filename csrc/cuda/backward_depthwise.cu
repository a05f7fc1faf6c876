// Depthwise backward of conv_transpose2d (one input and one output channel per group):
// grad_input and grad_weight in one pass over grad_output, a bandwidth kernel.
//
// With Cin_g == Cout_g == 1, both gradients use the same grad_output element per (input
// pixel, tap):
//   o  = go[n, c, iy*SH - PH + kh*DH, ix*SW - PW + kw*DW]   (where inside the output)
//   gi[n, c, iy, ix] = sum over (kh, kw) of w[c, 0, kh, kw] * o
//   gw[c, 0, kh, kw] = sum over (n, iy, ix) of x[n, c, iy, ix] * o
// so one walk over the input pixels reads grad_output once (its reuse between neighbouring
// pixels' taps hits L1) and x once, and writes grad_input once: the floor of the whole
// backward less grad_bias. The backward's generic kernels ran the two gradients as
// separate direct kernels, each on NCHW copies (depthwise_s2 bf16: ~2.2 ms of backward
// against a floor of ~0.13 ms; docs/perf-notes-backward.md, v17).
//
// Two kernels, both reading every operand in place through its strides (no layout copies):
//  - plane kernel: a block walks a band of rows of one (n, c) plane, a thread per pixel,
//    consecutive threads on consecutive pixels (coalesced along W when stride(3) == 1:
//    NCHW, or any layout, slower).
//  - channels kernel (dense channels_last, even C, at least 32 channels): a block walks a
//    band of rows of one image for 64 consecutive channels, two per lane (one 4- to
//    16-byte access per pixel and tap), the eight warps on different pixels, each warp two
//    pixels per step (one above 9 taps) with every load of the step issued first; one
//    instantiation per set of gradients asked for (grad_input, grad_weight, both).
// Each thread keeps its own grad_weight partial per tap in registers; at the end a block
// sums them in a fixed order and writes one partial per (image, band) split into the
// workspace [S][KH*KW][C] that grad_weight_reduce sums in split order: no atomics,
// bit-identical run to run.
//
// grad_bias in the plane kernel: the walk reads every grad_output element that some (input
// pixel, tap) reaches, several times where taps overlap (stride < kernel). Each element is
// added to the bias once, at its "first" pair along each axis: along the height the pairs
// reaching output row o are (i + m q0, k - m d0) for a run of integers m, with d0 = SH /
// gcd(SH, DH) and q0 = DH / gcd(SH, DH), so exactly one of them, the one whose next pair
// (i + q0, k - d0) leaves the input or the kernel, counts it: tap k counts iff k < d0 or
// i + q0 >= H (the same along the width). Where some element is reached by no tap at all (an
// output padding past the last tap, a stride above the dilated kernel), the caller runs
// grad_bias_sum instead (depthwise_bias_fused). The thread's sum joins the block's
// fixed-order reduction as one more slot; partials [S][C] go to grad_bias_reduce. The
// channels kernel applies the same rule per lane (its two channels), its block's warps summed in
// order like its grad_weight. Measured (H100): docs/perf-notes-backward.md v34, v35.
//
// Kernel sizes: 3 x 3 and 4 x 4 compiled fixed (fully unrolled taps), anything up to
// 5 x 5 through the generic variant (loops to 5 with a runtime bound); larger kernels and
// channel multipliers above 1 keep the generic backward kernels.
#include <ATen/Dispatch.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <numeric>
#include <string>
#include <type_traits>

#include "backward_common.cuh"
#include "mma.cuh"
#include "pack.cuh"

namespace convt {
namespace bwd {
namespace {

constexpr int kDwThreads = 256;
constexpr int kDwWarps = kDwThreads / 32;
constexpr int kDwMaxK = 5;                    // kernel extent per axis of the generic variant
constexpr int kPlanePix = 2;                  // pixels per thread and step (plane kernel)
constexpr int kClVec = 2;                     // channels per lane (channels kernel)
constexpr int kClChunk = 32 * kClVec;         // channels per block (channels kernel)
// Pixels a block walks at least, so that its closing reduction (a shuffle tree and a
// shared-memory pass per tap) stays small next to the walk.
constexpr int64_t kMinBlockPixelsPlane = 1024;
constexpr int64_t kMinBlockPixelsChannels = 256;

struct DwParams {
  int C, H, W, Hout, Wout, KH, KW, SH, SW, PH, PW, DH, DW;
  int bands, rows_per_band, chunks;
  int tiles_x, span;       // staged kernel: tiles of kStTileX input columns; grad_output columns a tile reads
  int d0h, q0h, d0w, q0w;  // grad_bias's first-pair rule along each axis (above)
  // Element strides (n, c, h, w). Within a row the column offset is 32-bit (checked on the
  // host: W * |stride(3)| < 2^31); rows and planes are 64-bit.
  int64_t x_s0, x_s1, x_s2, go_s0, go_s1, go_s2, gi_s0, gi_s1, gi_s2;
  int x_s3, go_s3, gi_s3;
  bool want_gi, want_gw, want_gb;
};

// The kernel extent a variant loops to: the fixed one, or the generic variant's maximum.
template <int F>
constexpr int loop_extent() {
  return F > 0 ? F : kDwMaxK;
}

// Pixels per warp and step (channels kernel): two where a pixel has at most 9 taps, else one
// (16 or 25 tap loads in flight already; two pixels' spilled at 128 registers). Four pixels of
// 16-bit types spilled too (3 x 3, 128 registers).
template <int MKH, int MKW>
constexpr int cl_pixels() {
  return MKH * MKW <= 9 ? 2 : 1;
}
// Blocks per multiprocessor the channels kernel's registers are bounded for: two (128
// registers) where two pixels per step fit in them without spilling (three spilled: 80), else
// one (bf16 4 x 4, both gradients: 150 registers; double 3 x 3 spilled 224 bytes at 128).
template <typename T, int FKH, int FKW>
constexpr int cl_min_blocks() {
  return loop_extent<FKH>() * loop_extent<FKW>() <= 9 && sizeof(T) <= 4 ? 2 : 1;
}

template <typename T, int FKH, int FKW>
__global__ void __launch_bounds__(kDwThreads)
    depthwise_backward_plane_kernel(const T* __restrict__ x, const T* __restrict__ go,
                                    const T* __restrict__ w, T* __restrict__ gi,
                                    acc_t<T>* __restrict__ ws, acc_t<T>* __restrict__ gb_ws, const DwParams p) {
  using Acc = acc_t<T>;
  constexpr int MKH = loop_extent<FKH>(), MKW = loop_extent<FKW>();
  const int KH = FKH > 0 ? FKH : p.KH, KW = FKW > 0 ? FKW : p.KW;
  const int band = blockIdx.x % p.bands;
  const int plane = blockIdx.x / p.bands;  // n * C + c
  const int n = plane / p.C, c = plane - n * p.C;
  const int r0 = band * p.rows_per_band;
  const int r1 = min(p.H, r0 + p.rows_per_band);

  Acc wv[MKH][MKW];
  Acc gw[MKH][MKW];
#pragma unroll
  for (int kh = 0; kh < MKH; ++kh)
#pragma unroll
    for (int kw = 0; kw < MKW; ++kw) {
      const bool tap = kh < KH && kw < KW;
      wv[kh][kw] = (p.want_gi && tap) ? static_cast<Acc>(w[(static_cast<int64_t>(c) * KH + kh) * KW + kw]) : Acc(0);
      gw[kh][kw] = Acc(0);
    }
  Acc gb = Acc(0);  // this thread's grad_bias share (want_gb)

  const T* x_c = x + n * p.x_s0 + c * p.x_s1;
  const T* go_c = go + n * p.go_s0 + c * p.go_s1;
  T* gi_c = gi + n * p.gi_s0 + c * p.gi_s1;
  // Pixel i of the band is (r0 + i / W, i % W). A thread takes kPlanePix pixels per step,
  // kDwThreads apart, and issues all their loads before the arithmetic (more loads in flight
  // per thread: the kernel waits on memory latency, not on bandwidth or issue).
  const int npix = (r1 - r0) * p.W;
  const int step_r = kDwThreads / p.W, step_c = kDwThreads % p.W;
  int r = r0 + static_cast<int>(threadIdx.x) / p.W;
  int col = static_cast<int>(threadIdx.x) % p.W;
  for (int i = threadIdx.x; i < npix; i += kPlanePix * kDwThreads) {
    int pr[kPlanePix], pc[kPlanePix];
    bool pv[kPlanePix];
    Acc xv[kPlanePix];
    Acc o[kPlanePix][MKH][MKW];
#pragma unroll
    for (int q = 0; q < kPlanePix; ++q) {
      pv[q] = i + q * kDwThreads < npix;
      pr[q] = r;
      pc[q] = col;
      col += step_c;
      r += step_r;
      if (col >= p.W) {
        col -= p.W;
        ++r;
      }
    }
#pragma unroll
    for (int q = 0; q < kPlanePix; ++q) {
      xv[q] = (p.want_gw && pv[q]) ? static_cast<Acc>(x_c[pr[q] * p.x_s2 + pc[q] * p.x_s3]) : Acc(0);
      const int oy0 = pr[q] * p.SH - p.PH, ox0 = pc[q] * p.SW - p.PW;
#pragma unroll
      for (int kh = 0; kh < MKH; ++kh) {
        const int oy = oy0 + kh * p.DH;
        const bool row_ok = pv[q] && kh < KH && oy >= 0 && oy < p.Hout;
        const T* row = go_c + oy * p.go_s2;
#pragma unroll
        for (int kw = 0; kw < MKW; ++kw) {
          const int ox = ox0 + kw * p.DW;
          const bool ok = row_ok && kw < KW && ox >= 0 && ox < p.Wout;
          o[q][kh][kw] = ok ? static_cast<Acc>(row[ox * p.go_s3]) : Acc(0);
        }
      }
    }
#pragma unroll
    for (int q = 0; q < kPlanePix; ++q) {
      Acc acc = Acc(0);
      const bool last_h = pr[q] + p.q0h >= p.H, last_w = pc[q] + p.q0w >= p.W;  // first-pair rule
#pragma unroll
      for (int kh = 0; kh < MKH; ++kh) {
        if (FKH == 0 && kh >= KH) break;
        const bool first_h = kh < p.d0h || last_h;
#pragma unroll
        for (int kw = 0; kw < MKW; ++kw) {
          if (FKW == 0 && kw >= KW) break;
          acc += wv[kh][kw] * o[q][kh][kw];
          gw[kh][kw] += xv[q] * o[q][kh][kw];
          if (p.want_gb && first_h && (kw < p.d0w || last_w)) gb += o[q][kh][kw];  // (0 outside)
        }
      }
      if (p.want_gi && pv[q]) gi_c[pr[q] * p.gi_s2 + pc[q] * p.gi_s3] = static_cast<T>(acc);
    }
  }
  if (!p.want_gw && !p.want_gb) return;

  // The block's partial per tap (and grad_bias's, slot MKH * MKW): a fixed shuffle tree per
  // warp, then the warps in order.
  constexpr int kSlots = MKH * MKW + 1;
  __shared__ Acc red[kDwWarps][kSlots];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  auto warp_sum = [&](Acc v, int slot) {
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) v += __shfl_down_sync(0xffffffffu, v, off);
    if (lane == 0) red[warp][slot] = v;
  };
#pragma unroll
  for (int kh = 0; kh < MKH; ++kh)
#pragma unroll
    for (int kw = 0; kw < MKW; ++kw) warp_sum(gw[kh][kw], kh * MKW + kw);
  warp_sum(gb, kSlots - 1);
  __syncthreads();
  const int t = threadIdx.x;
  const int64_t split = static_cast<int64_t>(n) * p.bands + band;
  auto block_sum = [&](int slot) {
    Acc s = Acc(0);
#pragma unroll
    for (int v = 0; v < kDwWarps; ++v) s += red[v][slot];
    return s;
  };
  if (p.want_gw && t < KH * KW) {
    const int kh = t / KW, kw = t - kh * KW;
    ws[(split * KH * KW + t) * p.C + c] = block_sum(kh * MKW + kw);
  }
  if (p.want_gb && t == kDwThreads - 1) gb_ws[split * p.C + c] = block_sum(kSlots - 1);
}

// kGi / kGw: which gradients this instantiation computes (p.want_gi / p.want_gw, fixed at
// compile time): a kernel for one gradient alone holds no registers for the other's weights or
// partials.
template <typename T, int FKH, int FKW, bool kGi, bool kGw>
__global__ void __launch_bounds__(kDwThreads, cl_min_blocks<T, FKH, FKW>())
    depthwise_backward_channels_kernel(const T* __restrict__ x, const T* __restrict__ go,
                                       const T* __restrict__ w, T* __restrict__ gi,
                                       acc_t<T>* __restrict__ ws, acc_t<T>* __restrict__ gb_ws,
                                       const DwParams p) {
  using Acc = acc_t<T>;
  using P2 = Pack<T, kClVec>;
  constexpr int MKH = loop_extent<FKH>(), MKW = loop_extent<FKW>();
  constexpr int kClPix = cl_pixels<MKH, MKW>();
  const int KH = FKH > 0 ? FKH : p.KH, KW = FKW > 0 ? FKW : p.KW;
  const int chunk = blockIdx.x % p.chunks;
  const int split = blockIdx.x / p.chunks;  // n * bands + band
  const int n = split / p.bands, band = split - n * p.bands;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int c0 = chunk * kClChunk + lane * kClVec;  // this lane's channels c0, c0 + 1
  const bool active = c0 < p.C;                     // (C is even: c0 + 1 < C too)
  const int r0 = band * p.rows_per_band;
  const int r1 = min(p.H, r0 + p.rows_per_band);

  Acc wv[kGi ? MKH : 1][kGi ? MKW : 1][kClVec];
  Acc gw[kGw ? MKH : 1][kGw ? MKW : 1][kClVec];
#pragma unroll
  for (int kh = 0; kh < MKH; ++kh)
#pragma unroll
    for (int kw = 0; kw < MKW; ++kw)
#pragma unroll
      for (int e = 0; e < kClVec; ++e) {
        const bool tap = kh < KH && kw < KW;
        if constexpr (kGi) {
          wv[kh][kw][e] =
              (tap && active) ? static_cast<Acc>(w[(static_cast<int64_t>(c0 + e) * KH + kh) * KW + kw]) : Acc(0);
        }
        if constexpr (kGw) gw[kh][kw][e] = Acc(0);
      }
  Acc gb[kClVec] = {};  // this lane's grad_bias shares (want_gb), by the plane kernel's first-pair rule

  if (active) {
    const T* x_n = x + n * p.x_s0 + c0;
    const T* go_n = go + n * p.go_s0 + c0;
    T* gi_n = gi + n * p.gi_s0 + c0;
    // Pixel i of the band is (r0 + i / W, i % W); warp v walks i = v, v + 8, ..., kClPix pixels
    // per step (i and i + 8 together). Every load of a step (the pixels' x, all their taps)
    // issues before any arithmetic: the walk waits on memory latency. With one pixel and one
    // kernel row in flight per warp (the first form: 3 loads of 4 bytes per lane in bf16) it
    // reached ~1 TB/s: bf16 depthwise_s2 grad_input alone 0.33 ms against a 0.11 ms floor.
    const int npix = (r1 - r0) * p.W;
    const int step_r = kDwWarps / p.W, step_c = kDwWarps % p.W;
    int r = r0 + warp / p.W;
    int col = warp % p.W;
    for (int i = warp; i < npix; i += kClPix * kDwWarps) {
      int pr[kClPix], pc[kClPix];
      bool pv[kClPix];
#pragma unroll
      for (int q = 0; q < kClPix; ++q) {
        pv[q] = i + q * kDwWarps < npix;
        pr[q] = r;
        pc[q] = col;
        col += step_c;
        r += step_r;
        if (col >= p.W) {
          col -= p.W;
          ++r;
        }
      }
      P2 xp[kGw ? kClPix : 1];
      P2 ov[kClPix][MKH][MKW];  // zeros outside grad_output (and past the taps)
#pragma unroll
      for (int q = 0; q < kClPix; ++q) {
        if constexpr (kGw) {
#pragma unroll
          for (int e = 0; e < kClVec; ++e) xp[q].v[e] = T(0);
          if (pv[q]) xp[q] = *reinterpret_cast<const P2*>(x_n + pr[q] * p.x_s2 + pc[q] * p.x_s3);
        }
        const int oy0 = pr[q] * p.SH - p.PH, ox0 = pc[q] * p.SW - p.PW;
#pragma unroll
        for (int kh = 0; kh < MKH; ++kh) {
          const int oy = oy0 + kh * p.DH;
          const bool row_ok = pv[q] && (FKH > 0 || kh < KH) && oy >= 0 && oy < p.Hout;
          const T* row = go_n + oy * p.go_s2;
#pragma unroll
          for (int kw = 0; kw < MKW; ++kw) {
            const int ox = ox0 + kw * p.DW;
            const bool ok = row_ok && (FKW > 0 || kw < KW) && ox >= 0 && ox < p.Wout;
#pragma unroll
            for (int e = 0; e < kClVec; ++e) ov[q][kh][kw].v[e] = T(0);
            if (ok) ov[q][kh][kw] = *reinterpret_cast<const P2*>(row + ox * p.go_s3);
          }
        }
      }
#pragma unroll
      for (int q = 0; q < kClPix; ++q) {
        Acc acc[kClVec] = {};
        const bool last_h = pr[q] + p.q0h >= p.H, last_w = pc[q] + p.q0w >= p.W;  // first-pair rule
#pragma unroll
        for (int kh = 0; kh < MKH; ++kh) {
          if (FKH == 0 && kh >= KH) break;
          const bool first_h = (kh < p.d0h) | last_h;
#pragma unroll
          for (int kw = 0; kw < MKW; ++kw) {
            if (FKW == 0 && kw >= KW) break;
            const bool first = p.want_gb & first_h & ((kw < p.d0w) | last_w);
#pragma unroll
            for (int e = 0; e < kClVec; ++e) {
              const Acc o = static_cast<Acc>(ov[q][kh][kw].v[e]);  // 0 outside grad_output
              if constexpr (kGi) acc[e] += wv[kh][kw][e] * o;
              if constexpr (kGw) gw[kh][kw][e] += static_cast<Acc>(xp[q].v[e]) * o;
              gb[e] += first ? o : Acc(0);
            }
          }
        }
        if constexpr (kGi) {
          if (pv[q]) {
            P2 out;
#pragma unroll
            for (int e = 0; e < kClVec; ++e) out.v[e] = static_cast<T>(acc[e]);
            *reinterpret_cast<P2*>(gi_n + pr[q] * p.gi_s2 + pc[q] * p.gi_s3) = out;
          }
        }
      }
    }
  }
  if (!kGw && !p.want_gb) return;

  // The block's partial per (tap, channel), and grad_bias's per channel: the eight warps' values
  // summed in warp order into the split's row (`dst`: ws or gb_ws at the row of this split).
  __shared__ Acc red[kDwWarps][kClChunk];
  auto block_sum = [&](const Acc (&v)[kClVec], Acc* dst) {
#pragma unroll
    for (int e = 0; e < kClVec; ++e) red[warp][lane * kClVec + e] = v[e];
    __syncthreads();
    const int cl = threadIdx.x;
    if (cl < kClChunk && chunk * kClChunk + cl < p.C) {
      Acc s = Acc(0);
#pragma unroll
      for (int w8 = 0; w8 < kDwWarps; ++w8) s += red[w8][cl];
      dst[chunk * kClChunk + cl] = s;
    }
    __syncthreads();
  };
  if constexpr (kGw) {
#pragma unroll
    for (int kh = 0; kh < MKH; ++kh) {
      if (FKH == 0 && kh >= KH) break;
#pragma unroll
      for (int kw = 0; kw < MKW; ++kw) {
        if (FKW == 0 && kw >= KW) break;
        block_sum(gw[kh][kw], ws + (static_cast<int64_t>(split) * KH * KW + kh * KW + kw) * p.C);
      }
    }
  }
  if (p.want_gb) block_sum(gb, gb_ws + static_cast<int64_t>(split) * p.C);
}

// ---- staged channels kernel ------------------------------------------------------------
// Why: the channels kernel above holds every tap value it waits for in registers, so its loads
// in flight are bounded by the register file: 2 blocks of 8 warps per multiprocessor, each warp
// 18 loads of 128 bytes (bf16), ~36 KB, which at ~1 us of latency is ~1.2 TB/s. ncu (H100 run
// AE4, bf16 depthwise_s2 grad_input alone): DRAM 36% busy, occupancy 25%, 283 us against a 112 us
// floor. cp.async moves grad_output into shared memory without registers. A block owns a band of
// input rows, a tile of kStTileX input columns and one chunk of CC channels (128 bytes a
// pixel); per input row it stages the KH grad_output rows its taps read, over the tile's span of
// columns, in 16-byte pieces (zeros outside grad_output and past C), with the tile's pixels of x
// where grad_weight is asked for, kStStages - 1 rows ahead, and computes from shared memory: a
// thread takes two channels of tile / kSlots pixels of the row. Dense channels_last grad_output
// with 16-byte channel runs (C * element size a multiple of 16); grad_input written per pixel as
// by the channels kernel. grad_weight and grad_bias partials: one workspace row per (image,
// band, tile), summed in a fixed order. Measured: docs/perf-notes-backward.md v45.
constexpr int kStThreads = 256;
constexpr int kStPixelBytes = 128;  // a staged pixel: 64 channels of 16-bit types, 32 of float
constexpr int kStStages = 3;        // staged rows: the one computed and two in flight
constexpr int kStMaxSmem = 200 * 1024;
constexpr int64_t kStMinRows = 4;   // input rows per block at least (where the image has them)

// Input columns per tile. 16 for kernels above 3 x 3 (their 32-column stages take 114+ KB: one
// block per multiprocessor) was slower (H100 runs AE5 -> AE6, device ms, depthwise_k4s2 alone:
// bf16 grad_input 0.561 -> 0.578, grad_weight 0.602 -> 0.662; float32 0.765 -> 0.784, 0.802 ->
// 0.891): the halo columns and the per-block reductions double while the stages still hide
// the latency with one block. (No register bound either: AE6 / AE7 bounded the kernels to two
// or one blocks per multiprocessor; a bound of one is not the same as none, float 4 x 4 then
// took 132-180 registers against 100-128 and ran 13% slower, grad_input 0.765 -> 0.867 ms.)
constexpr int kStTileX = 32;
// grad_output columns a tile's taps read.
int64_t staged_span(const Geometry& g) {
  return (kStTileX - 1) * g.SW + (g.KW - 1) * g.DW + 1;
}
// Shared memory the staged kernel needs: kStStages rows of KH x span grad_output pixels and the
// tile's input pixels (x, for grad_weight).
int64_t staged_smem_bytes(const Geometry& g) {
  return kStStages * (g.KH * staged_span(g) + kStTileX) * kStPixelBytes;
}

template <typename T, int FKH, int FKW, bool kGi, bool kGw>
__global__ void __launch_bounds__(kStThreads)
    depthwise_backward_staged_kernel(const T* __restrict__ x, const T* __restrict__ go,
                                     const T* __restrict__ w, T* __restrict__ gi,
                                     acc_t<T>* __restrict__ ws, acc_t<T>* __restrict__ gb_ws,
                                     const DwParams p) {
  using Acc = acc_t<T>;
  using P2 = Pack<T, 2>;
  constexpr int CC = kStPixelBytes / static_cast<int>(sizeof(T));  // channels per block
  constexpr int kLanesPerPixel = CC / 2;                            // a thread: two channels
  constexpr int kSlots = kStThreads / kLanesPerPixel;               // pixels in parallel: 8 or 16
  constexpr int kPieces = kStPixelBytes / 16;                       // 16-byte pieces per pixel
  constexpr int EPP = 16 / static_cast<int>(sizeof(T));             // elements per piece
  constexpr int MKH = loop_extent<FKH>(), MKW = loop_extent<FKW>();
  constexpr int kPixPerThread = kStTileX / kSlots;                  // 3 x 3: 4 (16-bit) or 2 (float)
  static_assert(kStTileX % kSlots == 0, "every pixel slot takes the same number of the tile's pixels");
  const int KH = FKH > 0 ? FKH : p.KH, KW = FKW > 0 ? FKW : p.KW;
  extern __shared__ __align__(16) unsigned char st_smem[];
  // Block -> (chunk, tile, band, image), chunk fastest: a pixel tile's chunks run together.
  int b = blockIdx.x;
  const int chunk = b % p.chunks;
  b /= p.chunks;
  const int tile = b % p.tiles_x;
  b /= p.tiles_x;
  const int band = b % p.bands;
  const int n = b / p.bands;
  const int64_t split = (static_cast<int64_t>(n) * p.bands + band) * p.tiles_x + tile;
  const int c0 = chunk * CC;
  const int cg = threadIdx.x % kLanesPerPixel, slot = threadIdx.x / kLanesPerPixel;
  const int c = c0 + cg * 2;        // this thread's channels c, c + 1
  const bool active = c < p.C;      // (C is even)
  const int r0 = band * p.rows_per_band;
  const int r1 = min(p.H, r0 + p.rows_per_band);
  const int ix0 = tile * kStTileX;
  const int ox_base = ix0 * p.SW - p.PW;
  const int span = p.span;
  const int x_elems = KH * span * CC;  // a stage: [KH * span grad_output pixels][CC], then [tile x pixels][CC]
  const int stage_elems = x_elems + kStTileX * CC;

  Acc wv[kGi ? MKH : 1][kGi ? MKW : 1][2];
  Acc gw[kGw ? MKH : 1][kGw ? MKW : 1][2];
#pragma unroll
  for (int kh = 0; kh < MKH; ++kh)
#pragma unroll
    for (int kw = 0; kw < MKW; ++kw)
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const bool tap = kh < KH && kw < KW;
        if constexpr (kGi) {
          wv[kh][kw][e] =
              (tap && active) ? static_cast<Acc>(w[(static_cast<int64_t>(c + e) * KH + kh) * KW + kw]) : Acc(0);
        }
        if constexpr (kGw) gw[kh][kw][e] = Acc(0);
      }
  Acc gb[2] = {};

  const T* go_n = go + n * p.go_s0;
  // Input row iy's KH grad_output rows over the tile's span into stage s ([kh][column][CC]), and
  // (grad_weight) the row's tile of x.
  auto load_row = [&](int iy, int s) {
    T* dst = reinterpret_cast<T*>(st_smem) + s * stage_elems;
    const int total = KH * span * kPieces;
    for (int idx = threadIdx.x; idx < total; idx += kStThreads) {
      const int piece = idx % kPieces;
      const int col = idx / kPieces;  // kh * span + j
      const int kh = col / span, j = col - kh * span;
      const int oy = iy * p.SH - p.PH + kh * p.DH;
      const int ox = ox_base + j;
      const int ch = c0 + piece * EPP;
      const bool ok = oy >= 0 && oy < p.Hout && ox >= 0 && ox < p.Wout && ch < p.C;
      const T* src = ok ? go_n + oy * p.go_s2 + ox * p.go_s3 + ch : go;
      mma::cp_async16(dst + col * CC + piece * EPP, src, ok);
    }
    if constexpr (kGw) {
      for (int idx = threadIdx.x; idx < kStTileX * kPieces; idx += kStThreads) {
        const int piece = idx % kPieces, lx = idx / kPieces;
        const int ix = ix0 + lx, ch = c0 + piece * EPP;
        const bool ok = ix < p.W && ch < p.C;
        const T* src = ok ? x + n * p.x_s0 + iy * p.x_s2 + ix * p.x_s3 + ch : x;
        mma::cp_async16(dst + x_elems + lx * CC + piece * EPP, src, ok);
      }
    }
  };

  const int rows = r1 - r0;
#pragma unroll
  for (int s = 0; s < kStStages - 1; ++s) {
    if (s < rows) load_row(r0 + s, s);
    mma::cp_async_commit();
  }
  for (int i = 0; i < rows; ++i) {
    const int iy = r0 + i;
    mma::cp_async_wait<kStStages - 2>();  // this row's group has landed (this thread's pieces)
    __syncthreads();                       // everyone's pieces; everyone done with row i - 1
    {
      const int next = i + kStStages - 1;  // into the stage row i - 1 used
      if (next < rows) load_row(r0 + next, next % kStStages);
      mma::cp_async_commit();
    }
    const T* st = reinterpret_cast<const T*>(st_smem) + (i % kStStages) * stage_elems + cg * 2;
    const bool last_h = iy + p.q0h >= p.H;  // first-pair rule (grad_bias)
    // One pixel at a time: unrolled, ptxas hoisted all the pixels' tap loads (up to 208
    // registers, spills at 128); shared-memory latency is hidden by the other warps.
#pragma unroll 1
    for (int q = 0; q < kPixPerThread; ++q) {
      const int lx = slot + q * kSlots;
      const int ix = ix0 + lx;
      if (!active || ix >= p.W) continue;
      const bool last_w = ix + p.q0w >= p.W;
      Acc acc[2] = {};
      Acc xv[2] = {};
      if constexpr (kGw) {
        const P2 x2 = *reinterpret_cast<const P2*>(st + x_elems + lx * CC);
        xv[0] = static_cast<Acc>(x2.v[0]);
        xv[1] = static_cast<Acc>(x2.v[1]);
      }
#pragma unroll
      for (int kh = 0; kh < MKH; ++kh) {
        if (FKH == 0 && kh >= KH) break;
        const bool first_h = (kh < p.d0h) | last_h;
#pragma unroll
        for (int kw = 0; kw < MKW; ++kw) {
          if (FKW == 0 && kw >= KW) break;
          const P2 o2 = *reinterpret_cast<const P2*>(st + (kh * span + lx * p.SW + kw * p.DW) * CC);
          const bool first = p.want_gb & first_h & ((kw < p.d0w) | last_w);
#pragma unroll
          for (int e = 0; e < 2; ++e) {
            const Acc o = static_cast<Acc>(o2.v[e]);  // 0 outside grad_output
            if constexpr (kGi) acc[e] += wv[kh][kw][e] * o;
            if constexpr (kGw) gw[kh][kw][e] += xv[e] * o;
            gb[e] += first ? o : Acc(0);
          }
        }
      }
      if constexpr (kGi) {
        P2 out;
        out.v[0] = static_cast<T>(acc[0]);
        out.v[1] = static_cast<T>(acc[1]);
        *reinterpret_cast<P2*>(gi + n * p.gi_s0 + iy * p.gi_s2 + ix * p.gi_s3 + c) = out;
      }
    }
  }
  mma::cp_async_wait<0>();  // (only empty groups remain)
  if (!kGw && !p.want_gb) return;

  // The block's partials per (tap, channel) and grad_bias's per channel: the kSlots pixel slots'
  // values summed in slot order into the split's workspace row.
  __shared__ Acc red[kSlots][CC];
  auto block_sum = [&](const Acc (&v)[2], Acc* dst) {
    red[slot][cg * 2] = v[0];
    red[slot][cg * 2 + 1] = v[1];
    __syncthreads();
    const int t = threadIdx.x;
    if (t < CC && c0 + t < p.C) {
      Acc sum = Acc(0);
#pragma unroll
      for (int k = 0; k < kSlots; ++k) sum += red[k][t];
      dst[c0 + t] = sum;
    }
    __syncthreads();
  };
  if constexpr (kGw) {
#pragma unroll
    for (int kh = 0; kh < MKH; ++kh) {
      if (FKH == 0 && kh >= KH) break;
#pragma unroll
      for (int kw = 0; kw < MKW; ++kw) {
        if (FKW == 0 && kw >= KW) break;
        block_sum(gw[kh][kw], ws + (split * KH * KW + kh * KW + kw) * p.C);
      }
    }
  }
  if (p.want_gb) block_sum(gb, gb_ws + split * p.C);
}

// Test knob CONVT_BWD_DW=off|plane (backward_common.cuh). Read once.
const std::string& depthwise_backward_env() {
  static const std::string value = [] {
    const char* e = std::getenv("CONVT_BWD_DW");
    return std::string(e == nullptr ? "" : e);
  }();
  return value;
}

// Bands of rows per (plane or image): enough blocks for about eight per multiprocessor, but
// at least `min_pixels` pixels per block where the image has them.
int64_t choose_bands(const Geometry& g, int64_t units, int64_t min_pixels) {
  const int64_t target = static_cast<int64_t>(sm_count()) * 8;
  int64_t bands = std::min<int64_t>(g.H, std::max<int64_t>(1, ceil_div(target, units)));
  bands = std::min<int64_t>(bands, std::max<int64_t>(1, g.H * g.W / min_pixels));
  const int64_t rows = ceil_div(g.H, bands);
  return ceil_div(g.H, rows);
}

bool channels_kernel_applies(const at::Tensor& go, const at::Tensor& x, const at::Tensor& gi,
                             const Geometry& g) {
  if (depthwise_backward_env() == "plane") return false;
  const int64_t align = go.element_size() * kClVec;
  auto aligned = [&](const at::Tensor& t) {
    return !t.defined() || t.numel() == 0 ||
           (t.stride(1) == 1 && reinterpret_cast<std::uintptr_t>(t.data_ptr()) % align == 0 &&
            t.stride(0) % kClVec == 0 && t.stride(2) % kClVec == 0 && t.stride(3) % kClVec == 0);
  };
  return g.Cin >= 32 && g.Cin % kClVec == 0 && channels_last_only(go) && channels_last_only(x) &&
         aligned(go) && aligned(x) && aligned(gi);
}

// The staged kernel (a channels_last problem the channels kernel would take): grad_output, and x
// where grad_weight is asked for (both staged by cp.async), dense channels_last in 16-byte
// channel runs from 16-byte aligned starts (every offset a piece reads 16-byte aligned), KH rows of
// the tile's span in kStStages stages within kStMaxSmem; float, half and bf16 (double keeps the
// channels kernel), except float32 grad_weight alone: the channels kernel's 8-byte loads run it
// faster (H100 run AE7 against AE6's walk, device ms: depthwise_s2 0.312 against 0.279,
// depthwise_k4s2 0.963 against 0.873), while float32 grad_input and both gradients gain (k4s2
// grad_input 0.997 -> 0.867, training steps 2.27 -> 2.00 ms). Knob CONVT_BWD_DW=walk: never
// (the channels kernel, for A/B runs).
bool staged_applies(const at::Tensor& go, const at::Tensor& x, const Geometry& g, bool want_gi, bool want_gw) {
  if (depthwise_backward_env() == "walk" || go.scalar_type() == at::kDouble) return false;
  if (go.scalar_type() == at::kFloat && !want_gi) return false;
  const int64_t elem = go.element_size();
  const int64_t epp = 16 / elem;
  auto pieces_aligned = [&](const at::Tensor& t) {
    return reinterpret_cast<std::uintptr_t>(t.data_ptr()) % 16 == 0 && t.stride(1) == 1 && t.stride(0) % epp == 0 &&
           t.stride(2) % epp == 0 && t.stride(3) % epp == 0;
  };
  return (g.Cin * elem) % 16 == 0 && pieces_aligned(go) && (!want_gw || pieces_aligned(x)) &&
         staged_smem_bytes(g) <= kStMaxSmem;
}

// Whether the plane kernel's walk reaches every grad_output element through some (input
// pixel, tap) pair, so that grad_bias can ride along (the first-pair rule above): every output
// row is i SH - PH + k DH for some input row i and tap k, and likewise every column.
bool taps_cover(int64_t n_in, int64_t n_out, int64_t S, int64_t P, int64_t K, int64_t D) {
  if (n_out > (int64_t(1) << 16)) return false;  // (a host loop per output coordinate)
  for (int64_t o = 0; o < n_out; ++o) {
    bool reached = false;
    for (int64_t k = 0; k < K && !reached; ++k) {
      const int64_t t = o + P - k * D;
      reached = t >= 0 && t % S == 0 && t / S < n_in;
    }
    if (!reached) return false;
  }
  return true;
}

bool depthwise_bias_fused(const Geometry& g) {
  return taps_cover(g.H, g.Hout, g.SH, g.PH, g.KH, g.DH) && taps_cover(g.W, g.Wout, g.SW, g.PW, g.KW, g.DW);
}

// Which kernel walks the problem (depthwise_backward chooses).
enum class DwKernel { kPlane, kChannels, kStaged };

// The staged kernel for one set of gradients, with its dynamic shared memory allowed first.
template <typename T, int FKH, int FKW, bool kGi, bool kGw>
void launch_staged(dim3 grid, int64_t smem, cudaStream_t stream, const T* xp, const T* gop, const T* wp, T* gip,
                   acc_t<T>* wsp, acc_t<T>* gbp, const DwParams& p) {
  auto kernel = depthwise_backward_staged_kernel<T, FKH, FKW, kGi, kGw>;
  if (smem > 48 * 1024) {
    C10_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem)));
  }
  kernel<<<grid, kStThreads, static_cast<size_t>(smem), stream>>>(xp, gop, wp, gip, wsp, gbp, p);
}

template <typename T, int FKH, int FKW>
void launch_sized(const at::Tensor& go, const at::Tensor& x, const at::Tensor& w, const Geometry& g,
                  const at::Tensor& gi, DwKernel kind, const at::Tensor& ws, const at::Tensor& gb_ws, int64_t blocks,
                  const DwParams& p) {
  using Acc = acc_t<T>;
  const T* xp = p.want_gw ? x.const_data_ptr<T>() : nullptr;
  const T* wp = p.want_gi ? w.const_data_ptr<T>() : nullptr;
  T* gip = p.want_gi ? gi.mutable_data_ptr<T>() : nullptr;
  Acc* wsp = p.want_gw ? ws.mutable_data_ptr<Acc>() : nullptr;
  Acc* gbp = p.want_gb ? gb_ws.mutable_data_ptr<Acc>() : nullptr;
  auto stream = at::cuda::getCurrentCUDAStream();
  const dim3 grid(static_cast<unsigned>(blocks));
  const T* gop = go.const_data_ptr<T>();
  // One instantiation per set of gradients asked for (the kernels' kGi / kGw).
  if (kind == DwKernel::kStaged) {
    if constexpr (!std::is_same_v<T, double>) {  // (staged_applies: never double)
      const int64_t smem = staged_smem_bytes(g);
      if (p.want_gi && p.want_gw) {
        launch_staged<T, FKH, FKW, true, true>(grid, smem, stream, xp, gop, wp, gip, wsp, gbp, p);
      } else if (p.want_gi) {
        launch_staged<T, FKH, FKW, true, false>(grid, smem, stream, xp, gop, wp, gip, wsp, gbp, p);
      } else {
        launch_staged<T, FKH, FKW, false, true>(grid, smem, stream, xp, gop, wp, gip, wsp, gbp, p);
      }
    }
  } else if (kind == DwKernel::kChannels) {
    if (p.want_gi && p.want_gw) {
      depthwise_backward_channels_kernel<T, FKH, FKW, true, true><<<grid, kDwThreads, 0, stream>>>(xp, gop, wp, gip, wsp, gbp, p);
    } else if (p.want_gi) {
      depthwise_backward_channels_kernel<T, FKH, FKW, true, false><<<grid, kDwThreads, 0, stream>>>(xp, gop, wp, gip, wsp, gbp, p);
    } else {
      depthwise_backward_channels_kernel<T, FKH, FKW, false, true><<<grid, kDwThreads, 0, stream>>>(xp, gop, wp, gip, wsp, gbp, p);
    }
  } else {
    depthwise_backward_plane_kernel<T, FKH, FKW><<<grid, kDwThreads, 0, stream>>>(xp, gop, wp, gip, wsp, gbp, p);
  }
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

}  // namespace

bool depthwise_backward_supported(const at::Tensor& grad_output, const at::Tensor& input,
                                  const at::Tensor& grad_input, const Geometry& g) {
  if (depthwise_backward_env() == "off") return false;
  if (g.Cin_g != 1 || g.Cout_g != 1 || g.KH > kDwMaxK || g.KW > kDwMaxK) return false;
  // 32-bit coordinates (oy = iy*SH - PH + kh*DH and the like) and in-row column offsets.
  const int64_t lim = int64_t(1) << 30;
  if (g.H * g.SH + g.KH * g.DH + g.PH >= lim || g.W * g.SW + g.KW * g.DW + g.PW >= lim ||
      g.Hout >= lim || g.Wout >= lim || g.Cin >= lim)
    return false;
  auto row_fits = [&](const at::Tensor& t, int64_t width) {
    return !t.defined() || t.numel() == 0 || width * std::abs(t.stride(3)) < lim;
  };
  return row_fits(grad_output, g.Wout) && row_fits(input, g.W) && row_fits(grad_input, g.W) &&
         g.N * g.Cin * g.H < (int64_t(1) << 31);
}

bool depthwise_backward(const at::Tensor& grad_output, const at::Tensor& input, const at::Tensor& weight,
                        const Geometry& g, const at::Tensor& grad_input, const at::Tensor& grad_weight,
                        const at::Tensor& grad_bias) {
  TORCH_CHECK(depthwise_backward_supported(grad_output, input, grad_input, g),
              "convt: depthwise backward kernel: unsupported problem");
  const bool want_gi = grad_input.defined() && grad_input.numel() > 0;
  const bool want_gw = grad_weight.defined() && grad_weight.numel() > 0;
  if (!want_gi && !want_gw) return false;
  DwParams p{};
  p.C = static_cast<int>(g.Cin);
  p.H = static_cast<int>(g.H), p.W = static_cast<int>(g.W);
  p.Hout = static_cast<int>(g.Hout), p.Wout = static_cast<int>(g.Wout);
  p.KH = static_cast<int>(g.KH), p.KW = static_cast<int>(g.KW);
  p.SH = static_cast<int>(g.SH), p.SW = static_cast<int>(g.SW);
  p.PH = static_cast<int>(g.PH), p.PW = static_cast<int>(g.PW);
  p.DH = static_cast<int>(g.DH), p.DW = static_cast<int>(g.DW);
  p.want_gi = want_gi;
  p.want_gw = want_gw;
  const int64_t gcd_h = std::gcd(g.SH, g.DH), gcd_w = std::gcd(g.SW, g.DW);
  p.d0h = static_cast<int>(g.SH / gcd_h), p.q0h = static_cast<int>(g.DH / gcd_h);
  p.d0w = static_cast<int>(g.SW / gcd_w), p.q0w = static_cast<int>(g.DW / gcd_w);
  p.x_s0 = input.stride(0), p.x_s1 = input.stride(1), p.x_s2 = input.stride(2);
  p.x_s3 = static_cast<int>(input.stride(3));
  p.go_s0 = grad_output.stride(0), p.go_s1 = grad_output.stride(1), p.go_s2 = grad_output.stride(2);
  p.go_s3 = static_cast<int>(grad_output.stride(3));
  if (want_gi) {
    p.gi_s0 = grad_input.stride(0), p.gi_s1 = grad_input.stride(1), p.gi_s2 = grad_input.stride(2);
    p.gi_s3 = static_cast<int>(grad_input.stride(3));
  }

  const bool channels = channels_kernel_applies(grad_output, input, want_gi ? grad_input : at::Tensor(), g);
  const DwKernel kind = !channels ? DwKernel::kPlane
                        : staged_applies(grad_output, input, g, want_gi, want_gw) ? DwKernel::kStaged
                                                                                   : DwKernel::kChannels;
  int64_t units;
  p.tiles_x = 1;
  if (kind == DwKernel::kStaged) {
    p.chunks = static_cast<int>(ceil_div(g.Cin * grad_output.element_size(), kStPixelBytes));
    p.tiles_x = static_cast<int>(ceil_div(g.W, kStTileX));
    p.span = static_cast<int>(staged_span(g));
    units = g.N * p.chunks * p.tiles_x;
    // About six blocks per multiprocessor, at least kStMinRows rows each: the first rows of a
    // band wait for their stage with nothing in flight before them.
    const int64_t target = static_cast<int64_t>(sm_count()) * 6;
    p.bands = static_cast<int>(std::max<int64_t>(
        1, std::min<int64_t>(ceil_div(target, units), ceil_div(g.H, kStMinRows))));
  } else if (kind == DwKernel::kChannels) {
    p.chunks = static_cast<int>(ceil_div(g.Cin, kClChunk));
    units = g.N * p.chunks;
    p.bands = static_cast<int>(choose_bands(g, units, kMinBlockPixelsChannels));
  } else {
    p.chunks = 1;
    units = g.N * g.Cin;
    p.bands = static_cast<int>(choose_bands(g, units, kMinBlockPixelsPlane));
  }
  p.rows_per_band = static_cast<int>(ceil_div(g.H, p.bands));
  p.bands = static_cast<int>(ceil_div(g.H, p.rows_per_band));  // (no empty band)
  p.want_gb = grad_bias.defined() && grad_bias.numel() > 0 && depthwise_bias_fused(g);
  const int64_t splits = g.N * p.bands * p.tiles_x;
  const int64_t blocks = units * p.bands;
  TORCH_CHECK(blocks < (int64_t(1) << 31), "convt: depthwise backward: grid too large");

  const auto acc_type = input.scalar_type() == at::kDouble ? at::kDouble : at::kFloat;
  at::Tensor ws;
  if (want_gw) ws = at::empty({splits * g.KH * g.KW * g.Cin}, input.options().dtype(acc_type));
  at::Tensor gb_ws;
  if (p.want_gb) gb_ws = at::empty({splits * g.Cin}, input.options().dtype(acc_type));
  // The weight as [C, 1, KH, KW] contiguous (weight-sized; only grad_input reads it).
  const at::Tensor w = want_gi ? weight.contiguous() : weight;

  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, input.scalar_type(), "convt_depthwise_backward", [&] {
    if (g.KH == 3 && g.KW == 3) {
      launch_sized<scalar_t, 3, 3>(grad_output, input, w, g, grad_input, kind, ws, gb_ws, blocks, p);
    } else if (g.KH == 4 && g.KW == 4) {
      launch_sized<scalar_t, 4, 4>(grad_output, input, w, g, grad_input, kind, ws, gb_ws, blocks, p);
    } else {
      launch_sized<scalar_t, 0, 0>(grad_output, input, w, g, grad_input, kind, ws, gb_ws, blocks, p);
    }
  });
  if (want_gw) grad_weight_reduce(ws, g, splits, grad_weight);
  if (p.want_gb) grad_bias_reduce(gb_ws, g, splits, grad_bias);
  return p.want_gb;
}

}  // namespace bwd
}  // namespace convt
