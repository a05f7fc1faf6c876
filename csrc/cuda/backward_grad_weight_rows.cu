// grad_weight of conv_transpose2d by input-row segments: the "rows" kernels.
//
//   gw[ci, co_g, ki, kj] = sum_{n, ih, iw} x[n, ci, ih, iw] * go[n, co, ih*SH-PH+ki*DH, iw*SW-PW+kj*DW]
//
// The tile kernel (backward_grad_weight.cu) loads both operands once per tap group of 1-4
// taps, element by element, and is bound by those loads (docs/perf-notes-backward.md). Here a
// block owns one kernel row ki and a group of up to 4 consecutive kj. One step of its
// reduction is a segment of kTW = 32 columns of one input row (n, ih): it stages x[ci, ih,
// iw0 .. iw0+31] once, and the grad_output columns that the group's taps read in output row
// oh = ih*SH - PH + ki*DH once (the segment plus a halo of (taps-1)*DW/SW columns, per
// column residue plane at stride > 1: ColumnTapGroup in geometry.h). Every tap's MMAs then
// read a shifted view of the staged grad_output. Loads per step: BM + planes*CT*(1 + halo/32)
// elements per pixel for all taps of the group, against BM + TT*CT per tap group before.
//
// Tile: BM input channels x (TT taps x CT output channels), 256 threads as 2 x 4 warps,
// mma.sync: TF32 m16n8k8 for float (operands rounded to TF32 when staged), m16n8k16 for
// bf16 / fp16 (16-bit operands as they are; accumulation in fp32 either way).
// 16-bit MMAs read K in pairs (one 32-bit register), so a view at an odd shift would be
// misaligned: each plane is staged twice, as is and shifted by one column.
//
// Two variants, chosen per launch (rows_launch): the cp.async kernel (4 stages; 3 with two
// residue planes) where x rows are whole 16-byte units and the stride along the width is 1
// (any dtype) or > 1 (float); the element-load kernel (one step prefetched in registers)
// everywhere else the geometry fits (grad_weight_rows_supported). Measurements of both:
// docs/perf-notes-backward.md, v8.
//
// Split-K over segments with partial tiles in ws[split][tap][ci][co_g] and the fixed-order
// reduce of backward_grad_weight.cu: no atomics, bit-identical run to run.
#include "backward_common.cuh"
#include "backward_grad_weight_rows.cuh"
#include "backward_tile.cuh"

#include <ATen/Dispatch.h>

#include <algorithm>
#include <type_traits>

namespace convt {
namespace bwd {

using namespace rows;

namespace {

constexpr int kHaloPasses = 2;                           // loads per warp row-set for the halo

// Shared-memory geometry per operand width. Row pitches are 4 (mod 8) 32-bit words, so a
// fragment load (8 rows x 4 consecutive words) touches 32 distinct banks at any shift.
template <bool k16>
struct RowsSmem {
  static constexpr int kLDA = k16 ? 20 : 36;  // words per x row (32 columns + pad)
  static constexpr int kLDB = k16 ? 36 : 68;  // words per staged grad_output row (<= 64 columns)
  static constexpr int kMaxSpan = 64;         // staged columns per plane: kTW + halo
  static_assert(kMaxSpan <= (k16 ? 2 : 1) * kLDB, "a staged row holds kMaxSpan columns");
  static constexpr int kCopies = k16 ? 2 : 1; // 16-bit: the plane, and the plane shifted by one
  static constexpr int kMmaK = k16 ? 16 : 8;  // K of one MMA
};

// Raw 16-bit bits of an element (bf16 / fp16 stay as they are).
template <typename T>
__device__ __forceinline__ uint16_t bits16(const T* p) {
  return *reinterpret_cast<const uint16_t*>(p);
}

template <typename T, int BM, int CT, int TT>
__global__ __launch_bounds__(kThreads) void grad_weight_rows_kernel(const T* __restrict__ x,
                                                                    const T* __restrict__ go,
                                                                    float* __restrict__ ws,
                                                                    Geometry g, int tiles_m,
                                                                    int tiles_n, int kw_groups,
                                                                    int64_t chunk) {
  constexpr bool k16 = !std::is_same_v<T, float>;
  using Sm = RowsSmem<k16>;
  using Reg = std::conditional_t<k16, uint16_t, float>;  // a prefetched element
  constexpr int BN = TT * CT;
  constexpr int kRows = kThreads / 32;          // warps: each loads rows w, w + 8, ...
  constexpr int kAPer = BM / kRows, kBPer = CT / kRows;
  constexpr int MI = BM / 32, NI = BN / 32;     // m16 / n8 fragments per warp (2 x 4 warps)
  static_assert(BM % 32 == 0 && CT % 32 == 0 && TT >= 1 && TT <= kMaxTaps, "tile shape");

  __shared__ __align__(16) uint32_t As[BM * Sm::kLDA];
  __shared__ __align__(16) uint32_t Bs[kMaxPlanes * Sm::kCopies * CT * Sm::kLDB];

  const int t = threadIdx.x, lane = t & 31, warp = t >> 5;

  const RowsBlock blk(g, BM, CT, TT, tiles_m, tiles_n, kw_groups, chunk);
  const int group = blk.group, ki = blk.ki, kj0 = blk.kj0, ci0 = blk.ci0, co0 = blk.co0;
  const int segs_w = blk.segs_w;
  const int64_t s_begin = blk.s_begin, s_end = blk.s_end;
  const ColumnTapGroup& cg = blk.cg;

  const int Cin_g = static_cast<int>(g.Cin_g), Cout_g = static_cast<int>(g.Cout_g);
  const int H = static_cast<int>(g.H), W = static_cast<int>(g.W);
  const int Hout = static_cast<int>(g.Hout), Wout = static_cast<int>(g.Wout);
  const int SW = static_cast<int>(g.SW);
  const int64_t HW = g.H * g.W, HWo = g.Hout * g.Wout;

  // ---- loader bookkeeping (fixed for the block) ----
  // x: lane = column, rows warp + 8j. grad_output: lane = column c < 32, rows warp + 8j,
  // per plane; the halo columns 32 .. span-1 of this warp's rows are packed into
  // kHaloPasses loads: element e = lane + 32*pass is row warp + 8*(e / halo), column
  // 32 + e % halo.
  const int a_rows = (Cin_g - ci0 - warp + kRows - 1) / kRows;   // valid j of x rows
  const int b_rows = (Cout_g - co0 - warp + kRows - 1) / kRows;  // valid j of go rows
  const int halo_rows = min(b_rows, kBPer);
  int halo_j[kHaloPasses], halo_c[kHaloPasses];
#pragma unroll
  for (int p = 0; p < kHaloPasses; ++p) {
    const int e = lane + 32 * p;
    const bool ok = cg.halo > 0 && e < cg.halo * kBPer;
    halo_j[p] = ok ? e / cg.halo : kBPer;  // kBPer: no element
    halo_c[p] = ok ? kTW + e % cg.halo : 0;
  }
  const int64_t x_ch = static_cast<int64_t>(group) * Cin_g + ci0 + warp;
  const int64_t go_ch = static_cast<int64_t>(group) * Cout_g + co0 + warp;

  Reg a_reg[kAPer], b_reg[kMaxPlanes][kBPer + kHaloPasses];

  auto load = [&](int n, int ih, int iw0) {
    const T* xs = x + ((static_cast<int64_t>(n) * g.Cin + x_ch) * H + ih) * W + iw0 + lane;
    const bool col_ok = iw0 + lane < W;
#pragma unroll
    for (int j = 0; j < kAPer; ++j) {
      if constexpr (k16) {
        a_reg[j] = (col_ok && j < a_rows) ? bits16(xs) : uint16_t(0);
      } else {
        a_reg[j] = (col_ok && j < a_rows) ? *xs : 0.f;
      }
      xs += kRows * HW;
    }
    const int oh = ih * static_cast<int>(g.SH) - static_cast<int>(g.PH) + ki * static_cast<int>(g.DH);
    const bool row_ok = oh >= 0 && oh < Hout;
    const T* go_row = go + ((static_cast<int64_t>(n) * g.Cout + go_ch) * Hout + oh) * Wout;
#pragma unroll
    for (int p = 0; p < kMaxPlanes; ++p) {
      if (p >= cg.planes) break;
      // Plane column c is output column (iw0 + qmin + c) * SW + residue.
      const int col0 = (iw0 + static_cast<int>(cg.qmin)) * SW + cg.residue[p];
      const int col = col0 + lane * SW;
      const bool ok = row_ok && col >= 0 && col < Wout;
      const T* gs = go_row + col;
#pragma unroll
      for (int j = 0; j < kBPer; ++j) {
        if constexpr (k16) {
          b_reg[p][j] = (ok && j < b_rows) ? bits16(gs) : uint16_t(0);
        } else {
          b_reg[p][j] = (ok && j < b_rows) ? *gs : 0.f;
        }
        gs += kRows * HWo;
      }
#pragma unroll
      for (int h = 0; h < kHaloPasses; ++h) {
        const int hcol = col0 + halo_c[h] * SW;
        const bool hok = row_ok && halo_j[h] < halo_rows && hcol >= 0 && hcol < Wout;
        const T* hs = go_row + static_cast<int64_t>(halo_j[h]) * kRows * HWo + hcol;
        if constexpr (k16) {
          b_reg[p][kBPer + h] = hok ? bits16(hs) : uint16_t(0);
        } else {
          b_reg[p][kBPer + h] = hok ? *hs : 0.f;
        }
      }
    }
  };

  auto store = [&]() {
    if constexpr (k16) {
      uint16_t* Ah = reinterpret_cast<uint16_t*>(As);
      uint16_t* Bh = reinterpret_cast<uint16_t*>(Bs);
      constexpr int LDA = 2 * Sm::kLDA, LDB = 2 * Sm::kLDB, kPlane = 2 * CT * LDB;
#pragma unroll
      for (int j = 0; j < kAPer; ++j) Ah[(warp + kRows * j) * LDA + lane] = a_reg[j];
#pragma unroll
      for (int p = 0; p < kMaxPlanes; ++p) {
        if (p >= cg.planes) break;
        // Copy 0: column c at c. Copy 1: column c at c - 1 (pairs start at odd columns).
        uint16_t* even = Bh + p * kPlane;
        uint16_t* odd = even + CT * LDB;
#pragma unroll
        for (int j = 0; j < kBPer; ++j) {
          const int at = (warp + kRows * j) * LDB + lane;
          even[at] = b_reg[p][j];
          if (lane > 0) odd[at - 1] = b_reg[p][j];
        }
#pragma unroll
        for (int h = 0; h < kHaloPasses; ++h) {
          if (halo_j[h] < kBPer) {
            const int at = (warp + kRows * halo_j[h]) * LDB + halo_c[h];
            even[at] = b_reg[p][kBPer + h];
            odd[at - 1] = b_reg[p][kBPer + h];
          }
        }
      }
    } else {
      constexpr int LDA = Sm::kLDA, LDB = Sm::kLDB, kPlane = CT * LDB;
#pragma unroll
      for (int j = 0; j < kAPer; ++j) As[(warp + kRows * j) * LDA + lane] = tf32_bits(a_reg[j]);
#pragma unroll
      for (int p = 0; p < kMaxPlanes; ++p) {
        if (p >= cg.planes) break;
        uint32_t* plane = Bs + p * kPlane;
#pragma unroll
        for (int j = 0; j < kBPer; ++j) plane[(warp + kRows * j) * LDB + lane] = tf32_bits(b_reg[p][j]);
#pragma unroll
        for (int h = 0; h < kHaloPasses; ++h) {
          if (halo_j[h] < kBPer) {
            plane[(warp + kRows * halo_j[h]) * LDB + halo_c[h]] = tf32_bits(b_reg[p][kBPer + h]);
          }
        }
      }
    }
  };

  // ---- MMA bookkeeping: warp tile (BM/2) x (BN/4) ----
  const int gq = lane >> 2, q = lane & 3;
  const int m0 = (warp & 1) * (BM / 2), n0 = (warp >> 1) * (BN / 4);
  const uint32_t* a_frag = As + (m0 + gq) * Sm::kLDA + q;
  const uint32_t* b_frag[NI];  // column block ni: tap, output channel, plane view
#pragma unroll
  for (int ni = 0; ni < NI; ++ni) {
    const int col = n0 + ni * 8;
    const int tap = col / CT, co = col % CT + gq;
    int plane, shift;
    tap_view<TT>(cg, tap, plane, shift);
    if constexpr (k16) {
      const int copy = shift & 1;  // odd shift: the copy shifted by one, at shift - 1
      b_frag[ni] = Bs + ((plane * 2 + copy) * CT + co) * Sm::kLDB + (shift >> 1) + q;
    } else {
      b_frag[ni] = Bs + (plane * CT + co) * Sm::kLDB + shift + q;
    }
  }

  float acc[MI][NI][4];
#pragma unroll
  for (int mi = 0; mi < MI; ++mi)
#pragma unroll
    for (int ni = 0; ni < NI; ++ni)
#pragma unroll
      for (int c = 0; c < 4; ++c) acc[mi][ni][c] = 0.f;

  auto compute = [&]() {
    // One MMA K step is kk words into a row: 8 fp32 columns, or 16 16-bit columns (8 words).
    constexpr int kWordsPerK = 8;
#pragma unroll
    for (int kk = 0; kk < kTW / Sm::kMmaK; ++kk) {
      const int kw = kk * kWordsPerK;
      uint32_t a[MI][4], b[NI][2];
#pragma unroll
      for (int mi = 0; mi < MI; ++mi) {
        const uint32_t* ap = a_frag + mi * 16 * Sm::kLDA + kw;
        a[mi][0] = ap[0];
        a[mi][1] = ap[8 * Sm::kLDA];
        a[mi][2] = ap[4];
        a[mi][3] = ap[8 * Sm::kLDA + 4];
      }
#pragma unroll
      for (int ni = 0; ni < NI; ++ni) {
        b[ni][0] = b_frag[ni][kw];
        b[ni][1] = b_frag[ni][kw + 4];
      }
      mma_tile<T>(acc, a, b);
    }
  };

  // ---- main loop: register prefetch of step s+1 while step s multiplies ----
  if (s_begin < s_end) {
    SegmentWalk walk(s_begin, H, segs_w);
    load(walk.n, walk.ih, walk.sw * kTW);
    for (int64_t s = s_begin; s < s_end; ++s) {
      store();
      __syncthreads();
      walk.next(H, segs_w);
      if (s + 1 < s_end) load(walk.n, walk.ih, walk.sw * kTW);
      compute();
      __syncthreads();
    }
  }

  store_partial<MI, NI, CT>(acc, ws, g, group, ci0, co0, ki, kj0, cg.taps, m0, n0);
}


// ---- the async variant: stride 1 along the width, cp.async pipeline --------------------
//
// The element kernel above keeps one step of loads in flight in registers; with one block
// per SM (its 64 x 192 tile holds ~170 registers a thread) the loads' latency is not
// covered (H100 run AB: ~1900 cycles a step on kb1_57 against ~600 of issue). Here the
// operands go global -> shared with cp.async, kStages steps in flight, in units of 16, 8 or 4
// bytes (the widest that the rows' alignment allows; a unit is either wholly inside a row or
// wholly outside, so the zero fill is per unit). grad_output is staged from the unit boundary
// below the group's first column, which adds `lead` (< one unit) to every tap's shift.
// TF32 rounding happens at fragment load (one integer add per register); 16-bit odd shifts
// read a copy of the plane shifted by one column, built in shared memory once per step.
// At stride > 1 along the width (kPlanes = 2, float only: cp.async moves 4 bytes or more),
// each column residue plane is gathered element by element (4-byte copies, every SW-th
// column), and the halo columns of a warp's 8 rows are packed into one copy per plane.
template <bool k16, int kPlanes>
struct AsyncSmem {
  static constexpr int kLDA = k16 ? 20 : 36;          // words per x row: 32 columns + pad
  static constexpr int kLDB = k16 ? 28 : 52;          // words per grad_output row
  static constexpr int kColsB = k16 ? 2 * kLDB : kLDB;  // columns a staged row holds
  static constexpr int kStages = kPlanes == 1 ? 4 : 3;  // 2 blocks per SM in 227 KiB
  static constexpr int kMmaK = k16 ? 16 : 8;
  static_assert(kLDA % 8 == 4 && kLDB % 8 == 4, "fragment loads conflict-free at any shift");
  static_assert(kPlanes == 1 || !k16, "residue planes are gathered in 4-byte copies");
};
constexpr int kMaxStridedHalo = 4;  // kPlanes = 2: halo columns of 8 rows in one warp copy
static_assert(kTW + kMaxStridedHalo <= AsyncSmem<false, 2>::kColsB, "a plane row holds its halo");

// Two blocks per SM (128 registers) for up to 3 taps per block: 16 warps hide more of the
// MMA and barrier latencies than 8 (ncu, runs AD / AE: tensor pipe 29% busy in the element
// kernel at 1 block per SM, 41% here at 2).
//
// kBias (float, kPlanes = 2; rows_bias_ok): the blocks of channel tile 0 also sum grad_bias from
// their staged grad_output rows, each element once: the row where this block's kernel row ki owns
// the output row, the columns whose owning tap (geometry.h owning_tap) is in this block's group
// and reaches them from this segment's own input columns. A thread sums columns sum_c0 +
// kSumLanes * m of one channel row; the owned columns are a bit mask per segment position,
// recomputed where the walk changes segment (every H steps). Partials -> bias_ws[split][ki][kjg]
// [Cout] (zeros where a block owns nothing), then grad_bias_reduce. Why: grad_bias's pass of its
// own read all of grad_output again (float32 NCHW kb2_2: 734 us of a 6.88 ms step, run UN).
template <typename T, int BM, int CT, int TT, int kPlanes, bool kBias = false>
__global__ __launch_bounds__(kThreads, TT <= 3 ? 2 : 1) void grad_weight_rows_async_kernel(
    const T* __restrict__ x, const T* __restrict__ go, float* __restrict__ ws, Geometry g,
    int tiles_m, int tiles_n, int kw_groups, int64_t chunk, int go_unit, float* __restrict__ bias_ws) {
  constexpr bool k16 = !std::is_same_v<T, float>;
  using Sm = AsyncSmem<k16, kPlanes>;
  constexpr int kSize = static_cast<int>(sizeof(T));
  constexpr int BN = TT * CT;
  constexpr int MI = BM / 32, NI = BN / 32;
  constexpr int kAStage = BM * Sm::kLDA, kBPlane = CT * Sm::kLDB, kBStage = kPlanes * kBPlane;  // words
  static_assert(BM % 32 == 0 && CT % 32 == 0 && TT >= 1 && TT <= kMaxTaps, "tile shape");

  extern __shared__ __align__(16) uint32_t smem[];
  uint32_t* As = smem;                           // [kStages][BM][kLDA]
  uint32_t* Bs = As + Sm::kStages * kAStage;     // [kStages][kPlanes][CT][kLDB]
  uint32_t* Bodd = Bs + Sm::kStages * kBStage;   // [CT][kLDB] (16-bit only)

  const int t = threadIdx.x, lane = t & 31, warp = t >> 5;
  const RowsBlock blk(g, BM, CT, TT, tiles_m, tiles_n, kw_groups, chunk);
  const int group = blk.group, ki = blk.ki, kj0 = blk.kj0, ci0 = blk.ci0, co0 = blk.co0;
  const int segs_w = blk.segs_w;
  const int64_t s_begin = blk.s_begin, s_end = blk.s_end;
  const ColumnTapGroup& cg = blk.cg;

  const int Cin_g = static_cast<int>(g.Cin_g), Cout_g = static_cast<int>(g.Cout_g);
  const int H = static_cast<int>(g.H), W = static_cast<int>(g.W);
  const int Hout = static_cast<int>(g.Hout), Wout = static_cast<int>(g.Wout);
  const int SW = static_cast<int>(g.SW);

  // Copy bookkeeping, fixed for the block so that a step's copies are a pointer add and a
  // cp.async each (the first version recomputed every address and ran 3x the element
  // kernel's instructions: H100 run AD, ncu).
  //  x: 16-byte units, 8 per 32-column fp32 row (4 for 16-bit); lane -> (row within the
  //     warp's pass, unit), kXPasses passes of 8 * kXRowsPerPass rows.
  //  grad_output: go_unit-byte units from column iw0 + qmin - lead, lane = unit (gu <= 32),
  //     rows warp + 8j.
  constexpr int kXUnits = kTW * kSize / 16;                // per row
  constexpr int kXRowsPerPass = 32 / kXUnits;              // per warp
  constexpr int kXPasses = (BM + 8 * kXRowsPerPass - 1) / (8 * kXRowsPerPass);  // 16-bit, BM 32: rows >= BM idle
  constexpr int kBRows = CT / 8;
  const int x_r = warp * kXRowsPerPass + lane / kXUnits;  // + 8 * kXRowsPerPass * pass
  const int x_u = lane % kXUnits;
  const int go_elems = kPlanes == 1 ? go_unit / kSize : 1;
  const int lead = static_cast<int>(cg.qmin - floor_div<int64_t>(cg.qmin, go_elems) * go_elems);
  const int gu = (lead + kTW + cg.halo + go_elems - 1) / go_elems;
  const int64_t HW = g.H * g.W, HWo = g.Hout * g.Wout;
  // Offsets from the step's base pointers (image n, channel group's first, row ih / oh).
  const int64_t x_off = static_cast<int64_t>(x_r) * HW + x_u * (16 / kSize);
  const int64_t x_pass = int64_t(8 * kXRowsPerPass) * HW;
  const int64_t go_off = static_cast<int64_t>(warp) * HWo + lane * go_elems;
  const int64_t go_row_step = 8 * HWo;
  const uint32_t a_st_off = x_r * Sm::kLDA + x_u * 4;                  // words
  const uint32_t b_st_off = warp * Sm::kLDB + lane * (go_unit / 4);     // words
  const bool lane_copies = lane < gu;
  // Valid rows: x pass p holds channel ci0 + x_r + 8*kXRowsPerPass*p; go row j channel
  // co0 + warp + 8j.
  const int x_rows_ok = (Cin_g - ci0 - x_r + 8 * kXRowsPerPass - 1) / (8 * kXRowsPerPass);
  const int b_rows_ok = (Cout_g - co0 - warp + 7) / 8;
  const T* x_base = x + (static_cast<int64_t>(group) * Cin_g + ci0) * HW;
  const T* go_base = go + (static_cast<int64_t>(group) * Cout_g + co0) * HWo;
  // kPlanes = 2: lane = plane column c < 32 of rows warp + 8j; the halo columns 32 ..
  // 32 + halo - 1 of the warp's 8 rows go in one copy, lane -> (row h_j, column h_c).
  const bool halo_lane = lane < cg.halo * kBRows;
  const int h_j = halo_lane ? lane / max(cg.halo, 1) : 0;
  const int h_c = kTW + (halo_lane ? lane % max(cg.halo, 1) : 0);

  // The next issue's segment and this thread's source pointers for it. Walking down a strip
  // moves both by one row (x: W, grad_output: SH rows); only at a strip's end (every H
  // steps) are they recomputed. (Recomputing 64-bit addresses every step cost ~150 of the
  // ~400 instructions a warp ran per step: H100 run AE, ncu.)
  SegmentWalk ld(s_begin, H, segs_w);
  const T* xs = x;   // x, pass 0, this thread's unit
  const T* gs = go;  // grad_output, row j = 0, this lane's unit
  int oh = 0;        // grad_output row of the segment's input row through kernel row ki
  bool x_col_ok = false, go_col_ok = false;
  const T* gp[kPlanes];  // kPlanes = 2: plane p, row j = 0, column lane
  bool gp_ok[kPlanes], hp_ok[kPlanes];
  // kPlanes = 2: this lane's halo element is at gp[p] + h_off.
  const int64_t h_off = static_cast<int64_t>(8 * h_j) * HWo + static_cast<int64_t>(h_c - lane) * SW;
  auto start_strip = [&]() {
    const int iw0 = ld.sw * kTW;
    const int col0 = iw0 + static_cast<int>(cg.qmin) - lead;
    oh = ld.ih * static_cast<int>(g.SH) - static_cast<int>(g.PH) + ki * static_cast<int>(g.DH);
    xs = x_base + static_cast<int64_t>(ld.n) * g.Cin * HW + static_cast<int64_t>(ld.ih) * W + iw0 + x_off;
    x_col_ok = iw0 + x_u * (16 / kSize) < W;
    const T* go_row = go_base + static_cast<int64_t>(ld.n) * g.Cout * HWo + static_cast<int64_t>(oh) * Wout;
    if constexpr (kPlanes == 1) {
      gs = go_row + col0 + go_off;
      const int col = col0 + lane * go_elems;
      go_col_ok = lane_copies && col >= 0 && col < Wout;
    } else {
#pragma unroll
      for (int p = 0; p < kPlanes; ++p) {
        const int col = (col0 + lane) * SW + cg.residue[p];
        const int hcol = (col0 + h_c) * SW + cg.residue[p];
        gp[p] = go_row + static_cast<int64_t>(warp) * HWo + col;
        gp_ok[p] = p < cg.planes && col >= 0 && col < Wout;
        hp_ok[p] = p < cg.planes && halo_lane && h_j < b_rows_ok && hcol >= 0 && hcol < Wout;
      }
    }
  };
  start_strip();
  const int64_t go_row_advance = static_cast<int64_t>(g.SH) * Wout;
  int64_t s_issue = s_begin;
  auto copy_go = [&](auto unit, uint32_t* b_dst, bool ok) {
    constexpr int kUnit = decltype(unit)::value;
    const T* src = gs;
#pragma unroll
    for (int j = 0; j < kBRows; ++j) {
      const bool v = ok && j < b_rows_ok;
      uint32_t* dst = b_dst + j * 8 * Sm::kLDB;
      if constexpr (kUnit == 16) {
        mma::cp_async16(dst, v ? src : go, v);
      } else if constexpr (kUnit == 8) {
        mma::cp_async8(dst, v ? src : go, v);
      } else {
        mma::cp_async4(dst, v ? src : go, v);
      }
      src += go_row_step;
    }
  };
  auto issue = [&](int stage) {
    if (s_issue < s_end) {
      uint32_t* a_dst = As + stage * kAStage + a_st_off;
      const T* xp = xs;
#pragma unroll
      for (int p = 0; p < kXPasses; ++p) {
        // A zero fill still writes its 16 bytes: rows past the tile issue nothing.
        if (x_r + p * 8 * kXRowsPerPass < BM) {
          const bool v = x_col_ok && p < x_rows_ok;
          mma::cp_async16(a_dst + p * 8 * kXRowsPerPass * Sm::kLDA, v ? xp : x, v);
        }
        xp += x_pass;
      }
      if constexpr (kPlanes == 2) {
        const bool row_ok = oh >= 0 && oh < Hout;
#pragma unroll
        for (int p = 0; p < kPlanes; ++p) {
          if (p < cg.planes) {
            uint32_t* dst = Bs + stage * kBStage + p * kBPlane + warp * Sm::kLDB + lane;
            const T* src = gp[p];
#pragma unroll
            for (int j = 0; j < kBRows; ++j) {
              const bool v = row_ok && gp_ok[p] && j < b_rows_ok;
              mma::cp_async4(dst + j * 8 * Sm::kLDB, v ? src : go, v);
              src += go_row_step;
            }
            if (halo_lane) {
              const bool v = row_ok && hp_ok[p];
              mma::cp_async4(Bs + stage * kBStage + p * kBPlane + (warp + 8 * h_j) * Sm::kLDB + h_c,
                             v ? gp[p] + h_off : go, v);
            }
          }
        }
      }
      uint32_t* b_dst = Bs + stage * kBStage + b_st_off;
      if (kPlanes != 1) {
        // (the planes were gathered above)
      } else if (lane_copies) {  // (lanes past the row's units would zero-fill the next row)
        const bool ok = go_col_ok && oh >= 0 && oh < Hout;
        if (go_unit == 16) {
          copy_go(std::integral_constant<int, 16>{}, b_dst, ok);
        } else if (go_unit == 8) {
          copy_go(std::integral_constant<int, 8>{}, b_dst, ok);
        } else {
          copy_go(std::integral_constant<int, 4>{}, b_dst, ok);
        }
      }
      if (++ld.ih == H) {
        ld.ih = 0;
        if (++ld.sw == segs_w) {
          ld.sw = 0;
          ++ld.n;
        }
        start_strip();
      } else {
        xs += W;
        gs += go_row_advance;
#pragma unroll
        for (int p = 0; p < kPlanes; ++p) {
          gp[p] += go_row_advance;
        }
        oh += static_cast<int>(g.SH);
      }
    }
    ++s_issue;
    mma::cp_async_commit();  // (empty groups past the end keep the wait count uniform)
  };

  // 16-bit odd copy: the words that odd views read, (lead + kTW + halo) / 2 of each row;
  // thread t copies row t / kOddLanes, words t % kOddLanes + kOddLanes * i.
  constexpr int kOddLanes = kThreads / CT;
  const int odd_r = t / kOddLanes, odd_w0 = t % kOddLanes;
  const int odd_words = min(Sm::kLDB - 1, (lead + kTW + cg.halo + 1) / 2);

  // MMA bookkeeping: warp tile (BM/2) x (BN/4); column block ni reads its tap's view at
  // word offset b_off[ni] of the stage (or of the odd copy, 16-bit odd shifts).
  const int gq = lane >> 2, q = lane & 3;
  const int m0 = (warp & 1) * (BM / 2), n0 = (warp >> 1) * (BN / 4);
  const int a_off = (m0 + gq) * Sm::kLDA + q;
  int b_off[NI];
  bool b_odd[NI];
#pragma unroll
  for (int ni = 0; ni < NI; ++ni) {
    const int col = n0 + ni * 8;
    const int tap = col / CT, co = col % CT + gq;
    int plane, shift;
    tap_view<TT>(cg, tap, plane, shift);  // plane is 0 at stride 1
    shift += lead;
    if constexpr (k16) {
      b_odd[ni] = (shift & 1) != 0;
      b_off[ni] = co * Sm::kLDB + (shift >> 1) + q;
    } else {
      b_odd[ni] = false;
      b_off[ni] = plane * kBPlane + co * Sm::kLDB + shift + q;
    }
  }

  float acc[MI][NI][4];
#pragma unroll
  for (int mi = 0; mi < MI; ++mi)
#pragma unroll
    for (int ni = 0; ni < NI; ++ni)
#pragma unroll
      for (int c = 0; c < 4; ++c) acc[mi][ni][c] = 0.f;

  // grad_bias (kBias): thread t sums channel row t / kSumLanes of the stage, columns sum_c0 +
  // kSumLanes * m of each plane (bit p * kSumSlots + m of own_cols where this block owns it).
  constexpr int kSumLanes = kThreads / CT;
  constexpr int kSumSlots = (kTW + kMaxStridedHalo + kSumLanes - 1) / kSumLanes;
  static_assert(!kBias || (kPlanes == 2 && !k16 && kSumSlots * kPlanes <= 32), "grad_bias sums: float planes");
  // (Few registers live across the loop: the kernel is at its 128-register bound.)
  float bias_acc = 0.f;
  uint32_t own_cols = 0;
  int cw_ih = 0;  // the input row of the step being multiplied (its segment: (s / H) % segs_w)
  // The kernel row ki owns output rows from input row own_rows_from (bias_own_rows_from).
  int own_rows_from = 0;
  if constexpr (kBias) {
    cw_ih = static_cast<int>(s_begin % H);
    own_rows_from = bias_own_rows_from(g, ki);
  }
  const auto owned_columns = [&](int iw0) {
    return bias_owned_columns<kPlanes, kSumSlots, kSumLanes>(g, cg, kj0, iw0, t % kSumLanes);
  };

#pragma unroll
  for (int st = 0; st < Sm::kStages - 1; ++st) issue(st);

  int stage = 0;
  for (int64_t s = s_begin; s < s_end; ++s) {
    mma::cp_async_wait<Sm::kStages - 2>();
    __syncthreads();  // step s has landed for every thread; step s-1's stage is free
    const uint32_t* a_st = As + stage * kAStage;
    const uint32_t* b_st = Bs + stage * kBStage;
    if constexpr (kBias) {
      if (ci0 == 0) {
        // The columns owned change with the segment: at the block's first step and each strip's.
        if (s == s_begin || cw_ih == 0) own_cols = owned_columns(static_cast<int>((s / H) % segs_w) * kTW);
        const int oh = cw_ih * static_cast<int>(g.SH) - static_cast<int>(g.PH) + ki * static_cast<int>(g.DH);
        if (oh >= 0 && oh < Hout && cw_ih >= own_rows_from) {
          // Every slot's load first (unowned ones read as zeros), then the adds: the loads'
          // latencies overlap instead of each add waiting on its own load.
          const uint32_t* row = b_st + (t / kSumLanes) * Sm::kLDB + t % kSumLanes;
          float v[kPlanes * kSumSlots];
#pragma unroll
          for (int p = 0; p < kPlanes; ++p)
#pragma unroll
            for (int m = 0; m < kSumSlots; ++m)
              v[p * kSumSlots + m] = ((own_cols >> (p * kSumSlots + m)) & 1u) ? __uint_as_float(row[p * kBPlane + kSumLanes * m]) : 0.f;
#pragma unroll
          for (int i = 0; i < kPlanes * kSumSlots; ++i) bias_acc += v[i];
        }
      }
      if (++cw_ih == H) cw_ih = 0;
    }
    if constexpr (k16) {
      // Odd copy: word w holds columns 2w+1, 2w+2.
      const uint32_t* src = b_st + odd_r * Sm::kLDB;
      uint32_t* dst = Bodd + odd_r * Sm::kLDB;
      for (int w = odd_w0; w < odd_words; w += kOddLanes) dst[w] = __byte_perm(src[w], src[w + 1], 0x5432);
      __syncthreads();
    }
    issue((stage + Sm::kStages - 1) % Sm::kStages);
#pragma unroll
    for (int kk = 0; kk < kTW / Sm::kMmaK; ++kk) {
      const int kw = kk * 8;  // words: 8 fp32 columns or 16 16-bit columns
      uint32_t a[MI][4], b[NI][2];
#pragma unroll
      for (int mi = 0; mi < MI; ++mi) {
        const uint32_t* ap = a_st + a_off + mi * 16 * Sm::kLDA + kw;
        a[mi][0] = ap[0];
        a[mi][1] = ap[8 * Sm::kLDA];
        a[mi][2] = ap[4];
        a[mi][3] = ap[8 * Sm::kLDA + 4];
      }
#pragma unroll
      for (int ni = 0; ni < NI; ++ni) {
        const uint32_t* bp = (b_odd[ni] ? Bodd : b_st) + b_off[ni] + kw;
        b[ni][0] = bp[0];
        b[ni][1] = bp[4];
      }
      if constexpr (!k16) {
        // Round to TF32 as the element kernel does when staging (tf32_bits).
#pragma unroll
        for (int mi = 0; mi < MI; ++mi)
#pragma unroll
          for (int k = 0; k < 4; ++k) a[mi][k] += 0x1000u;
#pragma unroll
        for (int ni = 0; ni < NI; ++ni) {
          b[ni][0] += 0x1000u;
          b[ni][1] += 0x1000u;
        }
      }
      mma_tile<T>(acc, a, b);
    }
    stage = stage + 1 == Sm::kStages ? 0 : stage + 1;
  }
  mma::cp_async_wait<0>();

  store_partial<MI, NI, CT>(acc, ws, g, group, ci0, co0, ki, kj0, cg.taps, m0, n0);
  if constexpr (kBias) {
    if (ci0 == 0) store_bias_partial<kSumLanes>(bias_acc, bias_ws, g, ki, kw_groups, kj0 / TT, co0, Cout_g);
  }
}

template <typename T, int BM, int CT, int kPlanes>
constexpr int async_smem_bytes() {
  using Sm = AsyncSmem<!std::is_same_v<T, float>, kPlanes>;
  return 4 * (Sm::kStages * (BM * Sm::kLDA + kPlanes * CT * Sm::kLDB) +
              (std::is_same_v<T, float> ? 0 : CT * Sm::kLDB));
}

}  // namespace

// ---- host side ----------------------------------------------------------------------

bool grad_weight_rows_supported(const Geometry& g) {
  const int64_t tt = grad_weight_rows_taps(g);
  const int64_t ct = narrow_tile(g) ? 32 : 64;
  for (int64_t kj0 = 0; kj0 < g.KW; kj0 += tt) {
    const ColumnTapGroup c = column_tap_group(kj0, tt, g.KW, g.SW, g.PW, g.DW);
    if (c.planes > kMaxPlanes) return false;
    if (kTW + c.halo > RowsSmem<false>::kMaxSpan) return false;
    if (c.halo * (ct / 8) > 32 * kHaloPasses) return false;  // halo loads of a warp
  }
  // 32-bit column / row arithmetic inside the kernel; 64-bit channel offsets.
  const int64_t big = int64_t(1) << 30;
  return g.Hout < big && g.Wout < big && (g.W + kTW) * g.SW + g.Wout < big &&
         rows_tiles(g) < (int64_t(1) << 31);
}

namespace {

// The widest cp.async unit (16, 8 or 4 bytes) that divides a row of `width` elements.
int copy_unit(int64_t width, int64_t elem) {
  for (int u : {16, 8, 4}) {
    if ((width * elem) % u == 0 && u >= elem) return u;
  }
  return 0;
}

// Which async kernel runs, by its plane count: 1 at stride 1 along the width (rows of
// both operands a whole number of 4-byte units, every group's columns inside a staged
// row); 2 at larger strides for float (4-byte gathers; at most two residue planes per
// group, a halo the packed copy holds); 0: the element kernel (also when !allow_async).
int async_planes(const Geometry& g, int64_t elem, bool allow_async) {
  if (!allow_async || (g.W * elem) % 16 != 0) return 0;  // x in 16-byte units
  const int64_t tt = grad_weight_rows_taps(g);
  if (g.SW == 1) {
    const int gu = copy_unit(g.Wout, elem);
    if (gu == 0) return 0;
    const int cols = elem == 4 ? AsyncSmem<false, 1>::kColsB : AsyncSmem<true, 1>::kColsB;
    const int64_t unit_elems = gu / elem;
    for (int64_t kj0 = 0; kj0 < g.KW; kj0 += tt) {
      const ColumnTapGroup c = column_tap_group(kj0, tt, g.KW, 1, g.PW, g.DW);
      const int64_t lead = c.qmin - floor_div(c.qmin, unit_elems) * unit_elems;
      const int64_t units = ceil_div(lead + kTW + c.halo, unit_elems);
      if (units > 32 || units * unit_elems > cols) return 0;  // one unit per lane, one row
    }
    return 1;
  }
  if (elem != 4) return 0;
  for (int64_t kj0 = 0; kj0 < g.KW; kj0 += tt) {
    const ColumnTapGroup c = column_tap_group(kj0, tt, g.KW, g.SW, g.PW, g.DW);
    if (c.planes > 2 || c.halo > kMaxStridedHalo) return 0;
  }
  return 2;
}

}  // namespace

// Segments per split: enough blocks for ~4 waves of 1 block per SM, each split at least 8
// segments, a workspace of at most 256 MiB.
int64_t grad_weight_rows_splits(const Geometry& g) {
  const int64_t segs = g.N * g.H * ceil_div(g.W, kTW);
  const int64_t E = g.KH * g.KW * g.Cin * g.Cout_g;
  int64_t s = ceil_div(int64_t(sm_count()) * 4, rows_tiles(g));
  s = std::min(s, ceil_div(segs, 8));
  s = std::min<int64_t>(s, 65535);
  s = std::min(s, std::max<int64_t>(1, (int64_t(256) << 20) / (4 * E)));
  return std::max<int64_t>(s, 1);
}

namespace {

// Whether the float stride > 1 async kernel (planes == 2) sums grad_bias: one group (a block's
// channel rows are grad_bias's), and every output row and column owned by some tap (owning_tap;
// else those elements are never staged). O(Hout * KH + Wout * KW) host steps.
bool rows_bias_ok(const Geometry& g, int planes) {
  return planes == 2 && g.groups == 1 && bias_owned_everywhere(g);
}

template <typename scalar_t, int BM, int CT, int TT>
bool rows_launch(const at::Tensor& x, const at::Tensor& go, const Geometry& g, int64_t splits,
                 const at::Tensor& ws, bool allow_async, const at::Tensor& grad_bias) {
  const int64_t segs = g.N * g.H * ceil_div(g.W, kTW);
  const int64_t chunk = ceil_div(segs, splits);
  const int kw_groups = static_cast<int>(ceil_div(g.KW, TT));
  const int tiles_m = static_cast<int>(ceil_div(g.Cin_g, BM));
  const int tiles_n = static_cast<int>(ceil_div(g.Cout_g, CT));
  const dim3 grid(static_cast<unsigned>(rows_tiles(g)), static_cast<unsigned>(splits));
  auto stream = at::cuda::getCurrentCUDAStream();
  constexpr int64_t elem = sizeof(scalar_t);
  const int planes = async_planes(g, elem, allow_async);
  const bool bias = grad_bias.defined() && std::is_same_v<scalar_t, float> && rows_bias_ok(g, planes);
  at::Tensor bias_ws;  // [split][ki][kjg][Cout]
  if (bias) bias_ws = at::empty({splits * g.KH * kw_groups, g.Cout}, go.options().dtype(at::kFloat));
  auto launch_async = [&](auto planes_tag, auto bias_tag) {
    constexpr int kPlanes = decltype(planes_tag)::value;
    constexpr bool kBias = decltype(bias_tag)::value;
    auto kernel = grad_weight_rows_async_kernel<scalar_t, BM, CT, TT, kPlanes, kBias>;
    constexpr int smem = async_smem_bytes<scalar_t, BM, CT, kPlanes>();
    C10_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    kernel<<<grid, kThreads, smem, stream>>>(
        x.const_data_ptr<scalar_t>(), go.const_data_ptr<scalar_t>(), ws.mutable_data_ptr<float>(), g,
        tiles_m, tiles_n, kw_groups, chunk, kPlanes == 1 ? copy_unit(g.Wout, elem) : 4,
        kBias ? bias_ws.mutable_data_ptr<float>() : nullptr);
  };
  if (planes == 1) {
    launch_async(std::integral_constant<int, 1>{}, std::false_type{});
  } else if (planes == 2) {
    if constexpr (std::is_same_v<scalar_t, float>) {
      if (bias) {
        launch_async(std::integral_constant<int, 2>{}, std::true_type{});
      } else {
        launch_async(std::integral_constant<int, 2>{}, std::false_type{});
      }
    }
  } else {
    grad_weight_rows_kernel<scalar_t, BM, CT, TT><<<grid, kThreads, 0, stream>>>(
        x.const_data_ptr<scalar_t>(), go.const_data_ptr<scalar_t>(), ws.mutable_data_ptr<float>(), g,
        tiles_m, tiles_n, kw_groups, chunk);
  }
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  if (bias) grad_bias_reduce(bias_ws, g, bias_ws.size(0), grad_bias);
  return bias;
}

template <typename scalar_t, int BM, int CT>
bool rows_by_taps(const at::Tensor& x, const at::Tensor& go, const Geometry& g, int64_t splits,
                  const at::Tensor& ws, bool allow_async, const at::Tensor& grad_bias) {
  switch (grad_weight_rows_taps(g)) {
    case 1: return rows_launch<scalar_t, BM, CT, 1>(x, go, g, splits, ws, allow_async, grad_bias);
    case 2: return rows_launch<scalar_t, BM, CT, 2>(x, go, g, splits, ws, allow_async, grad_bias);
    case 3: return rows_launch<scalar_t, BM, CT, 3>(x, go, g, splits, ws, allow_async, grad_bias);
    default: return rows_launch<scalar_t, BM, CT, 4>(x, go, g, splits, ws, allow_async, grad_bias);
  }
}

}  // namespace

bool grad_weight_rows(const at::Tensor& x, const at::Tensor& go, const Geometry& g,
                      int64_t splits, const at::Tensor& ws, bool allow_async, const at::Tensor& grad_bias) {
  TORCH_CHECK(grad_weight_rows_supported(g), "convt: grad_weight_rows: unsupported geometry");
  bool bias_done = false;
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, x.scalar_type(), "convt_grad_weight_rows", [&] {
    if constexpr (std::is_same_v<scalar_t, double>) {
      TORCH_CHECK(false, "convt: grad_weight_rows has no float64 kernel");
    } else if (narrow_tile(g)) {
      bias_done = rows_by_taps<scalar_t, 32, 32>(x, go, g, splits, ws, allow_async, grad_bias);
    } else {
      bias_done = rows_by_taps<scalar_t, 64, 64>(x, go, g, splits, ws, allow_async, grad_bias);
    }
  });
  return bias_done;
}

}  // namespace bwd
}  // namespace convt
