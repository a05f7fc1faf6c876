// grad_weight of conv_transpose2d for float32 (TF32) channels_last operands, read in place.
//
//   gw[ci, co, ki, kj] = sum_{n, ih, iw} x[n, ih, iw, ci] * go[n, ih*SH-PH+ki*DH, iw*SW-PW+kj*DW, co]
//
// Why: TF32 wgmma takes shared-memory operands K-major only, and both operands of this GEMM
// are K-minor in channels_last (the reduction runs over pixels, the channels are contiguous),
// so float32 channels_last grad_weight used to run the NCHW rows kernels behind two NCHW
// transposes: on kb2_2 those copies took 1.85 ms of a 3.76 ms grad_weight (H100 run AE6).
// mma.sync fragments are loaded by the threads themselves, so any shared-memory order serves
// once the loads meet distinct banks. This is the rows kernels' decomposition
// (backward_grad_weight_rows.cuh: a block owns kernel row ki, a group of up to 4 kj and a
// BM x CT channel tile; one step is a 32-column segment of an input row; split-K over
// segments into ws, reduced in a fixed order) over pixel-major stages:
//  - x: the segment's 32 pixels, As[column][ci] with a pitch of BM + 8 words;
//  - grad_output: per column residue plane p (ColumnTapGroup), the plane columns
//    c < 32 + halo of output row oh = ih*SH - PH + ki*DH, Bs[p][c][co] with a pitch of CT + 8.
// The pitches are 8 (mod 32) words: a fragment load reads 4 columns x 8 channels, and
// 8 * column + channel meets 32 distinct banks at any tap shift (which moves B by whole
// columns). Every copy is a 16-byte cp.async of 4 channels of one pixel (channel groups are
// whole 16-byte units), so the residue planes at stride > 1 cost no element gathers, unlike
// the NCHW kernel's 4-byte copies. TF32 by the MMA's truncation of the raw operands (kTrunc
// below; the NCHW async kernel rounds at fragment load, as this one does under
// CONVT_BWD_GW_ROWS_CL_TF32=round).
// Measured (H100, runs AH1 / AH4; docs/perf-notes-backward.md v48): kb2_2 1190 us against the
// NCHW rows kernel's 1887 (plus 1847 us of copies before) and cuDNN's 1451, DRAM 69% busy; kb1_57
// 4.24 ms, latency-bound at two blocks of 8 warps per SM (tensor pipe 43.5%, shared memory 57%).
// Up to 4 taps a block beat fewer (AH2: kb2_5 2.14 ms at 4, 2.74 at 2 + 2 with two blocks per SM).
//
// kBias (one group, every output row and column owned by a tap: bias_owned_everywhere): the
// blocks of channel tile 0 also sum grad_bias from their staged grad_output, each element once
// (bias_owned_columns / bias_own_rows_from, shared with the NCHW kernel); partials ->
// bias_ws[split][ki][kjg][Cout], then grad_bias_reduce. Without it grad_bias would read all of
// grad_output once more (kb2_10 float32: 2.1 GB).
#include "backward_common.cuh"
#include "backward_grad_weight_rows.cuh"
#include "backward_tile.cuh"
#include "env_knob.h"

#include <algorithm>
#include <cstdlib>
#include <type_traits>

namespace convt {
namespace bwd {

using namespace rows;

namespace {

// Staged plane columns: 32 + the group's halo, at most kClHalo(kPlanes). Strided layers (two
// planes) have halos of 1-2 on the suite; stride-1 ones (KW - 1) * DW within a group of 4 taps.
constexpr int kClHalo(int planes) { return planes == 1 ? 8 : 4; }

// N adjacent shared-memory words (N = 2 or 4, 8- or 16-byte aligned) in one load.
template <int N>
__device__ __forceinline__ void load_words(const uint32_t* p, uint32_t (&w)[N]) {
  static_assert(N == 2 || N == 4, "8- or 16-byte loads");
  if constexpr (N == 4) {
    const uint4 v = *reinterpret_cast<const uint4*>(p);
    w[0] = v.x, w[1] = v.y, w[2] = v.z, w[3] = v.w;
  } else {
    const uint2 v = *reinterpret_cast<const uint2*>(p);
    w[0] = v.x, w[1] = v.y;
  }
}

template <int BM, int CT, int kPlanes>
struct ClSmem {
  static constexpr int kLDA = BM + 8;                       // words per staged input column
  static constexpr int kLDB = CT + 8;                       // words per staged plane column
  static constexpr int kSpan = kTW + kClHalo(kPlanes);      // plane columns a stage holds
  static constexpr int kAStage = kTW * kLDA;                // words
  static constexpr int kBPlane = kSpan * kLDB;
  static constexpr int kStage = kAStage + kPlanes * kBPlane;
  // Two blocks per SM in 227 KiB: 4 stages at one plane, 3 at two (BM = CT = 64: 81 / 88 KiB).
  static constexpr int kStages = kPlanes == 1 ? 4 : 3;
  static constexpr int kBytes = 4 * kStages * kStage;
  static_assert(kLDA % 32 == 8 && kLDB % 32 == 8, "fragment loads conflict-free at any shift");
  static_assert(2 * (kBytes + 1024) <= 228 * 1024, "two blocks per SM");
};

template <int BM, int CT, int TT, int kPlanes, bool kBias, bool kTrunc>
__global__ __launch_bounds__(kThreads, TT <= 3 ? 2 : 1) void grad_weight_rows_cl_kernel(
    const float* __restrict__ x, const float* __restrict__ go, float* __restrict__ ws, Geometry g,
    int tiles_m, int tiles_n, int kw_groups, int64_t chunk, float* __restrict__ bias_ws) {
  using Sm = ClSmem<BM, CT, kPlanes>;
  constexpr int BN = TT * CT;
  constexpr int MI = BM / 32, NI = BN / 32;  // m16 / n8 fragments per warp (2 x 4 warps)
  static_assert(BM % 32 == 0 && CT % 32 == 0 && TT >= 1 && TT <= kMaxTaps, "tile shape");
  // Copy units (16 bytes: 4 channels of one pixel) per stage and per thread.
  constexpr int kAUnitsPerCol = BM / 4, kBUnitsPerCol = CT / 4;
  constexpr int kAUnits = kTW * kAUnitsPerCol;
  constexpr int kBUnits = kPlanes * Sm::kSpan * kBUnitsPerCol;
  constexpr int kAPer = kAUnits / kThreads;
  constexpr int kBPer = (kBUnits + kThreads - 1) / kThreads;
  static_assert(kAUnits % kThreads == 0 && kBPer <= 32, "copy units");

  extern __shared__ __align__(16) uint32_t smem[];

  const int t = threadIdx.x, lane = t & 31, warp = t >> 5;
  const RowsBlock blk(g, BM, CT, TT, tiles_m, tiles_n, kw_groups, chunk);
  const int group = blk.group, ki = blk.ki, kj0 = blk.kj0, ci0 = blk.ci0, co0 = blk.co0;
  const int segs_w = blk.segs_w;
  const int64_t s_begin = blk.s_begin, s_end = blk.s_end;
  const ColumnTapGroup& cg = blk.cg;

  const int Cin = static_cast<int>(g.Cin), Cout = static_cast<int>(g.Cout);
  const int Cin_g = static_cast<int>(g.Cin_g), Cout_g = static_cast<int>(g.Cout_g);
  const int H = static_cast<int>(g.H), W = static_cast<int>(g.W);
  const int Hout = static_cast<int>(g.Hout), Wout = static_cast<int>(g.Wout);
  const int SW = static_cast<int>(g.SW);
  const int span = kTW + cg.halo;  // plane columns this block's taps read

  // ---- copy bookkeeping, fixed for the block ----
  // x unit u = t + kThreads * i: column u / kAUnitsPerCol, channels 4 * (u % kAUnitsPerCol).
  // Its source is a 32-bit offset from the segment's first pixel (channel ci0 of the group);
  // whether it is in range changes with the strip only (the column) and never (the channel).
  // (The offsets are recomputed at each copy from u, constant divisions: kept in registers
  // across the loop they spilled beside the accumulators.)
  uint32_t a_chan_ok = 0;
#pragma unroll
  for (int i = 0; i < kAPer; ++i) {
    if (ci0 + 4 * ((t + kThreads * i) % kAUnitsPerCol) < Cin_g) a_chan_ok |= 1u << i;
  }
  // grad_output unit u: plane p = u / (kSpan * kBUnitsPerCol), plane column c, channels 4 * cu,
  // at output column (iw0 + qmin + c) * SW + residue[p] of row oh.
  const auto b_unit = [](int u, int& p, int& c, int& cu) {
    p = u / (Sm::kSpan * kBUnitsPerCol);
    const int rest = u % (Sm::kSpan * kBUnitsPerCol);
    c = rest / kBUnitsPerCol;
    cu = rest % kBUnitsPerCol;
  };
  const int res0 = cg.residue[0], res1 = cg.residue[kPlanes - 1];
  int go_col0 = 0;    // per strip: (iw0 + qmin) * SW * Cout, the plane column 0's offset
  uint32_t b_ok = 0;  // per strip: in range (plane, column, channel) and needed (c < span)
  const int64_t x_chan0 = static_cast<int64_t>(group) * Cin_g + ci0;
  const int64_t go_chan0 = static_cast<int64_t>(group) * Cout_g + co0;
  const int64_t x_row_step = static_cast<int64_t>(W) * Cin;                      // next input row
  const int64_t go_row_step = static_cast<int64_t>(g.SH) * Wout * Cout;         // its output row

  SegmentWalk ld(s_begin, H, segs_w);
  const float* xs = x;   // the issue's segment: pixel (n, ih, iw0), channel x_chan0
  const float* gs = go;  // its grad_output row oh: pixel (n, oh, 0), channel go_chan0
  int oh = 0;
  uint32_t a_ok = 0;
  auto start_strip = [&]() {
    const int iw0 = ld.sw * kTW;
    oh = ld.ih * static_cast<int>(g.SH) - static_cast<int>(g.PH) + ki * static_cast<int>(g.DH);
    xs = x + ((static_cast<int64_t>(ld.n) * H + ld.ih) * W + iw0) * Cin + x_chan0;
    gs = go + (static_cast<int64_t>(ld.n) * Hout + oh) * Wout * Cout + go_chan0;
    a_ok = 0;
#pragma unroll
    for (int i = 0; i < kAPer; ++i) {
      const int col = (t + kThreads * i) / kAUnitsPerCol;
      if (((a_chan_ok >> i) & 1u) && iw0 + col < W) a_ok |= 1u << i;
    }
    go_col0 = (iw0 + static_cast<int>(cg.qmin)) * SW * Cout;
    b_ok = 0;
#pragma unroll
    for (int i = 0; i < kBPer; ++i) {
      const int u = t + kThreads * i;
      int p, c, cu;
      b_unit(u, p, c, cu);
      const int ow = (iw0 + static_cast<int>(cg.qmin) + c) * SW + (p == 0 ? res0 : res1);
      if (u < kBUnits && p < cg.planes && c < span && ow >= 0 && ow < Wout && co0 + 4 * cu < Cout_g) b_ok |= 1u << i;
    }
  };
  start_strip();
  int64_t s_issue = s_begin;
  auto issue = [&](int stage) {
    if (s_issue < s_end) {
      uint32_t* a_dst = smem + stage * Sm::kStage;
#pragma unroll
      for (int i = 0; i < kAPer; ++i) {
        const int u = t + kThreads * i;
        const bool v = (a_ok >> i) & 1u;
        const int col = u / kAUnitsPerCol, cu4 = 4 * (u % kAUnitsPerCol);
        mma::cp_async16(a_dst + col * Sm::kLDA + cu4, v ? xs + (col * Cin + cu4) : x, v);
      }
      const bool row_ok = oh >= 0 && oh < Hout;
      uint32_t* b_dst = a_dst + Sm::kAStage;
#pragma unroll
      for (int i = 0; i < kBPer; ++i) {
        const int u = t + kThreads * i;
        if (u < kBUnits) {
          // Columns past the span are never read: not copied. The others always write their
          // 16 bytes (zeros outside the image), so no stage keeps an old segment's values.
          int p, c, cu;
          b_unit(u, p, c, cu);
          if (p < cg.planes && c < span) {
            const bool v = row_ok && ((b_ok >> i) & 1u);
            const int src = go_col0 + (c * SW + (p == 0 ? res0 : res1)) * Cout + 4 * cu;
            mma::cp_async16(b_dst + p * Sm::kBPlane + c * Sm::kLDB + 4 * cu, v ? gs + src : go, v);
          }
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
        xs += x_row_step;
        gs += go_row_step;
        oh += static_cast<int>(g.SH);
      }
    }
    ++s_issue;
    mma::cp_async_commit();  // (empty groups past the end keep the wait count uniform)
  };

  // ---- MMA bookkeeping: warp tile (BM/2) x (BN/4) ----
  // A (m = ci, k = column): element (m, k) at k * kLDA + m. B (k = plane column, n = co of a
  // tap): element (k, n) at plane * kBPlane + (shift + k) * kLDB + n. kWideOrder (FragmentMap; the
  // rounded form): a lane's A registers at one k are 2 MI adjacent channels (one 8- or 16-byte
  // load, two in all per k-step instead of 4 MI) and, where NI is even, the B registers of
  // n-blocks 2p and 2p + 1 are adjacent (NI 8-byte loads instead of 2 NI). Banks, with pitches of
  // 8 (mod 32) words: 16-byte A loads are read by quarter-warps, (q, gq) in 4 x 2 at 8 q + 4 gq;
  // 8-byte loads by half-warps, 4 x 4 at 8 q + 2 gq: every bank once. Measured (H100, run AI2):
  // kb1_57 4310 -> 4081 us, 13% fewer instructions, the same results bit for bit.
  // kTrunc (the default; CONVT_BWD_GW_ROWS_CL_TF32=round turns it off): no rounding add, the MMA
  // truncates to TF32 itself. The add was also what placed each word of a 16-byte load in its
  // fragment register (a TF32 A fragment is rows gq, gq + 8 at k = q, then at k = q + 4), so
  // without it the loads must land in place: A rows mapped as m0 + 16 mi + 2 gq + h (kPairRows),
  // a0 / a1 one 8-byte load at k = q and a2 / a3 one at k = q + 4 (half-warps at 8 q + 2 gq:
  // conflict-free), B as 4-byte loads in the MMA's order. SASS, kb1_57's <64, 64, 3, 1, false>:
  // the MMA section about 182 -> 128 instructions, spills 32 -> 4 bytes.
  constexpr int kOrder = kTrunc ? kPairRows : kWideOrder;
  constexpr bool kPairB = !kTrunc && pairs_columns(NI);
  constexpr int kBLoads = kPairB ? NI / 2 : NI;  // B load addresses per k row
  const int gq = lane >> 2, q = lane & 3;
  const int m0 = (warp & 1) * (BM / 2), n0 = (warp >> 1) * (BN / 4);
  const int a_off = q * Sm::kLDA + m0 + 2 * (kTrunc ? 1 : MI) * gq;
  int b_off[kBLoads];
#pragma unroll
  for (int bl = 0; bl < kBLoads; ++bl) {
    const int col = kPairB ? n0 + 16 * bl : n0 + bl * 8;
    const int tap = col / CT, co = col % CT + (kPairB ? 2 * gq : gq);
    int plane, shift;
    tap_view<TT>(cg, tap, plane, shift);
    b_off[bl] = Sm::kAStage + plane * Sm::kBPlane + (shift + q) * Sm::kLDB + co;
  }

  float acc[MI][NI][4];
#pragma unroll
  for (int mi = 0; mi < MI; ++mi)
#pragma unroll
    for (int ni = 0; ni < NI; ++ni)
#pragma unroll
      for (int c = 0; c < 4; ++c) acc[mi][ni][c] = 0.f;

  // grad_bias (kBias): thread t sums channel t / kSumLanes of the stage, plane columns sum_c0 +
  // kSumLanes * m (bit p * kSumSlots + m of own_cols where this block owns it). Banks: the
  // warp's 8 channels x 4 columns at 8 * column + channel, distinct.
  constexpr int kSumLanes = kThreads / CT;
  constexpr int kSumSlots = (Sm::kSpan + kSumLanes - 1) / kSumLanes;
  float bias_acc = 0.f;
  uint32_t own_cols = 0;
  int cw_ih = 0;          // the input row of the step being multiplied
  int own_rows_from = 0;  // the kernel row ki owns output rows from this input row on
  if constexpr (kBias) {
    cw_ih = static_cast<int>(s_begin % H);
    own_rows_from = bias_own_rows_from(g, ki);
  }

#pragma unroll
  for (int st = 0; st < Sm::kStages - 1; ++st) issue(st);

  int stage = 0;
  for (int64_t s = s_begin; s < s_end; ++s) {
    mma::cp_async_wait<Sm::kStages - 2>();
    __syncthreads();  // step s has landed for every thread; step s-1's stage is free
    const uint32_t* st_base = smem + stage * Sm::kStage;
    if constexpr (kBias) {
      if (ci0 == 0) {
        if (s == s_begin || cw_ih == 0) {
          own_cols = bias_owned_columns<kPlanes, kSumSlots, kSumLanes>(
              g, cg, kj0, static_cast<int>((s / H) % segs_w) * kTW, t % kSumLanes);
        }
        const int oh_c = cw_ih * static_cast<int>(g.SH) - static_cast<int>(g.PH) + ki * static_cast<int>(g.DH);
        if (oh_c >= 0 && oh_c < Hout && cw_ih >= own_rows_from) {
          // Every slot's load first (unowned ones read as zeros), then the adds.
          const uint32_t* col0 = st_base + Sm::kAStage + (t % kSumLanes) * Sm::kLDB + t / kSumLanes;
          float v[kPlanes * kSumSlots];
#pragma unroll
          for (int p = 0; p < kPlanes; ++p)
#pragma unroll
            for (int m = 0; m < kSumSlots; ++m)
              v[p * kSumSlots + m] = ((own_cols >> (p * kSumSlots + m)) & 1u)
                                         ? __uint_as_float(col0[p * Sm::kBPlane + kSumLanes * m * Sm::kLDB])
                                         : 0.f;
#pragma unroll
          for (int i = 0; i < kPlanes * kSumSlots; ++i) bias_acc += v[i];
        }
      }
      if (++cw_ih == H) cw_ih = 0;
    }
    issue((stage + Sm::kStages - 1) % Sm::kStages);
#pragma unroll
    for (int kk = 0; kk < kTW / 8; ++kk) {
      const int kc = kk * 8;  // the MMA's first column
      uint32_t a[MI][4], b[NI][2];
      // (Rounded form: each register + 0x1000, rounded to TF32 as tf32_bits does.)
      if constexpr (kTrunc) {
#pragma unroll
        for (int mi = 0; mi < MI; ++mi) {  // rows gq, gq + 8 adjacent: (a0, a1) at k = q, (a2, a3) at q + 4
          const uint32_t* ap = st_base + a_off + kc * Sm::kLDA + mi * 16;
          uint32_t lo[2], hi[2];
          load_words(ap, lo);
          load_words(ap + 4 * Sm::kLDA, hi);
          a[mi][0] = lo[0], a[mi][1] = lo[1], a[mi][2] = hi[0], a[mi][3] = hi[1];
        }
      } else {
        const uint32_t* ap = st_base + a_off + kc * Sm::kLDA;
        uint32_t lo[2 * MI], hi[2 * MI];  // k = q and k = q + 4: (mi, row gq / gq + 8) pairs
        load_words(ap, lo);
        load_words(ap + 4 * Sm::kLDA, hi);
#pragma unroll
        for (int mi = 0; mi < MI; ++mi) {
          a[mi][0] = lo[2 * mi] + 0x1000u;
          a[mi][1] = lo[2 * mi + 1] + 0x1000u;
          a[mi][2] = hi[2 * mi] + 0x1000u;
          a[mi][3] = hi[2 * mi + 1] + 0x1000u;
        }
      }
      if constexpr (kPairB) {
#pragma unroll
        for (int p = 0; p < NI / 2; ++p) {
          const uint32_t* bp = st_base + b_off[p] + kc * Sm::kLDB;
          uint32_t lo[2], hi[2];  // k = q and k = q + 4 of n-blocks 2p, 2p + 1
          load_words(bp, lo);
          load_words(bp + 4 * Sm::kLDB, hi);
          b[2 * p][0] = lo[0] + 0x1000u;
          b[2 * p + 1][0] = lo[1] + 0x1000u;
          b[2 * p][1] = hi[0] + 0x1000u;
          b[2 * p + 1][1] = hi[1] + 0x1000u;
        }
      } else {
#pragma unroll
        for (int ni = 0; ni < NI; ++ni) {
          const uint32_t* bp = st_base + b_off[ni] + kc * Sm::kLDB;
          b[ni][0] = bp[0] + (kTrunc ? 0u : 0x1000u);
          b[ni][1] = bp[4 * Sm::kLDB] + (kTrunc ? 0u : 0x1000u);
        }
      }
      mma_tile<float>(acc, a, b);
    }
    stage = stage + 1 == Sm::kStages ? 0 : stage + 1;
  }
  mma::cp_async_wait<0>();

  store_partial<MI, NI, CT, kOrder>(acc, ws, g, group, ci0, co0, ki, kj0, cg.taps, m0, n0);
  if constexpr (kBias) {
    if (ci0 == 0) store_bias_partial<kSumLanes>(bias_acc, bias_ws, g, ki, kw_groups, kj0 / TT, co0, Cout_g);
  }
}

// Test / measurement knob CONVT_BWD_GW_ROWS_CL=0: this kernel off (float32 channels_last
// grad_weight goes back to the NCHW kernels behind two NCHW copies). Read once.
bool rows_cl_on() {
  static const bool on = !env_equals("CONVT_BWD_GW_ROWS_CL", "0");
  return on;
}

// Measurement knob CONVT_BWD_GW_ROWS_CL_TAPS=1..4: the most taps per block (default 4, as the NCHW
// rows kernels). Up to 3 taps a block runs two blocks per SM (128 registers), 4 taps one. Read once.
int64_t rows_cl_max_taps() {
  static const int64_t taps = [] {
    const char* e = std::getenv("CONVT_BWD_GW_ROWS_CL_TAPS");
    const int v = e != nullptr ? std::atoi(e) : 0;
    return int64_t(v >= 1 && v <= kMaxTaps ? v : kMaxTaps);
  }();
  return taps;
}

// TF32 by the MMA's own truncation (kTrunc) by default; CONVT_BWD_GW_ROWS_CL_TF32=round rounds each
// fragment register to nearest first (one integer add each, the 16-byte wide-order loads). H100 run
// AJ2, kernel device us, round -> truncate: kb1_57 4115 -> 3790, kb2_10 4101 -> 3783, kb1_69 4071 ->
// 3807, kb1_65 2600 -> 2488, kb2_2 1173 -> 1088; relative error against float64 3.0e-4 -> 7.9e-4 to
// 8.6e-4 on the suite's rows, where cuDNN's TF32 grad_weight measured 0.9e-3 to 2.1e-3. Read once.
bool rows_cl_truncate() {
  static const bool on = !env_equals("CONVT_BWD_GW_ROWS_CL_TF32", "round");
  return on;
}

// Plane count of the kernel for g: 1 or 2 when every tap group's planes and halo fit, else 0.
int rows_cl_planes(const Geometry& g) {
  const int64_t tt = grad_weight_rows_taps(g, rows_cl_max_taps());
  int planes = 1;
  for (int64_t kj0 = 0; kj0 < g.KW; kj0 += tt) {
    const ColumnTapGroup c = column_tap_group(kj0, tt, g.KW, g.SW, g.PW, g.DW);
    if (c.planes > kMaxPlanes) return 0;
    planes = std::max(planes, c.planes);
  }
  for (int64_t kj0 = 0; kj0 < g.KW; kj0 += tt) {
    const ColumnTapGroup c = column_tap_group(kj0, tt, g.KW, g.SW, g.PW, g.DW);
    if (c.halo > kClHalo(planes)) return 0;
  }
  return planes;
}

bool aligned16(const at::Tensor& t) { return reinterpret_cast<uintptr_t>(t.const_data_ptr()) % 16 == 0; }

template <int BM, int CT, int TT>
bool rows_cl_launch(const at::Tensor& x, const at::Tensor& go, const Geometry& g, int64_t splits,
                    const at::Tensor& ws, const at::Tensor& grad_bias) {
  const int64_t segs = g.N * g.H * ceil_div(g.W, int64_t(kTW));
  const int64_t chunk = ceil_div(segs, splits);
  const int kw_groups = static_cast<int>(ceil_div(g.KW, int64_t(TT)));
  const int tiles_m = static_cast<int>(ceil_div(g.Cin_g, int64_t(BM)));
  const int tiles_n = static_cast<int>(ceil_div(g.Cout_g, int64_t(CT)));
  const dim3 grid(static_cast<unsigned>(rows_tiles(g, TT)), static_cast<unsigned>(splits));
  const int planes = rows_cl_planes(g);
  const bool bias = grad_bias.defined() && g.groups == 1 && bias_owned_everywhere(g);
  at::Tensor bias_ws;  // [split][ki][kjg][Cout]
  if (bias) bias_ws = at::empty({splits * g.KH * kw_groups, g.Cout}, go.options().dtype(at::kFloat));
  auto stream = at::cuda::getCurrentCUDAStream();
  auto launch_kernel = [&](auto planes_tag, auto bias_tag, auto trunc_tag) {
    constexpr int kPlanes = decltype(planes_tag)::value;
    constexpr bool kBias = decltype(bias_tag)::value;
    constexpr bool kTrunc = decltype(trunc_tag)::value;
    auto kernel = grad_weight_rows_cl_kernel<BM, CT, TT, kPlanes, kBias, kTrunc>;
    constexpr int smem = ClSmem<BM, CT, kPlanes>::kBytes;
    C10_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    kernel<<<grid, kThreads, smem, stream>>>(x.const_data_ptr<float>(), go.const_data_ptr<float>(),
                                             ws.mutable_data_ptr<float>(), g, tiles_m, tiles_n, kw_groups, chunk,
                                             kBias ? bias_ws.mutable_data_ptr<float>() : nullptr);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  };
  auto launch = [&](auto planes_tag, auto bias_tag) {
    if (rows_cl_truncate()) launch_kernel(planes_tag, bias_tag, std::true_type{});
    else launch_kernel(planes_tag, bias_tag, std::false_type{});
  };
  if (planes == 1) {
    if (bias) launch(std::integral_constant<int, 1>{}, std::true_type{});
    else launch(std::integral_constant<int, 1>{}, std::false_type{});
  } else {
    if (bias) launch(std::integral_constant<int, 2>{}, std::true_type{});
    else launch(std::integral_constant<int, 2>{}, std::false_type{});
  }
  if (bias) grad_bias_reduce(bias_ws, g, bias_ws.size(0), grad_bias);
  return bias;
}

template <int BM, int CT>
bool rows_cl_by_taps(const at::Tensor& x, const at::Tensor& go, const Geometry& g, int64_t splits,
                     const at::Tensor& ws, const at::Tensor& grad_bias) {
  switch (grad_weight_rows_taps(g, rows_cl_max_taps())) {
    case 1: return rows_cl_launch<BM, CT, 1>(x, go, g, splits, ws, grad_bias);
    case 2: return rows_cl_launch<BM, CT, 2>(x, go, g, splits, ws, grad_bias);
    case 3: return rows_cl_launch<BM, CT, 3>(x, go, g, splits, ws, grad_bias);
    default: return rows_cl_launch<BM, CT, 4>(x, go, g, splits, ws, grad_bias);
  }
}

}  // namespace

bool grad_weight_rows_cl_supported(const at::Tensor& x, const at::Tensor& go, const Geometry& g) {
  if (!rows_cl_on() || x.scalar_type() != at::kFloat || go.scalar_type() != at::kFloat) return false;
  if (!x.is_cuda() || !channels_last_only(x) || !channels_last_only(go)) return false;
  // 16-byte copy units: channel groups of whole units, 16-byte aligned tensors.
  if (g.Cin_g % 4 != 0 || g.Cout_g % 4 != 0 || !aligned16(x) || !aligned16(go)) return false;
  if (rows_cl_planes(g) == 0) return false;
  // 32-bit offsets within a segment and within an output row; 32-bit rows and columns.
  const int64_t big = int64_t(1) << 30;
  // (A staged plane column is at most (W + kTW + halo) * SW + SW output columns from the row's start.)
  const int64_t cols = (g.W + kTW + kClHalo(1) + 1) * g.SW + g.Wout;
  return g.H < big && g.W < big && g.Hout < big && g.Wout < big && cols * g.Cout < big &&
         (g.W + kTW) * g.Cin < big && rows_tiles(g, 1) < (int64_t(1) << 31);
}

bool grad_weight_rows_cl(const at::Tensor& x, const at::Tensor& go, const Geometry& g, int64_t splits,
                         const at::Tensor& ws, const at::Tensor& grad_bias) {
  TORCH_CHECK(grad_weight_rows_cl_supported(x, go, g), "convt: grad_weight_rows_cl: unsupported operands");
  CONVT_TRACE("cuda.grad_weight_rows_cl");
  if (narrow_tile(g)) return rows_cl_by_taps<32, 32>(x, go, g, splits, ws, grad_bias);
  return rows_cl_by_taps<64, 64>(x, go, g, splits, ws, grad_bias);
}

}  // namespace bwd
}  // namespace convt
