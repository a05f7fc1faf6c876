// grad_weight of conv_transpose2d on Hopper's warpgroup MMAs (wgmma): bf16 / fp16, stride
// 1 or 2 along the width; float (TF32) NCHW at stride 1 along the width in a kernel of its own
// (grad_weight_wgmma_tf32_kernel below: grad_output as the A operand from registers).
//
//   gw[ci, co_g, ki, kj] = sum_{n, ih, iw} x[n, ci, ih, iw] * go[n, co, oh, iw*SW - PW + kj*DW],
//   oh = ih*SH - PH + ki*DH
//
// The decomposition is the rows kernels' (backward_grad_weight_rows.cu): a block owns 64
// input channels x 64 output channels x a group of TT <= 4 consecutive taps kj of one
// kernel row ki, and walks segments of kSeg input columns of rows (n, ih) (64; 32 at
// stride 2), its share of them (blockIdx.y). Partial tiles go to ws[split][tap][ci][co] and
// grad_weight_reduce sums the splits in a fixed order: no atomics, bit-identical run to run.
//
// One step is D[ci][(tap, co)] += X[ci][k] * G_tap[k][co] over the segment's columns k:
//  - A = the x segment, already K-major in NCHW: cp.async 16-byte pieces straight into the
//    no-swizzle layout [K quantum][ci][16 B] (wgmma.cuh), quantum planes padded by 16 bytes
//    so that the lanes writing one channel's pieces hit distinct banks.
//  - B = grad_output row oh, read by each tap at a different column shift. A K-major
//    operand can only start on a 16-byte boundary (8 columns), so grad_output is staged raw
//    ([co][column], cp.async in the widest of 16 / 8 / 4-byte pieces its rows allow) and
//    transposed once per step (ldmatrix.trans + stmatrix, 8 x 8 blocks) into the MN-major
//    layout [co / 8][column][8 co]. There a column is one 16-byte row, and each tap's B is
//    the same buffer started `shift` rows later (wgmma's transposed-B form, 16-bit only).
//    One transpose serves all TT taps. At stride 2 the transpose also splits the columns
//    by parity into two such planes (Layout below).
//
// The default for KH >= 2 is a ring kernel (grad_weight_wgmma_ring_kernel, NCHW at stride 1
// along the height; grad_weight_wgmma_cl_ring_kernel, channels_last): a block of up to three
// warpgroups owns up to three kernel rows, stages the x segment once for all of them and keeps
// grad_output rows in a ring, staged once each; the one-row kernels below staged both KH
// times and were bound by the L2 (ring_plan says where each runs).
//
// Pipeline, per block of one warpgroup (128 threads, two blocks per SM): kStages raw stages
// (loads issued kStages - 2 steps ahead), the transposed buffer double-buffered, and the
// MMAs of step t left in flight (wgmma wait_group 1) while step t + 1 is transposed. Two
// barriers per step; the other block on the SM fills them. Measurements and what each
// version changed: docs/perf-notes-backward.md, v11.
#include "backward_common.cuh"
#include "backward_tile.cuh"
#include "env_knob.h"
#include "forward_launch.cuh"
#include "mma.cuh"
#include "wgmma.cuh"
#include "tf32_flag.h"

#include <ATen/Dispatch.h>

#include <algorithm>
#include <type_traits>

namespace convt {
namespace bwd {
namespace {

constexpr int kThreads = 128;  // one warpgroup
constexpr int kCh = 64;        // channels per tile on each side
constexpr int kStages = 4;     // raw stages; loads run kStages - 2 steps ahead
constexpr int kMaxTaps = ColumnTapGroup::kMaxTaps;
// Staged grad_output columns per step: the segment, the group's halo and the lead (the
// columns between the piece boundary below the first column and that column).
constexpr int kCols = 80;
constexpr int kRingSmemMax = 220 * 1024;  // the ring kernel's shared memory (one block per SM)
// Raw row pitch in elements: 11 16-byte units (an odd count, so ldmatrix's 8 rows of one
// block fall in 8 distinct 4-bank groups).
constexpr int kRawPitch = 88;
constexpr int kAPlane = kCh * 16 + 16;  // bytes per 16-byte K quantum plane of A
constexpr int kRawBytes = kCh * kRawPitch * 2;
constexpr int kTBytes = (kCh / 8) * kCols * 16;  // transposed grad_output, all planes
static_assert(kCols % 8 == 0 && kCols <= kRawPitch, "whole 8-column blocks per raw row");

// Per column-plane count: kPlanes = 1 at stride 1 along the width, 2 at stride 2, where a
// tap reads every other staged column. The transpose then also splits the staged columns
// by parity (stmatrix's row addresses put column c in plane c % 2, row c / 2), so each
// plane is again one 16-byte row per column, and a step covers half the input columns.
template <int kPlanes>
struct Layout {
  static constexpr int kSeg = 64 / kPlanes;  // input columns per step: the GEMM's K per step
  static constexpr int kQuanta = kSeg / 8;   // 16-byte pieces of one channel's x segment
  static constexpr int kABytes = kQuanta * kAPlane;
  static constexpr int kStageBytes = kABytes + kRawBytes;
  static constexpr int kTRows = kCols / kPlanes;             // rows (columns) per plane
  static constexpr int kPlaneBytes = (kCh / 8) * kTRows * 16;  // [co/8][row][8 co]
  static constexpr int kSmemBytes = kStages * kStageBytes + 2 * kTBytes;
  static_assert(kStageBytes % 16 == 0 && kPlaneBytes % 16 == 0, "operands start on 16-byte boundaries");
  static_assert(kSeg % 16 == 0, "whole k16 MMA steps");
};

// channels_last: both operands MN-major as loaded, [channel / 8][pixel or column][8 channels],
// each 8-channel group padded by one 16-byte row (the 8 lanes writing one pixel's 8 groups
// then hit distinct banks). A stage holds both operands; nothing is transposed.
template <int kPlanes>
struct LayoutCL {
  static constexpr int kSeg = Layout<kPlanes>::kSeg;
  static constexpr int kARows = kSeg + 1;              // per 8-channel group, with the pad row
  static constexpr int kABytes = (kCh / 8) * kARows * 16;
  static constexpr int kTRows = kCols / kPlanes;
  static constexpr int kBRows = kTRows + 1;
  static constexpr int kPlaneBytes = (kCh / 8) * kBRows * 16;
  static constexpr int kStageBytes = kABytes + kPlanes * kPlaneBytes;
  static constexpr int kSmemBytes = kStages * kStageBytes;
};

#ifdef CONVT_SM90A_DEVICE
__device__ __forceinline__ uint32_t smem_u32(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// One tap's m64n64k16: B MN-major; A K-major (NCHW x) or MN-major (kAMN: channels_last x).
template <typename T, bool kAMN = false>
__device__ __forceinline__ void mma_tap(float (&d)[32], uint64_t a_desc, uint64_t b_desc) {
  if constexpr (std::is_same_v<T, at::BFloat16>) {
    if constexpr (kAMN) wgmma::m64n64k16_bf16_tab(d, a_desc, b_desc);
    else wgmma::m64n64k16_bf16_tb(d, a_desc, b_desc);
  } else {
    if constexpr (kAMN) wgmma::m64n64k16_f16_tab(d, a_desc, b_desc);
    else wgmma::m64n64k16_f16_tb(d, a_desc, b_desc);
  }
}

// The block's tile (the rows kernels' order: channel tiles fastest) and its share of the
// segments, the same for both layouts.
template <int TT, int kPlanes, int kSegCols = Layout<kPlanes>::kSeg>
struct WgTile {
  int group, ki, kj0, ci0, co0, segs_w;
  int64_t s_begin, steps;
  ColumnTapGroup cg;
  __device__ __forceinline__ WgTile(const Geometry& g, int tiles_m, int tiles_n, int kw_groups,
                                    int64_t chunk) {
    int rest = blockIdx.x;
    const int tn = rest % tiles_n;
    rest /= tiles_n;
    const int tm = rest % tiles_m;
    rest /= tiles_m;
    group = rest % static_cast<int>(g.groups);
    rest /= static_cast<int>(g.groups);
    kj0 = (rest % kw_groups) * TT;
    ki = rest / kw_groups;
    cg = column_tap_group(kj0, TT, g.KW, kPlanes, g.PW, g.DW);
    ci0 = tm * kCh;
    co0 = tn * kCh;
    segs_w = static_cast<int>((g.W + kSegCols - 1) / kSegCols);
    const int64_t segs = g.N * g.H * segs_w;
    s_begin = static_cast<int64_t>(blockIdx.y) * chunk;
    steps = max(int64_t(0), min(segs, s_begin + chunk) - s_begin);
  }
};

// After the last MMAs: accumulators (m64n64 per tap, wgmma.cuh's layout) -> ws[split][tap]
// [ci][co], every in-range element, zeros included.
// ki: the kernel row of this warpgroup's taps (the tile's, or the ring kernel's ki0 + k).
// kCoRows: the product is D[co][ci] (the TF32 kernel's, grad_output as A), stored transposed.
template <bool kCoRows = false, int TT, int kPlanes, int kSegCols>
__device__ __forceinline__ void store_partial(float (&acc)[TT][32], const WgTile<TT, kPlanes, kSegCols>& b,
                                              const Geometry& g, float* __restrict__ ws, int ki) {
  wgmma::wait<0>();
#pragma unroll
  for (int j = 0; j < TT; ++j)
#pragma unroll
    for (int e = 0; e < 32; ++e) wgmma::fence_operand(acc[j][e]);
  const int Cin_g = static_cast<int>(g.Cin_g), Cout_g = static_cast<int>(g.Cout_g);
  const int taps = static_cast<int>(g.KH * g.KW);
  float* dst = ws + (static_cast<int64_t>(blockIdx.y) * taps * g.Cin + static_cast<int64_t>(b.group) * Cin_g) * Cout_g;
  const int warp = (threadIdx.x & 127) >> 5, lane = threadIdx.x & 31, gq = lane >> 2, tq = lane & 3;
#pragma unroll
  for (int j = 0; j < TT; ++j) {
    if (j >= b.cg.taps) continue;
    const int kt = ki * static_cast<int>(g.KW) + b.kj0 + j;
#pragma unroll
    for (int nb = 0; nb < 8; ++nb)
#pragma unroll
      for (int h = 0; h < 2; ++h)
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          // accumulator (row 16w + g + 8h, column 8nb + 2t + e)
          const int row = 16 * warp + gq + 8 * h, col = 8 * nb + 2 * tq + e;
          const int ci = b.ci0 + (kCoRows ? col : row), co = b.co0 + (kCoRows ? row : col);
          if (ci < Cin_g && co < Cout_g) dst[(static_cast<int64_t>(kt) * g.Cin + ci) * Cout_g + co] = acc[j][4 * nb + 2 * h + e];
        }
  }
}

// ---- pieces every kernel here shares ----

template <int TT>
__device__ __forceinline__ void zero_acc(float (&acc)[TT][32]) {
#pragma unroll
  for (int j = 0; j < TT; ++j)
#pragma unroll
    for (int e = 0; e < 32; ++e) acc[j][e] = 0.f;
}

// One step's MMAs: kSeg / 16 K steps x TT taps. A moves a_kstep descriptor units per K step
// (NCHW x: two quantum planes; channels_last x: 16 rows); tap j reads B from its plane and
// its column shift (padding slots j >= cg.taps multiply too, at shift 0, and are not stored:
// a branch around a wgmma makes the compiler fence the accumulators).
template <typename T, int TT, int kPlanes, bool kAMN>
__device__ __forceinline__ void mma_step(float (&acc)[TT][32], uint64_t a_desc, int a_kstep, uint64_t b_desc,
                                         const ColumnTapGroup& cg) {
  constexpr int kSeg = Layout<kPlanes>::kSeg;
  constexpr int kPlaneUnits = (kAMN ? LayoutCL<kPlanes>::kPlaneBytes : Layout<kPlanes>::kPlaneBytes) / 16;
#pragma unroll
  for (int kk = 0; kk < kSeg / 16; ++kk) {
#pragma unroll
    for (int j = 0; j < TT; ++j) {
      const int plane = kPlanes == 1 ? 0 : (cg.plane[j] == 0 ? cg.residue[0] : cg.residue[1]);
      mma_tap<T, kAMN>(acc[j], a_desc + kk * a_kstep, b_desc + plane * kPlaneUnits + cg.shift[j] + 16 * kk);
    }
  }
}

// channels_last staging (the one-row and ring kernels): thread t copies the 16-byte piece of
// channel group b = t % 8 of pixels / columns p0 + kLanes i (p0 = t / 8; kLanes = threads / 8).
template <typename T, int kPlanes, int kLanes>
__device__ __forceinline__ void stage_x_cl(unsigned char* a_s, const T* x_lane, const T* x, const Geometry& g,
                                           const SegmentWalk& sg, int b, int p0, bool group_ok) {
  using L = LayoutCL<kPlanes>;
  const int W = static_cast<int>(g.W);
  const int iw0 = sg.sw * L::kSeg;
  const T* xr = x_lane + (static_cast<int64_t>(sg.n) * g.H + sg.ih) * W * g.Cin;
#pragma unroll
  for (int i = 0; i < (L::kSeg + kLanes - 1) / kLanes; ++i) {
    const int k = p0 + kLanes * i;
    if (L::kSeg % kLanes == 0 || k < L::kSeg) {
      const bool ok = group_ok && iw0 + k < W;
      mma::cp_async16(a_s + (b * L::kARows + k) * 16, ok ? xr + (iw0 + k) * g.Cin : x, ok);
    }
  }
}

// grad_output row oh of image n (zeros outside the image), kCols staged columns from c0, into
// the MN-major planes at b_s.
template <typename T, int kPlanes, int kLanes>
__device__ __forceinline__ void stage_go_row_cl(unsigned char* b_s, const T* go_lane, const T* go, const Geometry& g,
                                                int n, int oh, int c0, int b, int p0, bool group_ok) {
  using L = LayoutCL<kPlanes>;
  const int Ho = static_cast<int>(g.Hout), Wo = static_cast<int>(g.Wout);
  const bool row_ok = group_ok && oh >= 0 && oh < Ho;
  const T* gr = go_lane + (static_cast<int64_t>(n) * Ho + (row_ok ? oh : 0)) * Wo * g.Cout;
#pragma unroll
  for (int i = 0; i < (kCols + kLanes - 1) / kLanes; ++i) {
    const int c = p0 + kLanes * i, col = c0 + c;
    if (kCols % kLanes == 0 || c < kCols) {
      const bool ok = row_ok && col >= 0 && col < Wo;
      mma::cp_async16(b_s + (c % kPlanes) * L::kPlaneBytes + (b * L::kBRows + c / kPlanes) * 16,
                      ok ? gr + col * g.Cout : go, ok);
    }
  }
}

// ---- NCHW staging, shared by the one-row and ring kernels ----
// Warp w (of the block's first four) stages channels 16w .. 16w + 15 of both operands; the
// per-thread part of every address is fixed, so a step's loads are pointer adds (a first
// version computed each piece's address from a flat index: 1370 instructions per warp and
// step with 4-byte pieces, ncu run AZ). x_rows / go_rows: of the warp's 16 channels, those
// in range.

// A: the x segment of (n, ih, sw). Lane l copies piece l % Q of channels 16w + l / Q +
// (32 / Q) i (Q lanes = one channel's kSegN contiguous columns, 16-byte pieces of kElems).
// (kSegN: the TF32 kernel's own segment.)
template <typename T, int kPlanes, int kSegN = Layout<kPlanes>::kSeg>
__device__ __forceinline__ void stage_x_nchw(unsigned char* a_s, const T* x_tile, const T* x, const Geometry& g,
                                             const SegmentWalk& sg, int warp, int lane, int x_rows) {
  constexpr int kElems = 16 / static_cast<int>(sizeof(T));
  constexpr int Q = kSegN / kElems, kRowsPerPass = 32 / Q;
  const int64_t x_plane = g.H * g.W;
  const int iw0 = sg.sw * kSegN;
  const int kq = lane % Q, r0 = lane / Q;
  const bool col_ok = iw0 + kq * kElems < g.W;
  const T* src = x_tile + (static_cast<int64_t>(sg.n) * g.Cin * g.H + sg.ih) * g.W + iw0 + kq * kElems +
                 (16 * warp + r0) * x_plane;
  unsigned char* dst = a_s + kq * kAPlane + (16 * warp + r0) * 16;
#pragma unroll
  for (int i = 0; i < 16 / kRowsPerPass; ++i) {
    const bool ok = col_ok && r0 + kRowsPerPass * i < x_rows;
    mma::cp_async16(dst + kRowsPerPass * i * 16, ok ? src : x, ok);
    src += kRowsPerPass * x_plane;  // (a running pointer: no 64-bit multiply per piece)
  }
}

// The piece boundary at or below staged column c0 (c0 rounded down to a multiple of
// kUnitElems): where a step's raw grad_output row starts; c0 minus it is the row's lead.
template <int kUnitElems>
__device__ __forceinline__ int piece_floor(int c0) {
  return c0 >= 0 ? c0 / kUnitElems * kUnitElems : -((-c0 + kUnitElems - 1) / kUnitElems) * kUnitElems;
}

// B raw: grad_output row oh of image n (zeros outside the image), kCols columns from the
// piece boundary at or below staged column c0, into the raw rows [co][kRawPitch]. Lanes
// along a row's pieces.
// (kColsN / kPitch: the TF32 kernel's own row length and pitch.)
template <typename T, int kUnit, int kColsN = kCols, int kPitch = kRawPitch>
__device__ __forceinline__ void stage_go_row_nchw(T* raw, const T* go_tile, const T* go, const Geometry& g,
                                                  int n, int oh, int c0, int warp, int lane, int go_rows) {
  constexpr int kUnitElems = kUnit / static_cast<int>(sizeof(T));
  constexpr int kPieces = kColsN / kUnitElems;  // grad_output pieces per staged row
  const int64_t go_plane = g.Hout * g.Wout;
  const int Wo = static_cast<int>(g.Wout);
  const bool row_ok = oh >= 0 && oh < g.Hout;
  const int base = piece_floor<kUnitElems>(c0);
  const T* gr = go_tile + (static_cast<int64_t>(n) * g.Cout * g.Hout + (row_ok ? oh : 0)) * g.Wout +
                16 * warp * go_plane;
  raw += 16 * warp * kPitch;
#pragma unroll
  for (int j = 0; j < (kPieces + 31) / 32; ++j) {
    const int pc = lane + 32 * j;
    if (pc < kPieces) {
      const int col = base + pc * kUnitElems;
      const bool col_ok = row_ok && col >= 0 && col < Wo;
      const T* src = gr + col;
      T* dst = raw + pc * kUnitElems;
#pragma unroll
      for (int r = 0; r < 16; ++r, src += go_plane) {
        const bool ok = col_ok && r < go_rows;
        const T* from = ok ? src : go;
        if constexpr (kUnit == 16) {
          mma::cp_async16(dst + r * kPitch, from, ok);
        } else if constexpr (kUnit == 8) {
          mma::cp_async8(dst + r * kPitch, from, ok);
        } else {
          mma::cp_async4(dst + r * kPitch, from, ok);
        }
      }
    }
  }
}

// Transpose a staged raw row [co][col] -> [plane][co/8][row][8 co] (col = row * kPlanes +
// plane), 4 blocks of 8 x 8 per ldmatrix / stmatrix x4 (lane 8i + r addresses row r of block
// i: raw row 8b + r to load, column 8cq + r to store), the x4 instructions spread over the
// block's kWarps warps (the guard is warp-uniform: both instructions are warp-wide); all
// loads first, so their latencies overlap.
template <int kPlanes, int kWarps>
__device__ __forceinline__ void transpose_go_row(uint32_t raw_addr, uint32_t tb_addr, int warp, int lane) {
  using L = Layout<kPlanes>;
  static_assert((kCh / 8) * (kCols / 8) % 4 == 0, "whole x4 instructions");
  constexpr int kX4 = (kCh / 8) * (kCols / 8) / 4;  // x4 instructions per row
  constexpr int kIters = (kX4 + kWarps - 1) / kWarps;
  const int blk = lane >> 3, r = lane & 7;
  uint32_t v[kIters][4];
#pragma unroll
  for (int k = 0; k < kIters; ++k) {
    const int id = 4 * (warp + k * kWarps) + blk, b = id / (kCols / 8), cq = id % (kCols / 8);
    if (kX4 % kWarps == 0 || warp + k * kWarps < kX4)
      wgmma::ldmatrix_x4_trans(v[k], raw_addr + ((8 * b + r) * kRawPitch + cq * 8) * 2);
  }
#pragma unroll
  for (int k = 0; k < kIters; ++k) {
    const int id = 4 * (warp + k * kWarps) + blk, b = id / (kCols / 8), cq = id % (kCols / 8);
    const int col = cq * 8 + r;
    if (kX4 % kWarps == 0 || warp + k * kWarps < kX4)
      wgmma::stmatrix_x4(tb_addr + (col % kPlanes) * L::kPlaneBytes + (b * L::kTRows + col / kPlanes) * 16, v[k]);
  }
}
#endif

// kUnit: bytes per grad_output piece (16, 8 or 4: the widest that divides a row and the
// base alignment; the host checks). x rows are whole 16-byte pieces.
template <typename T, int TT, int kUnit, int kPlanes>
__global__ void __launch_bounds__(kThreads, 2)
    grad_weight_wgmma_kernel(const T* __restrict__ x, const T* __restrict__ go, float* __restrict__ ws,
                             const Geometry g, int tiles_m, int tiles_n, int kw_groups, int64_t chunk) {
#ifdef CONVT_SM90A_DEVICE
  extern __shared__ __align__(128) unsigned char smem[];
  constexpr int kUnitElems = kUnit / static_cast<int>(sizeof(T));
  using L = Layout<kPlanes>;
  constexpr int kSeg = L::kSeg;

  const WgTile<TT, kPlanes> tile(g, tiles_m, tiles_n, kw_groups, chunk);
  const ColumnTapGroup& cg = tile.cg;
  const int group = tile.group, ki = tile.ki, ci0 = tile.ci0, co0 = tile.co0, segs_w = tile.segs_w;
  const int64_t s_begin = tile.s_begin, steps = tile.steps;
  const int Cin_g = static_cast<int>(g.Cin_g), Cout_g = static_cast<int>(g.Cout_g);
  const int H = static_cast<int>(g.H);
  // Staged column of tap kj0's input column iw0: kPlanes * (iw0 + qmin) (stride kPlanes).
  const int qmin = static_cast<int>(cg.qmin);

  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  // Channel planes of this tile: x[n][group*Cin_g + ci0 + ci], go[n][group*Cout_g + co0 + co].
  const T* x_tile = x + (static_cast<int64_t>(group) * Cin_g + ci0) * g.H * g.W;
  const T* go_tile = go + (static_cast<int64_t>(group) * Cout_g + co0) * g.Hout * g.Wout;

  // ---- loads of one step into raw stage `stage` (stage_x_nchw, stage_go_row_nchw) ----
  const int x_rows = Cin_g - ci0 - 16 * warp;   // of the warp's 16 channels, those in range
  const int go_rows = Cout_g - co0 - 16 * warp;
  auto load_step = [&](const SegmentWalk& sg, int stage) {
    unsigned char* a_s = smem + stage * L::kStageBytes;
    stage_x_nchw<T, kPlanes>(a_s, x_tile, x, g, sg, warp, lane, x_rows);
    const int oh = sg.ih * static_cast<int>(g.SH) - static_cast<int>(g.PH) + ki * static_cast<int>(g.DH);
    stage_go_row_nchw<T, kUnit>(reinterpret_cast<T*>(a_s + L::kABytes), go_tile, go, g, sg.n, oh,
                                kPlanes * (sg.sw * kSeg + qmin), warp, lane, go_rows);
  };

  float acc[TT][32];
  zero_acc(acc);

  unsigned char* t_buf = smem + kStages * L::kStageBytes;  // two transposed buffers
  SegmentWalk load_walk(s_begin, H, segs_w), mma_walk(s_begin, H, segs_w);
#pragma unroll
  for (int i = 0; i < kStages - 2; ++i) {
    if (i < steps) {
      load_step(load_walk, i);
      load_walk.next(H, segs_w);
    }
    mma::cp_async_commit();
  }

  // Descriptors of stage 0 / transposed buffer 0, advanced by adds (the start address is
  // the low field, in 16-byte units). A: LBO = quantum plane, SBO = 8 channels (128 bytes).
  // B (MN-major): LBO = 8 columns (128 bytes), SBO = 8 channels (kTRows rows of 16 bytes).
  const uint64_t a_desc0 = wgmma::make_desc(smem_u32(smem), kAPlane, 128);
  const uint64_t b_desc0 = wgmma::make_desc(smem_u32(t_buf), 128, L::kTRows * 16);

  for (int64_t t = 0; t < steps; ++t) {
    // Step t's pieces have landed (this thread's), are visible to the async proxy, and
    // (barrier) everyone's are. Every thread is past its wait for the MMAs of step t - 1,
    // so stage (t - 2) % kStages and transposed buffer t % 2 are free.
    mma::cp_async_wait<kStages - 3>();
    wgmma::fence_proxy_async();
    __syncthreads();

    const int stage = static_cast<int>(t % kStages);
    const uint32_t raw_addr = smem_u32(smem + stage * L::kStageBytes + L::kABytes);
    const uint32_t tb_addr = smem_u32(t_buf + (t & 1) * kTBytes);
    transpose_go_row<kPlanes, kThreads / 32>(raw_addr, tb_addr, warp, lane);
    wgmma::fence_proxy_async();
    __syncthreads();

    // The lead of this step's staged columns (a multiple of kPlanes: pieces hold whole
    // column pairs), so tap j's input column 0 is row lead / kPlanes + shift[j] of its plane.
    const int c0 = kPlanes * (mma_walk.sw * kSeg + qmin);
    const int lead = c0 - piece_floor<kUnitElems>(c0);
    mma_walk.next(H, segs_w);
    const uint64_t a_desc = a_desc0 + stage * (L::kStageBytes / 16);
    const uint64_t b_desc = b_desc0 + (t & 1) * (kTBytes / 16) + lead / kPlanes;
    wgmma::fence();
    mma_step<T, TT, kPlanes, false>(acc, a_desc, 2 * kAPlane / 16, b_desc, cg);  // B at row lead + shift[j] + 16kk
    wgmma::commit();

    // Loads of step t + kStages - 2, issued behind the MMAs (the stage they overwrite was
    // last read by step t - 2's MMAs and transposes, both finished before this barrier).
    if (t + kStages - 2 < steps) {
      load_step(load_walk, static_cast<int>((t + kStages - 2) % kStages));
      load_walk.next(H, segs_w);
    }
    mma::cp_async_commit();  // (empty groups keep the wait count uniform)
    wgmma::wait<1>();
  }
  store_partial(acc, tile, g, ws, tile.ki);
#else
  (void)x, (void)go, (void)ws, (void)g, (void)tiles_m, (void)tiles_n, (void)kw_groups, (void)chunk;
#endif
}

// ---- float (TF32), NCHW, stride 1 along the width ----
// TF32 wgmma reads shared-memory operands K-major only (no transposed forms), so grad_output
// cannot be kept MN-major for the taps to shift by whole rows, as the 16-bit kernels do: in a
// K-major operand a tap's column shift moves the start along K by single floats, below a
// descriptor's 16-byte granularity. Here grad_output is the A operand, from registers: each
// thread loads its fragment straight from the staged raw row at the tap's shift (any
// alignment), rounded to TF32 on the way; x is B, K-major as NCHW stores it, rounded in place
// by the threads that staged it (raw floats in a TF32 MMA are truncated, a bias that a
// reduction over millions of pixels adds up). The product is D[co][ci]; store_partial<true>
// writes it transposed. (A first form kept both operands in shared memory and copied the raw
// row per tap into aligned K-major buffers: 1.6x slower than the rows kernel, run TT.)
namespace tf32 {
constexpr int kSeg = 32;                  // input columns per step: four k8 MMAs per tap
constexpr int kQuanta = kSeg / 4;         // 16-byte K quanta of one channel's segment
constexpr int kCols = 48;                 // staged grad_output columns: lead (< 4) + halo + kSeg
constexpr int kRawPitch = 52;             // floats per raw row (52 mod 32 = 20: the fragment loads' 32 lanes hit distinct banks)
constexpr int kXBytes = kQuanta * kAPlane;  // the x segment [quantum][64 channels][16 B]
constexpr int kRawBytes = kCh * kRawPitch * 4;
constexpr int kStageBytes = kXBytes + kRawBytes;
constexpr int kStages = 4;
constexpr int kSmemBytes = kStages * kStageBytes;
static_assert(kCols % 4 == 0 && kCols <= kRawPitch && kStageBytes % 16 == 0, "whole 16-byte units");
}  // namespace tf32

#ifdef CONVT_SM90A_DEVICE
// ---- pieces of the TF32 kernels (one-row and ring) ----

// The x segment of (n, ih, sw), as stage_x_nchw<float, 1, tf32::kSeg> copies it: lane l of warp
// w (of the first four) copies quantum l % 8 of channels 16w + l / 8 + 4i (i < 4) into
// [quantum][ci][16 B]; tf32_round_x rounds the same pieces in place once they have landed (the
// thread that copied them, so no barrier between).
__device__ __forceinline__ unsigned char* tf32_x_piece(unsigned char* x_s, int warp, int lane, int i) {
  return x_s + (lane & 7) * kAPlane + (16 * warp + (lane >> 3) + 4 * i) * 16;
}

__device__ __forceinline__ void tf32_round_x(unsigned char* x_s, int warp, int lane) {
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    float4* p = reinterpret_cast<float4*>(tf32_x_piece(x_s, warp, lane, i));
    const float4 v = *p;
    *p = make_float4(__uint_as_float(tf32_bits(v.x)), __uint_as_float(tf32_bits(v.y)), __uint_as_float(tf32_bits(v.z)),
                     __uint_as_float(tf32_bits(v.w)));
  }
}

// One tap's A fragments from the raw grad_output row r (this thread's output channels 16w + g,
// + 8 and columns t, + 4: r = row + (16w + g) * pitch + t + the tap's shift), rounded to TF32.
__device__ __forceinline__ void tf32_load_a(uint32_t (&a)[tf32::kSeg / 8][4], const float* r) {
#pragma unroll
  for (int kk = 0; kk < tf32::kSeg / 8; ++kk) {
    a[kk][0] = tf32_bits(r[8 * kk]);
    a[kk][1] = tf32_bits(r[8 * kk + 8 * tf32::kRawPitch]);
    a[kk][2] = tf32_bits(r[8 * kk + 4]);
    a[kk][3] = tf32_bits(r[8 * kk + 4 + 8 * tf32::kRawPitch]);
  }
}

// One step's MMAs of one warpgroup: A fragments from the raw grad_output row `row` (with the
// step's lead added) at each tap's shift (padding slots: tap 0's), B the x segment at b_desc.
// The caller waits (wgmma::wait<0>) before the registers are reused.
// kTwoSets: two taps' fragments live at a time (the MMAs of tap j - 2 complete before tap j
// loads into their registers) instead of all TT taps': 32 fragment registers instead of 16 TT,
// for the ring kernel with three warpgroups and three taps, whose 96 accumulators and 48
// fragments do not fit the 168 registers of 384 threads: ptxas serialized the MMAs (warning
// C7512). With two sets it still spills 60-80 bytes, all outside the loop between the first and
// last HGMMA (SASS of run TY).
template <int TT, bool kTwoSets = false>
__device__ __forceinline__ void tf32_mma_step(float (&acc)[TT][32], const float* row, const ColumnTapGroup& cg,
                                              uint64_t b_desc) {
  if constexpr (kTwoSets && TT > 2) {
    uint32_t a[2][tf32::kSeg / 8][4];
#pragma unroll
    for (int j = 0; j < TT; ++j) {
      if (j >= 2) wgmma::wait<1>();  // tap j - 2's MMAs (its set) are done; tap j - 1's may run
      tf32_load_a(a[j & 1], row + (j < cg.taps ? cg.shift[j] : 0));
      wgmma::fence();
#pragma unroll
      for (int kk = 0; kk < tf32::kSeg / 8; ++kk)
        wgmma::m64n64k8_tf32_ra(acc[j], a[j & 1][kk], b_desc + kk * (2 * kAPlane / 16));
      wgmma::commit();
    }
  } else {
    uint32_t a[TT][tf32::kSeg / 8][4];
#pragma unroll
    for (int j = 0; j < TT; ++j) tf32_load_a(a[j], row + (j < cg.taps ? cg.shift[j] : 0));
    wgmma::fence();
#pragma unroll
    for (int kk = 0; kk < tf32::kSeg / 8; ++kk) {
#pragma unroll
      for (int j = 0; j < TT; ++j) wgmma::m64n64k8_tf32_ra(acc[j], a[j][kk], b_desc + kk * (2 * kAPlane / 16));
    }
    wgmma::commit();
  }
}
#endif

// kUnit: bytes per grad_output piece (16, 8 or 4), as in the 16-bit kernel.
// Block: 64 input x 64 output channels x TT taps of one kernel row (WgTile), one warpgroup;
// per step the x segment of 32 input columns of row (n, ih) and grad_output row oh (kCols
// columns from the piece boundary at or below the group's first column), raw, cp.async
// kStages - 2 steps ahead. The MMAs of a step complete within it (wait<0>): the next step
// reloads the fragment registers. Two blocks per SM (86.5 KB of shared memory, at most 256
// registers each) fill each other's waits.
template <int TT, int kUnit>
__global__ void __launch_bounds__(kThreads, 2)
    grad_weight_wgmma_tf32_kernel(const float* __restrict__ x, const float* __restrict__ go, float* __restrict__ ws,
                                  const Geometry g, int tiles_m, int tiles_n, int kw_groups, int64_t chunk) {
#ifdef CONVT_SM90A_DEVICE
  extern __shared__ __align__(128) unsigned char smem[];
  constexpr int kUnitElems = kUnit / 4;

  const WgTile<TT, 1, tf32::kSeg> tile(g, tiles_m, tiles_n, kw_groups, chunk);
  const ColumnTapGroup& cg = tile.cg;
  const int ki = tile.ki, segs_w = tile.segs_w;
  const int64_t steps = tile.steps;
  const int Cin_g = static_cast<int>(g.Cin_g), Cout_g = static_cast<int>(g.Cout_g);
  const int H = static_cast<int>(g.H);
  const int qmin = static_cast<int>(cg.qmin);

  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  const float* x_tile = x + (static_cast<int64_t>(tile.group) * Cin_g + tile.ci0) * g.H * g.W;
  const float* go_tile = go + (static_cast<int64_t>(tile.group) * Cout_g + tile.co0) * g.Hout * g.Wout;
  const int x_rows = Cin_g - tile.ci0 - 16 * warp;  // of the warp's 16 channels, those in range
  const int go_rows = Cout_g - tile.co0 - 16 * warp;

  auto load_step = [&](const SegmentWalk& sg, int stage) {
    unsigned char* s = smem + stage * tf32::kStageBytes;
    stage_x_nchw<float, 1, tf32::kSeg>(s, x_tile, x, g, sg, warp, lane, x_rows);
    const int oh = sg.ih * static_cast<int>(g.SH) - static_cast<int>(g.PH) + ki * static_cast<int>(g.DH);
    stage_go_row_nchw<float, kUnit, tf32::kCols, tf32::kRawPitch>(reinterpret_cast<float*>(s + tf32::kXBytes), go_tile,
                                                                  go, g, sg.n, oh, sg.sw * tf32::kSeg + qmin, warp,
                                                                  lane, go_rows);
  };

  float acc[TT][32];
  zero_acc(acc);

  SegmentWalk load_walk(tile.s_begin, H, segs_w), mma_walk(tile.s_begin, H, segs_w);
#pragma unroll
  for (int i = 0; i < tf32::kStages - 2; ++i) {
    if (i < steps) {
      load_step(load_walk, i);
      load_walk.next(H, segs_w);
    }
    mma::cp_async_commit();
  }

  // B (x): [quantum][64 rows][16 B]: LBO = one quantum plane, SBO = 8 rows (128 bytes).
  const uint64_t b_desc0 = wgmma::make_desc(smem_u32(smem), kAPlane, 128);
  const int a_off = (16 * warp + (lane >> 2)) * tf32::kRawPitch + (lane & 3);  // see tf32_mma_step

  for (int64_t t = 0; t < steps; ++t) {
    // This thread's pieces of step t have landed: round its x pieces to TF32 in place.
    mma::cp_async_wait<tf32::kStages - 3>();
    const int stage = static_cast<int>(t % tf32::kStages);
    tf32_round_x(smem + stage * tf32::kStageBytes, warp, lane);
    wgmma::fence_proxy_async();
    __syncthreads();  // everyone's pieces (raw rows too) are in

    // grad_output at column lead + shift_j of the raw row.
    const int c0 = mma_walk.sw * tf32::kSeg + qmin;
    const int lead = c0 - piece_floor<kUnitElems>(c0);
    mma_walk.next(H, segs_w);
    const float* raw = reinterpret_cast<const float*>(smem + stage * tf32::kStageBytes + tf32::kXBytes);
    tf32_mma_step(acc, raw + a_off + lead, cg, b_desc0 + stage * (tf32::kStageBytes / 16));

    // Loads of step t + kStages - 2 (the stage they overwrite was last read in step t - 2,
    // whose MMAs completed there and whose fragment loads every thread finished before this
    // step's barrier).
    if (t + tf32::kStages - 2 < steps) {
      load_step(load_walk, static_cast<int>((t + tf32::kStages - 2) % tf32::kStages));
      load_walk.next(H, segs_w);
    }
    mma::cp_async_commit();
    wgmma::wait<0>();
  }
  store_partial<true>(acc, tile, g, ws, tile.ki);
#else
  (void)x, (void)go, (void)ws, (void)g, (void)tiles_m, (void)tiles_n, (void)kw_groups, (void)chunk;
#endif
}

// The NCHW ring kernels' walk: the block's segments in order, each run of a column (a new
// (n, sw)) preceded by `pre` = wr - 1 pre-steps that stage one grad_output row each and multiply
// nothing, so that a column's first window is full. pre_left > 0: a pre-step staging window row
// pre - pre_left; 0: the segment's own step. The loads and the MMAs each keep one, the loads
// kStages - 2 steps ahead.
struct RingWalk {
  SegmentWalk sg;
  int pre_left;
  __device__ __forceinline__ RingWalk(int64_t s_begin, int H, int segs_w, int pre)
      : sg(s_begin, H, segs_w), pre_left(pre) {}
  __device__ __forceinline__ void advance(int H, int segs_w, int pre) {
    if (pre_left > 0) {
      --pre_left;
    } else {
      sg.next(H, segs_w);
      pre_left = sg.ih == 0 ? pre : 0;
    }
  }
  // Steps of the walk over `steps` segments from s_begin: one per segment and `pre` per run.
  __device__ __forceinline__ static int64_t steps(int64_t s_begin, int64_t steps, int H, int pre) {
    const int64_t runs = steps > 0 ? 1 + (s_begin + steps - 1) / H - s_begin / H : 0;
    return steps + pre * runs;
  }
};

// The TF32 kernel with several kernel rows per block (NCHW, stride 1 along the height), the
// 16-bit NCHW ring kernel's design (below): KR warpgroups, warpgroup k multiplying kernel row
// ki0 + k. The kernel rows of one input row read a window of wr = (KR - 1) DH + 1 consecutive
// grad_output rows, and the next input row of the column the window one row down, so each
// step stages one new raw grad_output row, into ring slot v % ring, and the x segment once
// for all KR rows: per MMA, KR times fewer bytes than the one-row kernel, which its loads bound
// (perf-notes-backward v33). A column's first window needs wr - 1 rows before it: pre-steps
// that stage one row each and multiply nothing (the walk of the 16-bit ring kernel). Raw rows
// are the A operand as loaded (registers), so the ring holds them untransposed; a slot is free
// once the last window reading it has passed (ring = wr + kStages - 2: the loads run
// kStages - 2 steps ahead, and every step's MMAs complete within it).
//
// kBias (tf32_ring_bias_ok: one kernel-row group, one tap group, every grad_output row and column
// staged): the last warpgroup of the blocks of input-channel tile 0 also sums grad_bias from the
// ring, each element once: the row a step stages new (slot v % ring), at a step that multiplies,
// or at a pre-step of a run that starts a column (its rows are no step's own; a run that starts
// mid-column, at the block's first segment, leaves them to the block before), over the segment's
// own columns [c0, c0 + kSeg) (the last segment: to the end of its staged row; columns outside the
// image are staged as zeros). After its MMAs are issued, so the loads overlap them. Partials ->
// bias_ws[split][Cout], then grad_bias_reduce. Why: grad_bias's own pass read all of grad_output
// again (float32 NCHW kb2_10: 746 us of a 13.1 ms step, run UN).
template <int TT, int kUnit, int KR, bool kBias = false>
__global__ void __launch_bounds__(128 * KR, 1)
    grad_weight_wgmma_tf32_ring_kernel(const float* __restrict__ x, const float* __restrict__ go, float* __restrict__ ws,
                                       const Geometry g, int tiles_m, int tiles_n, int kw_groups, int64_t chunk,
                                       int wr, int ring, float* __restrict__ bias_ws) {
#ifdef CONVT_SM90A_DEVICE
  static_assert(KR >= 2, "the ring kernel's loads are split between its first two warpgroups");
  extern __shared__ __align__(128) unsigned char smem[];
  constexpr int kUnitElems = kUnit / 4;
  constexpr int kAhead = tf32::kStages - 2;

  // WgTile's ki is the index of the block's kernel-row group here.
  const WgTile<TT, 1, tf32::kSeg> tile(g, tiles_m, tiles_n, kw_groups, chunk);
  const ColumnTapGroup& cg = tile.cg;
  const int ki0 = tile.ki * KR;
  const int Cin_g = static_cast<int>(g.Cin_g), Cout_g = static_cast<int>(g.Cout_g);
  const int H = static_cast<int>(g.H), segs_w = tile.segs_w;
  const int qmin = static_cast<int>(cg.qmin);
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31, wg = tid >> 7;
  const int wgw = warp & 3;  // warp within its warpgroup
  const float* x_tile = x + (static_cast<int64_t>(tile.group) * Cin_g + tile.ci0) * g.H * g.W;
  const float* go_tile = go + (static_cast<int64_t>(tile.group) * Cout_g + tile.co0) * g.Hout * g.Wout;
  // Warpgroup 0 stages the x segments (and rounds them), warpgroup 1 the grad_output rows: every
  // warpgroup waits at each step's barrier for the staging warps, and with both loads on warpgroup
  // 0 the kernel took 7-9% longer (run TZ: kb1_69 3896 against 4185 us, kb2_10 3802 / 4168).
  const int x_rows = Cin_g - tile.ci0 - 16 * warp;
  const int go_rows = Cout_g - tile.co0 - 16 * wgw;

  const int pre = wr - 1;  // pre-steps before each run of a column (RingWalk)
  const int64_t vsteps = RingWalk::steps(tile.s_begin, tile.steps, H, pre);
  unsigned char* ring_s = smem + tf32::kStages * tf32::kXBytes;  // ring slots of kRawBytes
  auto load_vstep = [&](const RingWalk& w, int64_t v) {
    const SegmentWalk& sg = w.sg;
    if (w.pre_left == 0 && wg == 0)
      stage_x_nchw<float, 1, tf32::kSeg>(smem + (v % tf32::kStages) * tf32::kXBytes, x_tile, x, g, sg, warp, lane,
                                         x_rows);
    if (wg != 1) return;
    const int oh = sg.ih - static_cast<int>(g.PH) + ki0 * static_cast<int>(g.DH) + (pre - w.pre_left);
    stage_go_row_nchw<float, kUnit, tf32::kCols, tf32::kRawPitch>(
        reinterpret_cast<float*>(ring_s + (v % ring) * tf32::kRawBytes), go_tile, go, g, sg.n, oh,
        sg.sw * tf32::kSeg + qmin, wgw, lane, go_rows);
  };

  float acc[TT][32];
  zero_acc(acc);

  RingWalk load_w(tile.s_begin, H, segs_w, pre), mma_w(tile.s_begin, H, segs_w, pre);
#pragma unroll
  for (int i = 0; i < kAhead; ++i) {
    if (i < vsteps) {
      load_vstep(load_w, i);
      load_w.advance(H, segs_w, pre);
    }
    mma::cp_async_commit();
  }

  const uint64_t b_desc0 = wgmma::make_desc(smem_u32(smem), kAPlane, 128);
  const int a_off = (16 * wgw + (lane >> 2)) * tf32::kRawPitch + (lane & 3);  // see tf32_mma_step
  const int row_in_window = wg * static_cast<int>(g.DH);
  // grad_bias (kBias): which threads sum (warpgroup-uniform), their index, their sum.
  constexpr int kSumUnits = tf32::kCols / 8;  // 16-byte units per thread: half a staged row's
  static_assert(tf32::kCols % 8 == 0 && tf32::kRawPitch % 4 == 0, "whole 16-byte units per half row");
  const bool sums = kBias && tile.ci0 == 0 && wg == KR - 1;
  const int sum_t = tid & 127;
  float bias_acc = 0.f;

  for (int64_t v = 0; v < vsteps; ++v) {
    mma::cp_async_wait<tf32::kStages - 3>();
    const bool multiply = mma_w.pre_left == 0;
    const int stage = static_cast<int>(v % tf32::kStages);
    if (multiply && warp < 4) tf32_round_x(smem + stage * tf32::kXBytes, warp, lane);
    wgmma::fence_proxy_async();
    __syncthreads();  // the step's x pieces and raw row are in, from every staging thread

    if (multiply) {
      const int c0 = mma_w.sg.sw * tf32::kSeg + qmin;
      const int lead = c0 - piece_floor<kUnitElems>(c0);
      // The window ends at this step's row (slot v % ring); this warpgroup's row is wg * DH into it.
      const int64_t slot = (v - pre + row_in_window) % ring;
      const float* raw = reinterpret_cast<const float*>(ring_s + slot * tf32::kRawBytes);
      tf32_mma_step<TT, (KR * TT > 8)>(acc, raw + a_off + lead, cg, b_desc0 + stage * (tf32::kXBytes / 16));
    }
    if constexpr (kBias) {
      if (sums && (multiply || mma_w.sg.ih == 0)) {
        const int c0 = mma_w.sg.sw * tf32::kSeg + qmin;
        const int lead = c0 - piece_floor<kUnitElems>(c0);
        const int own_end = mma_w.sg.sw == segs_w - 1 ? tf32::kCols : lead + tf32::kSeg;
        // Thread t: channel row t / 2, 16-byte units t % 2 + 2m of the staged row; every load first.
        const float4* row = reinterpret_cast<const float4*>(ring_s + (v % ring) * tf32::kRawBytes) +
                            (sum_t >> 1) * (tf32::kRawPitch / 4) + (sum_t & 1);
        float4 u[kSumUnits];
#pragma unroll
        for (int m = 0; m < kSumUnits; ++m) u[m] = row[2 * m];
#pragma unroll
        for (int m = 0; m < kSumUnits; ++m) {
          const int i = 4 * ((sum_t & 1) + 2 * m);
          bias_acc += (i >= lead && i < own_end ? u[m].x : 0.f) + (i + 1 >= lead && i + 1 < own_end ? u[m].y : 0.f) +
                      (i + 2 >= lead && i + 2 < own_end ? u[m].z : 0.f) + (i + 3 >= lead && i + 3 < own_end ? u[m].w : 0.f);
        }
      }
    }
    mma_w.advance(H, segs_w, pre);
    if (v + kAhead < vsteps) {
      load_vstep(load_w, v + kAhead);
      load_w.advance(H, segs_w, pre);
    }
    mma::cp_async_commit();
    wgmma::wait<0>();
  }
  if (ki0 + wg < g.KH) store_partial<true>(acc, tile, g, ws, ki0 + wg);
  if constexpr (kBias) {
    if (sums) {
      // The row's two threads (adjacent lanes), then one store per channel: a fixed order.
      bias_acc += __shfl_xor_sync(0xffffffffu, bias_acc, 1);
      const int co = tile.co0 + (sum_t >> 1);
      if ((sum_t & 1) == 0 && co < Cout_g)
        bias_ws[static_cast<int64_t>(blockIdx.y) * g.Cout + static_cast<int64_t>(tile.group) * Cout_g + co] = bias_acc;
    }
  }
#else
  (void)x, (void)go, (void)ws, (void)g, (void)tiles_m, (void)tiles_n, (void)kw_groups, (void)chunk, (void)wr, (void)ring;
  (void)bias_ws;
#endif
}

// NCHW, several kernel rows per block (stride 1 along the height): the ring kernel's
// design (see grad_weight_wgmma_cl_ring_kernel below) for the NCHW operands, whose
// grad_output rows are transposed once per staging. Every step stages one raw grad_output
// row (and, for a step that multiplies, the x segment), transposes it into ring slot
// v % R, and multiplies the window of WR rows that ends there. A column's first window
// (and the block's) needs WR - 1 rows before it: the walk puts WR - 1 pre-steps in front
// of each run of a column, which stage and transpose one row each and multiply nothing.
// So every step loads the same amount and the raw stages stay one row deep.
// Ring size: the transpose of step v writes slot v % R while the MMAs of step v - 1 may
// still read its window, rows v - WR .. v - 1 (a pre-step waits for all MMAs: wait<0>), so
// R = WR + 1.
template <typename T, int TT, int kUnit, int kPlanes, int KR>
__global__ void __launch_bounds__(128 * KR, 1)
    grad_weight_wgmma_ring_kernel(const T* __restrict__ x, const T* __restrict__ go, float* __restrict__ ws,
                                  const Geometry g, int tiles_m, int tiles_n, int kw_groups, int64_t chunk,
                                  int wr, int ring) {
#ifdef CONVT_SM90A_DEVICE
  static_assert(KR >= 2, "the ring kernel's loads are split between its first two warpgroups");
  extern __shared__ __align__(128) unsigned char smem[];
  constexpr int kUnitElems = kUnit / static_cast<int>(sizeof(T));
  using L = Layout<kPlanes>;
  constexpr int kSeg = L::kSeg;
  constexpr int kWarps = 4 * KR;

  // WgTile's ki is the index of the block's kernel-row group here.
  const WgTile<TT, kPlanes> tile(g, tiles_m, tiles_n, kw_groups, chunk);
  const ColumnTapGroup& cg = tile.cg;
  const int ki0 = tile.ki * KR;
  const int Cin_g = static_cast<int>(g.Cin_g), Cout_g = static_cast<int>(g.Cout_g);
  const int H = static_cast<int>(g.H), segs_w = tile.segs_w;
  const int qmin = static_cast<int>(cg.qmin);
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31, wg = tid >> 7;
  const T* x_tile = x + (static_cast<int64_t>(tile.group) * Cin_g + tile.ci0) * g.H * g.W;
  const T* go_tile = go + (static_cast<int64_t>(tile.group) * Cout_g + tile.co0) * g.Hout * g.Wout;
  // Warpgroup 0 stages the x segments, warpgroup 1 the raw grad_output rows; all warps
  // transpose. (Both loads on warpgroup 0: 1-3% slower, run UB: bf16 kb2_10 1814-1833 against
  // 1771 us, kb1_69 1848 against 1821.)
  const int x_rows = Cin_g - tile.ci0 - 16 * warp;
  const int go_rows = Cout_g - tile.co0 - 16 * (warp & 3);

  const int pre = wr - 1;  // pre-steps before each run of a column (RingWalk)
  const int64_t vsteps = RingWalk::steps(tile.s_begin, tile.steps, H, pre);
  auto load_vstep = [&](const RingWalk& w, int stage) {
    const SegmentWalk& sg = w.sg;
    unsigned char* a_s = smem + stage * L::kStageBytes;
    if (w.pre_left == 0 && wg == 0) stage_x_nchw<T, kPlanes>(a_s, x_tile, x, g, sg, warp, lane, x_rows);
    if (wg != 1) return;
    const int oh = sg.ih - static_cast<int>(g.PH) + ki0 * static_cast<int>(g.DH) + (pre - w.pre_left);
    stage_go_row_nchw<T, kUnit>(reinterpret_cast<T*>(a_s + L::kABytes), go_tile, go, g, sg.n, oh,
                                kPlanes * (sg.sw * kSeg + qmin), warp & 3, lane, go_rows);
  };

  float acc[TT][32];
  zero_acc(acc);

  unsigned char* ring_s = smem + kStages * L::kStageBytes;  // R transposed rows of kTBytes
  RingWalk load_w(tile.s_begin, H, segs_w, pre), mma_w(tile.s_begin, H, segs_w, pre);
  constexpr int kAhead = kStages - 2;
#pragma unroll
  for (int i = 0; i < kAhead; ++i) {
    if (i < vsteps) {
      load_vstep(load_w, i);
      load_w.advance(H, segs_w, pre);
    }
    mma::cp_async_commit();
  }

  const uint64_t a_desc0 = wgmma::make_desc(smem_u32(smem), kAPlane, 128);
  const uint64_t b_desc0 = wgmma::make_desc(smem_u32(ring_s), 128, L::kTRows * 16);
  const int row_in_window = wg * static_cast<int>(g.DH);

  for (int64_t v = 0; v < vsteps; ++v) {
    mma::cp_async_wait<kStages - 3>();
    wgmma::fence_proxy_async();
    __syncthreads();

    const int stage = static_cast<int>(v % kStages);
    const uint32_t raw_addr = smem_u32(smem + stage * L::kStageBytes + L::kABytes);
    const uint32_t tb_addr = smem_u32(ring_s + (v % ring) * kTBytes);
    transpose_go_row<kPlanes, kWarps>(raw_addr, tb_addr, warp, lane);
    wgmma::fence_proxy_async();
    __syncthreads();

    const bool multiply = mma_w.pre_left == 0;
    if (multiply) {
      const int c0 = kPlanes * (mma_w.sg.sw * kSeg + qmin);
      const int lead = c0 - piece_floor<kUnitElems>(c0);
      // The window ends at this step's row (slot v % R); this warpgroup's row is wg*DH
      // into it.
      const int slot = static_cast<int>((v - pre + row_in_window) % ring);
      const uint64_t a_desc = a_desc0 + stage * (L::kStageBytes / 16);
      const uint64_t b_desc = b_desc0 + slot * (kTBytes / 16) + lead / kPlanes;
      wgmma::fence();
      mma_step<T, TT, kPlanes, false>(acc, a_desc, 2 * kAPlane / 16, b_desc, cg);
      wgmma::commit();
    }
    mma_w.advance(H, segs_w, pre);
    if (v + kAhead < vsteps) {
      load_vstep(load_w, static_cast<int>((v + kAhead) % kStages));
      load_w.advance(H, segs_w, pre);
    }
    mma::cp_async_commit();
    if (multiply) wgmma::wait<1>();
    else wgmma::wait<0>();
  }
  if (ki0 + wg < g.KH) store_partial(acc, tile, g, ws, ki0 + wg);
  else wgmma::wait<0>();
#else
  (void)x, (void)go, (void)ws, (void)g, (void)tiles_m, (void)tiles_n, (void)kw_groups, (void)chunk;
  (void)wr, (void)ring;
#endif
}

// channels_last operands, read in place: one pixel's 8 consecutive channels are a 16-byte
// piece, so x and grad_output go global -> shared by cp.async straight into the MN-major
// layouts (LayoutCL); a tap's shift is again a row offset of B's descriptor, and at stride 2
// the piece of column c goes to plane c % 2. No raw stage, no transpose, one barrier per step,
// and no row alignment rule (channel groups Cin_g, Cout_g multiples of 8; the host checks).
// Warp w, lane l: channel group l % 8, pixels / columns l / 8 + 4w + 16i.
template <typename T, int TT, int kPlanes>
__global__ void __launch_bounds__(kThreads, 2)
    grad_weight_wgmma_cl_kernel(const T* __restrict__ x, const T* __restrict__ go, float* __restrict__ ws,
                                const Geometry g, int tiles_m, int tiles_n, int kw_groups, int64_t chunk) {
#ifdef CONVT_SM90A_DEVICE
  extern __shared__ __align__(128) unsigned char smem[];
  using L = LayoutCL<kPlanes>;
  constexpr int kSeg = L::kSeg;
  const WgTile<TT, kPlanes> tile(g, tiles_m, tiles_n, kw_groups, chunk);
  const ColumnTapGroup& cg = tile.cg;
  const int H = static_cast<int>(g.H);
  const int qmin = static_cast<int>(cg.qmin);
  const int b = threadIdx.x & 7, p0 = threadIdx.x >> 3;  // channel group, first pixel / column
  const bool x_group_ok = tile.ci0 + 8 * b < g.Cin_g;
  const bool go_group_ok = tile.co0 + 8 * b < g.Cout_g;
  const T* x_lane = x + tile.group * g.Cin_g + tile.ci0 + 8 * b;    // + pixel * Cin
  const T* go_lane = go + tile.group * g.Cout_g + tile.co0 + 8 * b;  // + pixel * Cout

  auto load_step = [&](const SegmentWalk& sg, int stage) {
    unsigned char* a_s = smem + stage * L::kStageBytes;
    stage_x_cl<T, kPlanes, 16>(a_s, x_lane, x, g, sg, b, p0, x_group_ok);
    const int oh = sg.ih * static_cast<int>(g.SH) - static_cast<int>(g.PH) + tile.ki * static_cast<int>(g.DH);
    stage_go_row_cl<T, kPlanes, 16>(a_s + L::kABytes, go_lane, go, g, sg.n, oh, kPlanes * (sg.sw * kSeg + qmin),
                                    b, p0, go_group_ok);
  };

  float acc[TT][32];
  zero_acc(acc);

  SegmentWalk load_walk(tile.s_begin, H, tile.segs_w);
#pragma unroll
  for (int i = 0; i < kStages - 2; ++i) {
    if (i < tile.steps) {
      load_step(load_walk, i);
      load_walk.next(H, tile.segs_w);
    }
    mma::cp_async_commit();
  }
  // MN-major descriptors: LBO = 8 K rows (128 bytes), SBO = one 8-channel group.
  const uint64_t a_desc0 = wgmma::make_desc(smem_u32(smem), 128, L::kARows * 16);
  const uint64_t b_desc0 = wgmma::make_desc(smem_u32(smem + L::kABytes), 128, L::kBRows * 16);

  for (int64_t t = 0; t < tile.steps; ++t) {
    // As in the NCHW kernel: step t has landed everywhere, and stage (t - 2) % kStages is
    // free (every thread waited for step t - 2's MMAs before this barrier).
    mma::cp_async_wait<kStages - 3>();
    wgmma::fence_proxy_async();
    __syncthreads();
    const int stage = static_cast<int>(t % kStages);
    const uint64_t a_desc = a_desc0 + stage * (L::kStageBytes / 16);
    const uint64_t b_desc = b_desc0 + stage * (L::kStageBytes / 16);
    wgmma::fence();
    mma_step<T, TT, kPlanes, true>(acc, a_desc, 16, b_desc, cg);
    wgmma::commit();
    if (t + kStages - 2 < tile.steps) {
      load_step(load_walk, static_cast<int>((t + kStages - 2) % kStages));
      load_walk.next(H, tile.segs_w);
    }
    mma::cp_async_commit();
    wgmma::wait<1>();
  }
  store_partial(acc, tile, g, ws, tile.ki);
#else
  (void)x, (void)go, (void)ws, (void)g, (void)tiles_m, (void)tiles_n, (void)kw_groups, (void)chunk;
#endif
}

// channels_last, several kernel rows per block: the x segment staged once for all of them,
// grad_output rows in a ring.
//
// The kernels above give a block one kernel row ki. Each of a tile's KH blocks stages the
// same x segment, and each grad_output row is staged by KH steps (row oh is read at KH
// values of ih). Both ran at 89-93% of the L2's throughput (ncu, run CM, bf16 kb1_57: NCHW
// 2.64 ms, channels_last 3.76), so staging a byte fewer times is the lever. Here a block of
// KR warpgroups owns KR consecutive kernel rows (warpgroup k: row ki0 + k) of one channel
// tile and tap group. Its x segment serves all of them, and since the walk moves down a
// column (SegmentWalk: ih fastest), consecutive steps' grad_output rows overlap: step ih
// reads rows ih*SH - PH + (ki0 + k)*DH, a window of WR = (KR - 1)*DH + 1 rows that moves
// SH rows per step. The rows live in a ring of R slots, in load order: a step loads the
// rows new to its window (m = min(SH, WR)), or the whole window at the block's first step
// and where the walk starts a new column. A step of KR x TT taps stages 8 KB of x and (at
// SH == 1) one 10 KB row, against KR x 18 KB in the one-row kernel.
//
// Ring size. Step t issues the loads of step t + L (L = kStages - 2) after its MMAs, when
// the MMAs of steps t - 1 and t may still be reading (the barrier has seen step t - 2's
// finish). Counted in load order, the oldest row still needed is the first of step t - 1's
// window, and the loads of steps t .. t + L add at most WR + L*m rows: at most one new
// column among L + 1 consecutive steps when H >= L + 1, and at t = 0, where nothing older
// is read, the block's first window is the other full one. So R = 2*WR + L*m slots never
// overwrite a row still to be read (ring_plan, host side).
template <int kPlanes>
struct RingLayoutCL {
  using C = LayoutCL<kPlanes>;
  static constexpr int kRowBytes = kPlanes * C::kPlaneBytes;  // one staged grad_output row
  static constexpr int kXBytes = kStages * C::kABytes;        // the x stages, then the ring
};

// The rows a step loads into the ring, from its SegmentWalk position: the whole window
// (first step, or a new column) or its last m rows.
struct RingRows {
  int first, count;
};
__device__ __forceinline__ RingRows ring_rows(const SegmentWalk& sg, bool first_step, const Geometry& g,
                                              int ki0, int wr, int m) {
  const int top = sg.ih * static_cast<int>(g.SH) - static_cast<int>(g.PH) + ki0 * static_cast<int>(g.DH);
  return (first_step || sg.ih == 0) ? RingRows{top, wr} : RingRows{top + wr - m, m};
}

template <typename T, int TT, int kPlanes, int KR>
__global__ void __launch_bounds__(128 * KR, 1)
    grad_weight_wgmma_cl_ring_kernel(const T* __restrict__ x, const T* __restrict__ go, float* __restrict__ ws,
                                     const Geometry g, int tiles_m, int tiles_n, int kw_groups, int64_t chunk,
                                     int wr, int m, int ring) {
#ifdef CONVT_SM90A_DEVICE
  extern __shared__ __align__(128) unsigned char smem[];
  using L = LayoutCL<kPlanes>;
  using RL = RingLayoutCL<kPlanes>;
  constexpr int kSeg = L::kSeg;
  constexpr int kLanes = 16 * KR;  // threads per channel group: pixels / columns per pass
  // WgTile's ki is the index of the block's kernel-row group here (grid: KH / KR groups).
  const WgTile<TT, kPlanes> tile(g, tiles_m, tiles_n, kw_groups, chunk);
  const ColumnTapGroup& cg = tile.cg;
  const int ki0 = tile.ki * KR;
  const int H = static_cast<int>(g.H);
  const int qmin = static_cast<int>(cg.qmin);
  const int tid = threadIdx.x, wg = tid >> 7, b = tid & 7, p0 = tid >> 3;
  const bool x_group_ok = tile.ci0 + 8 * b < g.Cin_g;
  const bool go_group_ok = tile.co0 + 8 * b < g.Cout_g;
  const T* x_lane = x + tile.group * g.Cin_g + tile.ci0 + 8 * b;    // + pixel * Cin
  const T* go_lane = go + tile.group * g.Cout_g + tile.co0 + 8 * b;  // + pixel * Cout
  unsigned char* ring_s = smem + RL::kXBytes;

  int q_load = 0;  // rows loaded so far, in load order (the ring slot is q % ring)
  auto load_step = [&](const SegmentWalk& sg, bool first_step, int stage) {
    stage_x_cl<T, kPlanes, kLanes>(smem + stage * L::kABytes, x_lane, x, g, sg, b, p0, x_group_ok);
    const RingRows rows = ring_rows(sg, first_step, g, ki0, wr, m);
    const int c0 = kPlanes * (sg.sw * kSeg + qmin);
    for (int r = 0; r < rows.count; ++r, ++q_load)
      stage_go_row_cl<T, kPlanes, kLanes>(ring_s + (q_load % ring) * RL::kRowBytes, go_lane, go, g, sg.n,
                                          rows.first + r, c0, b, p0, go_group_ok);
  };

  float acc[TT][32];
  zero_acc(acc);

  constexpr int kAhead = kStages - 2;
  SegmentWalk load_walk(tile.s_begin, H, tile.segs_w), mma_walk(tile.s_begin, H, tile.segs_w);
#pragma unroll
  for (int i = 0; i < kAhead; ++i) {
    if (i < tile.steps) {
      load_step(load_walk, i == 0, i);
      load_walk.next(H, tile.segs_w);
    }
    mma::cp_async_commit();
  }
  // MN-major descriptors (as in the one-row kernel): LBO = 8 K rows, SBO = one 8-channel group.
  const uint64_t a_desc0 = wgmma::make_desc(smem_u32(smem), 128, L::kARows * 16);
  const uint64_t b_desc0 = wgmma::make_desc(smem_u32(ring_s), 128, L::kBRows * 16);
  // This warpgroup's row in a step's window: offset wg*DH from the window's first.
  const int row_in_window = wg * static_cast<int>(g.DH);

  int q_mma = 0;  // rows loaded through the step being multiplied
  for (int64_t t = 0; t < tile.steps; ++t) {
    mma::cp_async_wait<kStages - 3>();
    wgmma::fence_proxy_async();
    __syncthreads();
    const int stage = static_cast<int>(t % kStages);
    q_mma += ring_rows(mma_walk, t == 0, g, ki0, wr, m).count;
    mma_walk.next(H, tile.segs_w);
    const int slot = (q_mma - wr + row_in_window) % ring;
    const uint64_t a_desc = a_desc0 + stage * (L::kABytes / 16);
    const uint64_t b_desc = b_desc0 + slot * (RL::kRowBytes / 16);
    wgmma::fence();
    mma_step<T, TT, kPlanes, true>(acc, a_desc, 16, b_desc, cg);
    wgmma::commit();
    if (t + kAhead < tile.steps) {
      load_step(load_walk, false, static_cast<int>((t + kAhead) % kStages));
      load_walk.next(H, tile.segs_w);
    }
    mma::cp_async_commit();
    wgmma::wait<1>();
  }
  // Warpgroups past the last kernel row (KH not a multiple of KR) multiplied rows of the
  // window too, and store nothing.
  if (ki0 + wg < g.KH) store_partial(acc, tile, g, ws, ki0 + wg);
  else wgmma::wait<0>();
#else
  (void)x, (void)go, (void)ws, (void)g, (void)tiles_m, (void)tiles_n, (void)kw_groups, (void)chunk;
  (void)wr, (void)m, (void)ring;
#endif
}

// Taps per block: the kernel row's KW taps in groups of at most 4, as even as possible
// (the rows kernels' rule).
int64_t group_taps(const Geometry& g) {
  const int64_t kw_groups = ceil_div(g.KW, kMaxTaps);
  return ceil_div(g.KW, kw_groups);
}

// Input columns per step: Layout<planes>::kSeg, planes = the stride along the width (1 or 2).
int64_t seg_cols(const Geometry& g) { return g.SW == 1 ? Layout<1>::kSeg : Layout<2>::kSeg; }

int64_t wgmma_tiles(const Geometry& g) {
  return g.KH * ceil_div(g.KW, group_taps(g)) * g.groups * ceil_div(g.Cin_g, kCh) * ceil_div(g.Cout_g, kCh);
}

// The widest piece (16, 8 or 4 bytes) that divides every grad_output row start.
int go_unit(const at::Tensor& go, const Geometry& g) {
  const int64_t elem = go.element_size();
  const auto addr = reinterpret_cast<uintptr_t>(go.const_data_ptr());
  for (int u : {16, 8, 4}) {
    if ((g.Wout * elem) % u == 0 && addr % u == 0) return u;
  }
  return 0;
}

// Both operands channels_last (and not also NCHW-contiguous, as with one channel or one
// pixel): the in-place kernel reads them.
bool channels_last_pair(const at::Tensor& x, const at::Tensor& go) {
  return channels_last_only(x) && channels_last_only(go);
}

// The ring kernel's plan: kernel rows per block (kr; 0 where the kernel does not apply), the
// window (wr rows), the rows new per step (m) and the ring (slots, shared memory).
// Where it runs: channels_last operands, at least two kernel rows, columns of at least
// kStages - 1 rows (the ring-size bound above), the ring in shared memory, and no idle
// warpgroup unless both channel tiles are full (below). Kernel rows
// per block: up to 3 (2 with 4-tap groups: 128*KR threads x the accumulators must fit the
// register file at one block per SM), split as evenly as possible. Knob CONVT_BWD_GW_RING=0:
// never (the one-row kernel).
struct RingPlan {
  int kr = 0, wr = 0, m = 0, ring = 0, smem = 0;
};

bool ring_allowed() {
  static const bool on = !env_equals("CONVT_BWD_GW_RING", "0");
  return on;
}

RingPlan ring_plan(const at::Tensor& x, const at::Tensor& go, const Geometry& g) {
  RingPlan p;
  const bool cl = channels_last_pair(x, go);
  // channels_last: columns of at least kStages - 1 rows (the ring-size bound); NCHW: stride 1
  // along the height (one new row per step).
  if (!ring_allowed() || g.KH < 2 || (cl ? g.H < kStages - 1 : g.SH != 1)) return p;
  const int64_t kr_max = group_taps(g) <= 3 ? 3 : 2;
  const int64_t kr = ceil_div(g.KH, ceil_div(g.KH, kr_max));
  // An idle warpgroup (KH not a multiple of kr) multiplies for nothing. That paid only with
  // channels_last operands and full 64-channel tiles on both sides, where the one-row kernel
  // is bound by the L2. Measured (H100, bf16, 3 x 7 kernels: KH = 3 in blocks of 2 + 2):
  // channels_last kb1_65 (64 channels) step 3.62 -> 3.15 ms, kb1_78 (32 channels) 3.98 ->
  // 4.82 (run CN); NCHW kb1_65 3.21 -> 3.81 (run CO).
  if (g.KH % kr != 0 && (!cl || g.Cin_g < kCh || g.Cout_g < kCh)) return p;
  const int64_t wr = (kr - 1) * g.DH + 1;
  const int64_t m = cl ? std::min(g.SH, wr) : 1;
  const int64_t ring = cl ? 2 * wr + (kStages - 2) * m : wr + 1;
  int64_t smem;
  if (cl) {
    smem = g.SW == 1 ? RingLayoutCL<1>::kXBytes + ring * RingLayoutCL<1>::kRowBytes
                     : RingLayoutCL<2>::kXBytes + ring * RingLayoutCL<2>::kRowBytes;
  } else {
    smem = (g.SW == 1 ? kStages * Layout<1>::kStageBytes : kStages * Layout<2>::kStageBytes) + ring * kTBytes;
  }
  if (smem > kRingSmemMax) return p;
  p.kr = static_cast<int>(kr);
  p.wr = static_cast<int>(wr);
  p.m = static_cast<int>(m);
  p.ring = static_cast<int>(ring);
  p.smem = static_cast<int>(smem);
  return p;
}

// Blocks of the ring kernel per split: the one-row kernel's tiles with KH / kr row groups.
int64_t ring_tiles(const Geometry& g, int kr) { return wgmma_tiles(g) / g.KH * ceil_div(g.KH, kr); }

// Input columns per step: the 16-bit layouts' segment (seg_cols), or the TF32 kernels' tf32::kSeg.
template <typename T>
int64_t step_cols(const Geometry& g) {
  return std::is_same_v<T, float> ? int64_t(tf32::kSeg) : seg_cols(g);
}

// Grid and launch of every kernel here: the same tile decode, segments and splits (blocks:
// `tiles` x splits); the ring kernels take their plan's numbers after the common arguments.
template <typename T, int TT, typename Kernel, typename... Extra>
void launch_grid(Kernel kernel, int threads, int smem, int64_t tiles, const at::Tensor& x, const at::Tensor& go,
                 const Geometry& g, int64_t splits, const at::Tensor& ws, Extra... extra) {
  const int64_t segs = g.N * g.H * ceil_div(g.W, step_cols<T>(g));
  const int64_t chunk = ceil_div(segs, splits);
  const int kw_groups = static_cast<int>(ceil_div(g.KW, TT));
  const int tiles_m = static_cast<int>(ceil_div(g.Cin_g, kCh));
  const int tiles_n = static_cast<int>(ceil_div(g.Cout_g, kCh));
  C10_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  kernel<<<dim3(static_cast<unsigned>(tiles), static_cast<unsigned>(splits)), threads, smem,
           at::cuda::getCurrentCUDAStream()>>>(x.const_data_ptr<T>(), go.const_data_ptr<T>(),
                                               ws.mutable_data_ptr<float>(), g, tiles_m, tiles_n, kw_groups,
                                               chunk, extra...);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

// The ring kernels' kernel rows per block as a template argument: f(integral_constant<KR>),
// KR = 3 (tap groups of up to 3) or 2 (ring_plan's choice).
template <int TT, typename F>
void with_rows_per_block(int kr, F&& f) {
  if constexpr (TT <= 3) {
    if (kr == 3) return f(std::integral_constant<int, 3>{});
  }
  TORCH_CHECK(kr == 2, "convt: grad_weight ring kernel: unexpected rows per block ", kr);
  f(std::integral_constant<int, 2>{});
}

template <typename T, int TT, int kUnit, int kPlanes>
void launch(const at::Tensor& x, const at::Tensor& go, const Geometry& g, int64_t splits,
            const at::Tensor& ws) {
  const RingPlan rp = ring_plan(x, go, g);
  if (rp.kr > 0) {
    return with_rows_per_block<TT>(rp.kr, [&](auto kr) {
      constexpr int KR = decltype(kr)::value;
      launch_grid<T, TT>(grad_weight_wgmma_ring_kernel<T, TT, kUnit, kPlanes, KR>, 128 * KR, rp.smem,
                         ring_tiles(g, KR), x, go, g, splits, ws, rp.wr, rp.ring);
    });
  }
  launch_grid<T, TT>(grad_weight_wgmma_kernel<T, TT, kUnit, kPlanes>, kThreads, Layout<kPlanes>::kSmemBytes,
                     wgmma_tiles(g), x, go, g, splits, ws);
}

template <typename T, int TT, int kPlanes>
void launch_by_unit(const at::Tensor& x, const at::Tensor& go, const Geometry& g, int64_t splits,
                    const at::Tensor& ws) {
  switch (go_unit(go, g)) {
    case 16: return launch<T, TT, 16, kPlanes>(x, go, g, splits, ws);
    case 8: return launch<T, TT, 8, kPlanes>(x, go, g, splits, ws);
    default: return launch<T, TT, 4, kPlanes>(x, go, g, splits, ws);
  }
}

template <typename T, int TT, int kPlanes>
void launch_by_layout(const at::Tensor& x, const at::Tensor& go, const Geometry& g, int64_t splits,
                      const at::Tensor& ws) {
  if (channels_last_pair(x, go)) {
    const RingPlan rp = ring_plan(x, go, g);
    if (rp.kr > 0) {
      return with_rows_per_block<TT>(rp.kr, [&](auto kr) {
        constexpr int KR = decltype(kr)::value;
        launch_grid<T, TT>(grad_weight_wgmma_cl_ring_kernel<T, TT, kPlanes, KR>, 128 * KR, rp.smem,
                           ring_tiles(g, KR), x, go, g, splits, ws, rp.wr, rp.m, rp.ring);
      });
    }
    return launch_grid<T, TT>(grad_weight_wgmma_cl_kernel<T, TT, kPlanes>, kThreads, LayoutCL<kPlanes>::kSmemBytes,
                              wgmma_tiles(g), x, go, g, splits, ws);
  }
  launch_by_unit<T, TT, kPlanes>(x, go, g, splits, ws);
}

template <typename T, int TT>
void launch_by_planes(const at::Tensor& x, const at::Tensor& go, const Geometry& g, int64_t splits,
                      const at::Tensor& ws) {
  if (g.SW == 1) return launch_by_layout<T, TT, 1>(x, go, g, splits, ws);
  return launch_by_layout<T, TT, 2>(x, go, g, splits, ws);
}

template <typename T>
void launch_by_taps(const at::Tensor& x, const at::Tensor& go, const Geometry& g, int64_t splits,
                    const at::Tensor& ws) {
  switch (group_taps(g)) {
    case 1: return launch_by_planes<T, 1>(x, go, g, splits, ws);
    case 2: return launch_by_planes<T, 2>(x, go, g, splits, ws);
    case 3: return launch_by_planes<T, 3>(x, go, g, splits, ws);
    default: return launch_by_planes<T, 4>(x, go, g, splits, ws);
  }
}

// The TF32 ring kernel's plan (kr = 0: the one-row kernel): kernel rows per block (3 with tap
// groups of up to 3, else 2: 128 * KR threads of accumulators and fragments must fit the register
// file at one block per SM), no idle warpgroup (KH a multiple of kr), NCHW stride 1 along the
// height. Knob CONVT_BWD_GW_TF32_RING=0: never. Read once.
struct Tf32RingPlan {
  int kr = 0, wr = 0, ring = 0, smem = 0;
};

Tf32RingPlan tf32_ring_plan(const Geometry& g) {
  static const bool off = env_equals("CONVT_BWD_GW_TF32_RING", "0");
  Tf32RingPlan p;
  if (off || g.KH < 2 || g.SH != 1) return p;
  const int64_t kr_max = group_taps(g) <= 3 ? 3 : 2;
  const int64_t kr = ceil_div(g.KH, ceil_div(g.KH, kr_max));
  if (g.KH % kr != 0) return p;
  const int64_t wr = (kr - 1) * g.DH + 1;
  const int64_t ring = wr + tf32::kStages - 2;
  const int64_t smem = tf32::kStages * tf32::kXBytes + ring * tf32::kRawBytes;
  if (smem > kRingSmemMax) return p;
  p.kr = static_cast<int>(kr), p.wr = static_cast<int>(wr), p.ring = static_cast<int>(ring), p.smem = static_cast<int>(smem);
  return p;
}

// Whether the TF32 ring kernel (plan rp) can sum grad_bias (its kBias form): one kernel-row group
// (KH == kr) and one tap group (KW <= TT), so that the ring's rows and the segments' own columns
// partition grad_output; the rows staged over a column reach its last row (Hout - 1 <= H - 1 - PH +
// (kr - 1) DH: the last step's new row) and the last segment's staged row reaches its last column
// (at the largest lead of the piece width); the first segment starts at or before column 0.
bool tf32_ring_bias_ok(const Geometry& g, const Tf32RingPlan& rp, int64_t taps_per_group, int unit_elems) {
  if (rp.kr == 0 || g.KH != rp.kr || g.KW > taps_per_group) return false;
  if (g.Hout - 1 > g.H - 1 - g.PH + (rp.kr - 1) * g.DH) return false;
  const ColumnTapGroup c = column_tap_group(0, static_cast<int>(taps_per_group), g.KW, 1, g.PW, g.DW);
  const int64_t c0_last = (ceil_div(g.W, int64_t(tf32::kSeg)) - 1) * tf32::kSeg + c.qmin;
  return c.qmin <= 0 && g.Wout <= c0_last - (unit_elems - 1) + tf32::kCols;
}

// float (TF32): the ring or one-row kernel above, by taps per block and grad_output piece width.
// grad_bias defined: the ring kernel sums it where tf32_ring_bias_ok; returns whether it did.
template <int TT>
bool launch_tf32_by_unit(const at::Tensor& x, const at::Tensor& go, const Geometry& g, int64_t splits,
                         const at::Tensor& ws, const at::Tensor& grad_bias) {
  const Tf32RingPlan rp = tf32_ring_plan(g);
  const int unit = go_unit(go, g);
  const bool bias = grad_bias.defined() && tf32_ring_bias_ok(g, rp, TT, unit / 4);
  at::Tensor bias_ws;  // [split][Cout]
  if (bias) bias_ws = at::empty({splits, g.Cout}, go.options());
  auto by_unit = [&](auto unit_tag) {
    constexpr int kUnit = decltype(unit_tag)::value;
    if (rp.kr > 0) {
      return with_rows_per_block<TT>(rp.kr, [&](auto kr) {
        constexpr int KR = decltype(kr)::value;
        if (bias) {
          launch_grid<float, TT>(grad_weight_wgmma_tf32_ring_kernel<TT, kUnit, KR, true>, 128 * KR, rp.smem,
                                 ring_tiles(g, KR), x, go, g, splits, ws, rp.wr, rp.ring, bias_ws.mutable_data_ptr<float>());
        } else {
          launch_grid<float, TT>(grad_weight_wgmma_tf32_ring_kernel<TT, kUnit, KR>, 128 * KR, rp.smem,
                                 ring_tiles(g, KR), x, go, g, splits, ws, rp.wr, rp.ring, static_cast<float*>(nullptr));
        }
      });
    }
    launch_grid<float, TT>(grad_weight_wgmma_tf32_kernel<TT, kUnit>, kThreads, tf32::kSmemBytes, wgmma_tiles(g), x, go,
                           g, splits, ws);
  };
  switch (unit) {
    case 16: by_unit(std::integral_constant<int, 16>{}); break;
    case 8: by_unit(std::integral_constant<int, 8>{}); break;
    default: by_unit(std::integral_constant<int, 4>{}); break;
  }
  if (bias) grad_bias_reduce(bias_ws, g, splits, grad_bias);
  return bias;
}

bool launch_tf32(const at::Tensor& x, const at::Tensor& go, const Geometry& g, int64_t splits, const at::Tensor& ws,
                 const at::Tensor& grad_bias) {
  switch (group_taps(g)) {
    case 1: return launch_tf32_by_unit<1>(x, go, g, splits, ws, grad_bias);
    case 2: return launch_tf32_by_unit<2>(x, go, g, splits, ws, grad_bias);
    case 3: return launch_tf32_by_unit<3>(x, go, g, splits, ws, grad_bias);
    default: return launch_tf32_by_unit<4>(x, go, g, splits, ws, grad_bias);
  }
}

// float on the TF32 kernel: with the convolution's TF32 flag on (strict float32 keeps its own
// kernels), NCHW, stride 1 along the width, whole 16-byte x pieces, every tap group's staged
// columns within tf32::kCols, and (the rule) tap groups of 4, or any where the ring kernel
// runs. Why: the one-row kernel's step loads (the x segment and one raw grad_output row, 20 KB)
// serve TT taps, and it is bound by them, not by its MMAs. H100 runs TU / TV, grad_weight kernel
// us, rows kernel -> one-row: kb1_65 (k3x7: groups of 4 + 3, TT = 4) 3219 -> 2588, training step
// 6457 -> 5935; with TT = 3 it loses: kb1_69 4794 -> 5285, kb1_57 5228 -> 5533, kb2_10 5135 ->
// 6025. The ring kernel stages each load once for KR kernel rows and wins at TT = 3 (runs TY-UA,
// rows -> ring): kb1_69 4845 -> 3949, kb1_57 5253 -> 4395, kb2_10 4932 -> 3932. Knob
// CONVT_BWD_GW_TF32: 0 never (the rows kernels, as before), all wherever it runs. Read once.
bool tf32_supported(const at::Tensor& x, const at::Tensor& go, const Geometry& g) {
  static const KnobMode mode = env_mode("CONVT_BWD_GW_TF32");
  if (mode == KnobMode::kNever || !allow_tf32_conv() || g.SW != 1) return false;
  if (mode == KnobMode::kRule && group_taps(g) != 4 && tf32_ring_plan(g).kr == 0) return false;
  if (!x.is_contiguous() || !go.is_contiguous() || channels_last_pair(x, go)) return false;
  if (g.W % 4 != 0 || reinterpret_cast<uintptr_t>(x.const_data_ptr()) % 16 != 0) return false;
  const int unit = go_unit(go, g);
  if (unit == 0) return false;
  const int64_t max_lead = unit / 4 - 1;
  const int64_t tt = group_taps(g);
  for (int64_t kj0 = 0; kj0 < g.KW; kj0 += tt) {
    const ColumnTapGroup c = column_tap_group(kj0, tt, g.KW, 1, g.PW, g.DW);
    if (max_lead + c.halo + tf32::kSeg > tf32::kCols) return false;
  }
  return true;
}

}  // namespace

bool grad_weight_wgmma_supported(const at::Tensor& x, const at::Tensor& go, const Geometry& g) {
  const bool sixteen_bit = x.scalar_type() == at::kHalf || x.scalar_type() == at::kBFloat16;
  const bool tf32 = x.scalar_type() == at::kFloat && go.scalar_type() == at::kFloat;
  if (!(sixteen_bit || tf32) || !fwd::wgmma_available(x) || (g.SW != 1 && g.SW != 2)) return false;
  // 32-bit column / row arithmetic inside the kernels; 64-bit offsets.
  const int64_t big = int64_t(1) << 30;
  const bool fits = g.H < big && g.W < big && g.Hout < big && g.Wout + 2 * kCols < big && g.PW < big &&
                    g.KW * g.DW < big && wgmma_tiles(g) < (int64_t(1) << 31);
  if (tf32) return fits && tf32_supported(x, go, g);  // (its layout and staged-column rules)
  const auto aligned16 = [](const at::Tensor& t) {
    return reinterpret_cast<uintptr_t>(t.const_data_ptr()) % 16 == 0;
  };
  int64_t max_lead = 0;  // staged columns before the first one, per plane
  if (channels_last_pair(x, go)) {
    // Whole 16-byte channel pieces (channel groups start on them too).
    if (g.Cin_g % 8 != 0 || g.Cout_g % 8 != 0 || !aligned16(x) || !aligned16(go)) return false;
  } else {
    if (!x.is_contiguous() || !go.is_contiguous()) return false;
    // x rows of whole 16-byte pieces; grad_output rows of whole 4-byte pieces at least.
    if (g.W % 8 != 0 || !aligned16(x)) return false;
    const int unit = go_unit(go, g);
    if (unit == 0) return false;
    // The lead is below one piece; at stride 2 an even count, so half of it per plane.
    const int64_t unit_elems = unit / x.element_size();
    max_lead = g.SW == 1 ? unit_elems - 1 : (unit_elems - 2) / 2;
  }
  // Every group's staged columns fit: per plane, the lead + halo + the segment.
  const int64_t tt = group_taps(g);
  for (int64_t kj0 = 0; kj0 < g.KW; kj0 += tt) {
    const ColumnTapGroup c = column_tap_group(kj0, tt, g.KW, g.SW, g.PW, g.DW);
    if (c.planes > g.SW || max_lead + c.halo + seg_cols(g) > kCols / g.SW) return false;
  }
  return fits;
}

// Segments per split: ~4 waves of two blocks per SM (the ring kernel: two waves of one
// block per SM), each split at least 8 segments, a workspace of at most 256 MiB.
int64_t grad_weight_wgmma_splits(const at::Tensor& x, const at::Tensor& go, const Geometry& g) {
  const bool tf32 = x.scalar_type() == at::kFloat;
  const int64_t segs = g.N * g.H * ceil_div(g.W, tf32 ? step_cols<float>(g) : seg_cols(g));
  const int64_t E = g.KH * g.KW * g.Cin * g.Cout_g;
  RingPlan rp = tf32 ? RingPlan{} : ring_plan(x, go, g);
  if (tf32) rp.kr = tf32_ring_plan(g).kr;
  int64_t s = rp.kr > 0 ? ceil_div(int64_t(sm_count()) * 2, ring_tiles(g, rp.kr))
                        : ceil_div(int64_t(sm_count()) * 2 * 4, wgmma_tiles(g));
  s = std::min(s, ceil_div(segs, 8));
  s = std::min<int64_t>(s, 65535);
  s = std::min(s, std::max<int64_t>(1, (int64_t(256) << 20) / (4 * E)));
  return std::max<int64_t>(s, 1);
}

bool grad_weight_wgmma(const at::Tensor& x, const at::Tensor& go, const Geometry& g,
                       int64_t splits, const at::Tensor& ws, const at::Tensor& grad_bias) {
  TORCH_CHECK(grad_weight_wgmma_supported(x, go, g), "convt: grad_weight_wgmma: unsupported problem");
  if (x.scalar_type() == at::kFloat) return launch_tf32(x, go, g, splits, ws, grad_bias);
  if (x.scalar_type() == at::kBFloat16) {
    launch_by_taps<at::BFloat16>(x, go, g, splits, ws);
  } else {
    launch_by_taps<at::Half>(x, go, g, splits, ws);
  }
  return false;
}

}  // namespace bwd
}  // namespace convt
