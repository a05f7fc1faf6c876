// Phase-decomposed implicit GEMM forward on Hopper's warpgroup MMA (wgmma, sm_90a).
//
// Same decomposition as forward_igemm.cu (phase_tiles.cuh): each (phase_y, phase_x) is a
// dense stride-1 correlation, computed as a GEMM
//     D[co][pixel] = sum over (tap, ci) of W[tap][co][ci] * X[ci][pixel shifted by tap].
// M = output channels (64 per warpgroup; the weights are operand A), N = pixels (256 per
// warpgroup, one m64n256 MMA; the input tile is operand B), K = input channels, one MMA
// K step (8 tf32 or 16 bf16/fp16 channels) per tap per chunk.
//
// Why wgmma: the mma.sync kernel spends ~11 instructions per MMA (fragment loads and
// address math per 16x8x8 product) and, with 2 warps per scheduler, cannot hide them;
// a wgmma reads both operands from shared memory itself, one instruction per
// 64x128x8 product, and runs asynchronously while the threads stage the next chunk.
//
// Shared-memory operands (wgmma.cuh): K-major, no swizzle, [16-byte K quantum][row][16 B].
//   Input tile: rows are "slots" of a pitch-P tile, slot = img*img_stride + y*P + x, holding
//   the input rows and columns the tile's outputs read (the halo included). The output
//   pixel of slot n reads slot n + off(tap) for each tap, so every tap is the same tile
//   with the descriptor's start moved by off(tap) rows: no copy per tap. Slots whose x is
//   past the tile width (x >= TX) or whose row is past TY are computed and discarded;
//   the planner picks TX so that few are.
//   Weights: [tap][quantum][co][16 B], pre-packed by pack_weights_wgmma (TF32-rounded for
//   float) so that a chunk of one (group, phase, co tile) is one contiguous block, moved
//   by one bulk copy (bulk_copy.cuh) that completes on a per-stage mbarrier.
//
// Pipeline per block (2 stages): issue chunk c's MMAs (async) -> copy chunk c+1's
// weights (bulk copy) and input (NCHW -> K-major transpose and the TF32 rounding in one
// pass through registers) into the other stage -> wait for the MMAs -> barrier.
// The loads of c+1 overlap the MMAs of c.
//
// Grid: one block per tile, or (channels_last: WgParams::persist, make_plan, run_config) one wave
// of persistent blocks, each taking every w_step-th work item (phase fastest, the step prime to
// the phase count so that each block's items cycle through the phases); such a block issues the
// next item's first chunks during its current item's last ones, into raw stages that lie outside
// the epilogue's staging, so they land while the epilogue runs.
//
// Input loads, four variants:
//  - kTma (channels_last, any of the three types, tiles not tall): thread 0 fills a raw stage
//    with one tensor-map box per K quantum (tensor_map.cuh), completing on the stage's
//    mbarrier; the boxes are the MMA's tiles, zero-filled outside the tensor. float32 input
//    reaches the TF32 MMA unrounded (see the kernel's comment).
//  - kAsync && kCL (bfloat16 / float16 channels_last where no box fits, or CONVT_FWD_TMA=0):
//    a pixel's 8 channels are already a K quantum, so each thread cp.asyncs its 16-byte
//    pieces straight into the MMA's tile:
//    the raw stages are the tiles (R = 2..4), chunk c + R - 1 goes into chunk c - 1's tile
//    once its MMAs are done, and chunk c + 1 must land before the iteration's closing
//    barrier. No transpose, no register staging (float keeps the register variant: rounding
//    to TF32 in shared memory after the copies was slower, run BN).
//  - kAsync (NCHW rows 16-byte aligned, or 4-byte aligned with 4-byte copies; the default
//    where its shared memory fits): each
//    thread cp.asyncs its 16-byte pieces of chunk c + R into raw stage (c + R) % R (R = 2..4
//    raw stages, as many as fit), waits for chunk c + 2 before the iteration's closing
//    barrier, and the block transposes chunk c + 1 from raw [channel][slot] to the K-major
//    tile with one thread per slot: VEC element loads from consecutive addresses and one
//    16-byte store to consecutive slots, so neither side has a bank conflict. (The register
//    transpose, a thread writing its VEC consecutive slots, stores with lanes 64 or 128 bytes
//    apart: 4- and 8-way conflicts, 70-82 M on kb1_57 / kb2_5, ncu run AS.)
//  - registers (element loads, float channels_last without a box, or no room): chunk c + 1 is loaded into
//    registers and transposed in place, so each chunk waits one full memory latency with
//    a single chunk in flight per block: on many-channel, few-tap problems (grad_input's
//    flattened k4 s2 planes) that ran at 0.6-0.9 TB/s (run AP).
//
// Epilogue: accumulators -> shared memory -> global memory through the output's strides
// (+ bias); in NCHW each warp stores its own 16 channel rows, two adjacent pixels per store
// where a phase's columns are adjacent output elements.
//
// Column-phase blocks (kCols; NCHW with three or more column phases, column_phase_blocks_from):
// a phase's outputs are every SW-th element of a row, so its own stores write one piece per
// sector, SW times the L2 write sectors of the output (ncu, fp32 kb1_81, stride 5: 5.4x
// channels_last's, the L2 at 81%: the bound). There a block's warpgroups are the column phases
// with taps (two or three) on one shared input tile, each with its own weights and tap table,
// and the epilogue interleaves their results in shared memory and stores whole output rows.
// 3xTF32 (kSplit; strict float32, launch_wgmma_3xtf32): the NCHW cp.async form with each operand
// split into big and small TF32 parts, three MMAs per tap, each chunk's sum added in fp32.
//
// Deterministic: fixed reduction order, no atomics.
#include <ATen/ATen.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAFunctions.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string>
#include <tuple>
#include <utility>

#include "bulk_copy.cuh"
#include "env_knob.h"
#include "forward_launch.cuh"
#include "mma.cuh"
#include "pack.cuh"
#include "phase_tiles.cuh"
#include "tensor_map.cuh"
#include "wgmma.cuh"
#include "../host_trace.h"

namespace convt {
namespace fwd {
namespace {

constexpr int kQuanta = 2;        // 16-byte K quanta per chunk: one MMA K step per tap
constexpr int kPixPerWg = 256;    // N per warpgroup by default: one m64n256 MMA (PX below)
constexpr int kMaxTaps = 256;     // taps per phase (tables in shared memory)
constexpr int kOutPitch = 136;     // epilogue staging row (floats): conflict-free STS.64
constexpr int kOutPitchCL = 68;    // channels_last staging: [pixel][64 channels + 4], conflict-free
constexpr int kSmemMax = 220 * 1024;
constexpr int kMaxRawStages = 4;  // kAsync: raw input stages (fewer where shared memory is short)
constexpr int kMaxColPhases = 3;  // kCols: warpgroups (column phases with taps) per block

struct WgParams {
  Geometry g;
  int SH, SW, groups, ddy, ddx;
  PhaseAxis32 phase_y[kMaxStride], phase_x[kMaxStride];
  int64_t out_s[4];
  bool out_pairs;     // kCL: a lane's two channels may be stored as one 2-element vector
  bool pair_cols;     // NCHW: a phase's adjacent columns are adjacent output elements (SW == 1,
                      // unit column stride, output aligned to two elements): pair stores
  int TX, TY, IMGS;   // valid outputs per tile: IMGS images x TY rows x TX columns
  // Tall tiles (small images; tall_tiles_allowed): the batch's phase images stacked as one
  // tall image of N segments of R rows (a phase image's rows + the halo), tiled by TY
  // virtual rows that may span images, so that a block's slots are not left empty past
  // its last whole image (dcgan_g4: one 16 x 16 image per 512-slot block, 50% of the MMAs
  // on empty slots). Output rows at a segment's end (local row >= the phase's rows) are
  // computed and discarded, like the slots past TX.
  bool tall;
  int R;              // tall: rows per image segment
  int tiles;          // blocks per (phase, channel tile, image block, group)
  int imgs_per_block; // images per grid z step (tall: the whole batch)
  int P;              // tile pitch (slots per staged row) = TX + halo_x
  int img_stride;     // slots per staged image = (TY + halo_y) * P
  int tiles_x;
  int vec;            // pixels per vector load = elements per 16 bytes (P is a multiple)
  int slots_load;     // slots holding input (IMGS * img_stride)
  int slots_alloc;    // slots per quantum plane (>= every slot an MMA reads)
  int nchunks;        // K chunks of kQuanta quanta
  int taps_y, taps_x; // packed tap grid (max taps per axis over phases)
  int co_tiles;       // output-channel tiles per group
  int tile_bytes;     // input tile bytes per stage
  int w_offset;       // weights' offset in a stage (0 when the tile lives in the raw stages)
  int stage_bytes;
  int raw_stages;     // kAsync: raw input stages after the two stages, 2..kMaxRawStages (0: registers)
  int raw_base;       // the raw stages' offset in shared memory (after the stages, and on a
                      // persistent grid after the epilogue's staging too)
  int smem_bytes;
  // Work items per output-channel tile: tile_grid's x * z (phases x tiles x image blocks x
  // groups). persist: a persistent grid, each block taking every w_step-th item and issuing
  // the next item's first chunks before its epilogue; else one block per item (w_step = all).
  bool persist;
  int w_total, w_step;
  // Column-phase blocks (wgmma_fwd_kernel's kCols): warpgroup i computes column phase
  // cols_rx[i] (the phases with taps, cols_np of them) on the same tile of slots, so that the
  // block holds every column phase of its rows; its items are (row phase, tile, image block
  // and group). The staged tile starts at input column tile_x * TX + cols_lo (the smallest
  // first input column over those phases); phase i's first input column is cols_d[i] slots
  // further. cols_wg: column phase -> warpgroup, -1 where the phase has no taps.
  int cols_np, cols_lo;
  int cols_rx[kMaxColPhases], cols_d[kMaxColPhases];
  int cols_wg[kMaxStride];
  int cols_map_offset;  // the epilogue's column map in shared memory (bytes), after the staging
};

// ---- weight packing: [grp][ry][rx][co_tile][chunk][tap][quantum][co][16 B] -------------

// kSplit (float, 3xTF32): each chunk is two blocks, the TF32 big parts then the small ones
// ([chunk][part][tap]...), w = big + small, so that one bulk copy per part fills the stage.
template <typename T, int BMCO, bool kRoundTf32, bool kSplit = false>
__global__ void pack_weights_wgmma(const T* __restrict__ w, T* __restrict__ wp,
                                   const WgParams p, int64_t total) {
  static_assert(!kSplit || (std::is_same_v<T, float> && kRoundTf32), "3xTF32: float weights");
  constexpr int EPQ = 16 / sizeof(T);
  const Geometry& g = p.g;
  const int ntaps = p.taps_y * p.taps_x;
  for (int64_t idx = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; idx < total;
       idx += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const OperandDigits d = operand_digits<EPQ, BMCO, kQuanta>(idx);
    const int e = d.e, co_l = d.co_l, q = d.q;
    int64_t rest = d.rest;
    const int tap = static_cast<int>(rest % ntaps);
    rest /= ntaps;
    int part = 0;  // kSplit: 0 big, 1 small
    if constexpr (kSplit) {
      part = static_cast<int>(rest % 2);
      rest /= 2;
    }
    const int64_t chunk = rest % p.nchunks;
    rest /= p.nchunks;
    const int64_t cot = rest % p.co_tiles;
    rest /= p.co_tiles;
    const int64_t rx = rest % g.SW;
    rest /= g.SW;
    const int64_t ry = rest % g.SH;
    const int64_t grp = rest / g.SH;
    const int64_t ci_l = (chunk * kQuanta + q) * EPQ + e;
    const int64_t co = cot * BMCO + co_l;
    // Taps numbered within the phase (m_y * ntaps_x + m_x over the phase's own taps), so
    // that a phase's taps are the first of every chunk: one contiguous block per chunk.
    const AxisPhase py = axis_phase(ry, g.SH, g.DH, g.KH);
    const AxisPhase px = axis_phase(rx, g.SW, g.DW, g.KW);
    const int nty = p.phase_y[ry].ntaps, ntx = p.phase_x[rx].ntaps;
    const int64_t ky = ntx > 0 ? py.first_tap + (tap / ntx) * py.tap_step : -1;
    const int64_t kx = ntx > 0 ? px.first_tap + (tap % ntx) * px.tap_step : -1;
    T v = T(0);
    if (tap < nty * ntx && co < g.Cout_g && ci_l < g.Cin_g) {
      // weight [Cin][Cout_g][KH][KW], contiguous (the launcher makes it so).
      v = w[(((grp * g.Cin_g + ci_l) * g.Cout_g + co) * g.KH + ky) * g.KW + kx];
      if constexpr (kSplit) {
        uint32_t big, small;
        mma::split_tf32(v, big, small);
        v = __uint_as_float(part == 0 ? big : small);
      } else if constexpr (kRoundTf32) {
        v = __uint_as_float(mma::to_tf32(v));
      }
    }
    wp[idx] = v;
  }
}

// ---- input staging: a square transpose in registers ---------------------------------
// A thread loads VEC consecutive pixels of each of the quantum's EPQ channels (EPQ = VEC:
// 16-byte loads, NCHW) and writes VEC quanta, one per pixel (16-byte stores, K-major).

template <typename T>
struct Stage;

template <>
struct Stage<float> {
  static constexpr int kVec = 4;
  // channels_last: one pixel's 4 consecutive channels are already a quantum; round them.
  __device__ __forceinline__ static uint4 pixel(const uint4& u) {
    return make_uint4(mma::to_tf32(__uint_as_float(u.x)), mma::to_tf32(__uint_as_float(u.y)),
                      mma::to_tf32(__uint_as_float(u.z)), mma::to_tf32(__uint_as_float(u.w)));
  }
  // kAsync: the quantum of slot `slot` from raw [element][slot] rows `pitch` slots long.
  __device__ __forceinline__ static uint4 gather(const unsigned char* raw, int slot, int pitch) {
    const uint32_t* r = reinterpret_cast<const uint32_t*>(raw) + slot;
    return make_uint4(mma::to_tf32(__uint_as_float(r[0])), mma::to_tf32(__uint_as_float(r[pitch])),
                      mma::to_tf32(__uint_as_float(r[2 * pitch])), mma::to_tf32(__uint_as_float(r[3 * pitch])));
  }
  // kSplit (3xTF32): the same quantum as big + small TF32 parts (mma::split_tf32).
  __device__ __forceinline__ static void gather_split(const unsigned char* raw, int slot, int pitch, uint4& big,
                                                      uint4& small) {
    const float* r = reinterpret_cast<const float*>(raw) + slot;
    mma::split_tf32(r[0], big.x, small.x);
    mma::split_tf32(r[pitch], big.y, small.y);
    mma::split_tf32(r[2 * pitch], big.z, small.z);
    mma::split_tf32(r[3 * pitch], big.w, small.w);
  }
  // quantum k = channels 0..3 of pixel k, rounded to TF32.
  __device__ __forceinline__ static uint4 quantum(const uint4 (&v)[4], int k) {
    auto el = [&](const uint4& u) {
      const uint32_t w = k == 0 ? u.x : (k == 1 ? u.y : (k == 2 ? u.z : u.w));
      return mma::to_tf32(__uint_as_float(w));
    };
    return make_uint4(el(v[0]), el(v[1]), el(v[2]), el(v[3]));
  }
};

template <typename T16>
struct Stage16 {
  static constexpr int kVec = 8;
  __device__ __forceinline__ static uint4 pixel(const uint4& u) { return u; }
  // kAsync: the quantum of slot `slot` from raw [element][slot] rows `pitch` slots long.
  __device__ __forceinline__ static uint4 gather(const unsigned char* raw, int slot, int pitch) {
    const uint16_t* r = reinterpret_cast<const uint16_t*>(raw) + slot;
    auto word = [&](int i) {
      return static_cast<uint32_t>(r[2 * i * pitch]) | (static_cast<uint32_t>(r[(2 * i + 1) * pitch]) << 16);
    };
    return make_uint4(word(0), word(1), word(2), word(3));
  }
  // quantum k = channels 0..7 of pixel k; word i = (channel 2i, 2i+1), low half first.
  __device__ __forceinline__ static uint4 quantum(const uint4 (&v)[8], int k) {
    const uint32_t sel = (k & 1) ? 0x7632 : 0x5410;
    auto word = [&](const uint4& u) {
      const int w = k >> 1;
      return w == 0 ? u.x : (w == 1 ? u.y : (w == 2 ? u.z : u.w));
    };
    return make_uint4(__byte_perm(word(v[0]), word(v[1]), sel), __byte_perm(word(v[2]), word(v[3]), sel),
                      __byte_perm(word(v[4]), word(v[5]), sel), __byte_perm(word(v[6]), word(v[7]), sel));
  }
};
template <>
struct Stage<c10::BFloat16> : Stage16<c10::BFloat16> {};

// VEC = 16 / sizeof(T) consecutive elements of one row as a 16-byte vector, from an address
// that need not be 16-byte aligned (NCHW rows whose width is not a multiple of VEC), with
// the elements at or past `n` (the row's end) read as zero. Element loads: 4x (fp32) or 8x
// (16-bit) the load instructions of one 16-byte load, the price of unaligned rows.
template <typename T>
__device__ __forceinline__ uint4 load_elems(const T* src, int n) {
  uint32_t w[4];
  if constexpr (sizeof(T) == 4) {
    const uint32_t* s = reinterpret_cast<const uint32_t*>(src);
#pragma unroll
    for (int j = 0; j < 4; ++j) w[j] = j < n ? s[j] : 0u;
  } else {
    const uint16_t* s = reinterpret_cast<const uint16_t*>(src);
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const uint32_t lo = 2 * j < n ? s[2 * j] : 0u, hi = 2 * j + 1 < n ? s[2 * j + 1] : 0u;
      w[j] = lo | (hi << 16);
    }
  }
  return make_uint4(w[0], w[1], w[2], w[3]);
}
template <>
struct Stage<c10::Half> : Stage16<c10::Half> {};

// ---- the kernel ----------------------------------------------------------------------------
// The tap loop builds its descriptors with wgmma::desc_lo (wgmma.cuh says why that is exact)
// rather than wgmma::advance (a 64-bit add), which ptxas emitted as a 64-bit add with carry, a
// mask of the offset and moves of both words into uniform registers per MMA: 16.5 instructions
// per HGMMA in the 4x unrolled tap loop, 21 in its remainder; 9.75 and 13.7 with desc_lo (every
// type and staging variant, cuobjdump -sass). What is left per HGMMA is mostly ptxas staging the
// descriptor pair in uniform registers (R2UR of the input's words, the constant high words
// rewritten, a NOP). Tried and not kept: descriptors precomputed per block (ptxas moved them to
// vector registers: +20 registers and a spill in the bf16 channels_last register variant), the
// input's tap offsets as uniform running sums over (my, mx) (fewer per HGMMA for rows of 4+ taps,
// more for 3-wide kernels). The high word (stride byte offset) stays the chunk's.
using wgmma::desc_lo;
static_assert(kSmemMax + 8 * 1024 < (1 << 18), "descriptor start addresses must fit 14 bits of 16 bytes");

// Two adjacent output elements as one 8-byte (fp32) or 4-byte (16-bit) store; `o` is
// aligned to two elements.
template <typename T>
__device__ __forceinline__ void store_pair(T* o, float x, float y) {
  if constexpr (std::is_same_v<T, float>) {
    *reinterpret_cast<float2*>(o) = make_float2(x, y);
  } else {
    const T lo = static_cast<T>(x), hi = static_cast<T>(y);
    *reinterpret_cast<uint32_t*>(o) = static_cast<uint32_t>(lo.x) | (static_cast<uint32_t>(hi.x) << 16);
  }
}


// WG_CO x WG_PX warpgroups: WG_CO tiles of 64 output channels x WG_PX tiles of PX pixels
// (PX = 256: one m64n256 MMA per tap, 128 accumulators per thread; PX = 128: m64n128, 64
// accumulators, so that blocks of four warpgroups fit the register file: twice the warps per
// multiprocessor for the same 512-pixel tile, or two on a 256-pixel tile; block_shape says where).
// kCL: input NHWC (channels_last, Cin and Cin_g multiples of the 16-byte quantum) and an
// output whose channel stride is 1: a pixel's channels are loaded as ready K quanta (no
// transpose) and the epilogue writes a pixel's channels with consecutive lanes.
// kElemLoads (NCHW only): rows need not be 16-byte aligned (W not a multiple of VEC, as in
// grad_input's grad_output of width W + 2 for a 3-wide kernel): element loads, masked at
// the row's end. kAsync (NCHW): the cp.async raw stages above, in 16-byte pieces (aligned rows)
// or, with kElemLoads, 4-byte pieces (rows whose starts are 4-byte aligned).
// kTma (with kCL and kAsync, tiles not tall): each raw stage is one tensor-map box per K
// quantum (tensor_map.cuh), [slot][16 B], which is the MMA's tile itself, issued by
// thread 0 and completing on the stage's mbarrier, in place of every thread's cp.asyncs and
// their per-slot address math; the box starts at the tile's first input column (no shift) and
// the map zero-fills outside the image. (NCHW boxes, [channel][slot] for the block's
// transpose, faulted with an illegal instruction on the H100: perf-notes-forward, run DF.)
// float32 input reaches the TF32 MMAs unrounded (the MMA ignores the low 13 mantissa bits,
// i.e. truncates; the weights are still rounded to nearest when packed): no pass over the
// tile, whose in-place rounding after the copies was slower than the register staging (run
// BN). The relative error stays within the TF32 tolerance (run DI).
// Two-block shapes (two m64n128 warpgroups): at most 128 registers per thread, so that two
// blocks fit a multiprocessor's register file.
// kSplit (3xTF32, strict float32): one block per multiprocessor, for the second accumulator set.
template <int WG_CO, int WG_PX, int PX, bool kSplit = false>
constexpr int kMinBlocks = (WG_CO * WG_PX == 2 && PX == 128 && !kSplit) ? 2 : 1;

// kSplit: float32 at fp32 accuracy (cudnn.allow_tf32 off) by 3xTF32, x = big + small in TF32
// (mma.cuh): per tap three MMAs, A_small B_big + A_big B_small + A_big B_big, on a big and a
// small copy of the input tile (the block's transpose splits each value) and of the packed
// weights (pack_weights_wgmma). The chunk's products go into their own accumulators, added to
// the running sum in fp32 after the chunk's MMAs (the tensor core's accumulation truncates:
// chained over a long K that bias exceeded 1e-5 on the mma.sync kernel, mma.cuh). NCHW cp.async
// tiles, two m64n128 warpgroups, one block per multiprocessor (64 + 64 accumulators).
template <typename T, int WG_CO, int WG_PX, bool kCL, bool kElemLoads, bool kAsync, int PX, bool kTma = false,
          bool kCols = false, bool kSplit = false>
__global__ void __launch_bounds__(128 * WG_CO * WG_PX, (kMinBlocks<WG_CO, WG_PX, PX, kSplit>))
    wgmma_fwd_kernel(const T* __restrict__ in, const uint4* __restrict__ wp,
                     const T* __restrict__ bias, T* __restrict__ out, const WgParams p,
                     const __grid_constant__ CUtensorMap in_map) {
#ifdef CONVT_SM90A_DEVICE
  constexpr int kThreads = 128 * WG_CO * WG_PX;
  constexpr int BMCO = 64 * WG_CO;  // output channels per block
  extern __shared__ __align__(128) unsigned char smem[];
  __shared__ int s_tap_off[kMaxTaps];  // slot offset of each tap in the input tile
  __shared__ uint64_t s_wbar[2];       // per stage: the chunk's weights have landed
  __shared__ uint64_t s_rbar[kTma ? kMaxRawStages : 1];  // kTma: per raw stage, its input landed
  static_assert(!kTma || (kCL && kAsync), "tensor-map tiles: channels_last");
  static_assert(!kSplit || (std::is_same_v<T, float> && !kCL && kAsync && !kTma && !kCols && WG_CO == 1 && PX == 128),
                "3xTF32: float NCHW cp.async tiles, m64n128 warpgroups");
  const Geometry& g = p.g;

  // The block's output-channel tile; its work items w = ph + nph * (tile + tiles * z), the
  // digits of tile_grid (phase fastest, then the tile, then image block and group). A block
  // takes w_first, w_first + w_step, ...: one item on a grid of every tile (w_step = all
  // items), a strided share on a persistent grid (WgParams::persist), whose items then cycle
  // through the phases, so that phases of few taps (or none) do not leave blocks idle.
  // (kCols: the items' phase digit is the row phase alone; every column phase is in the block.)
  static_assert(!kCols || (!kCL && kAsync && WG_CO == 1 && PX == 128 && WG_PX <= kMaxColPhases),
                "column-phase blocks: NCHW cp.async tiles, one m64n128 warpgroup per column phase");
  const int nph = kCols ? p.SH : p.SH * p.SW;
  const int co_tile = blockIdx.y;
  const int w_total = p.w_total;
  const int w_first = static_cast<int>(blockIdx.x) + nph * p.tiles * static_cast<int>(blockIdx.z);
  if (w_first >= w_total) return;

  // A work item's tile. Tall tiles: the tile's first virtual output row v0; every image of
  // the batch, the whole phase width (decode_tile's rows and images do not apply).
  // kCols: ph is the row phase ry, b the tile as column phase cols_rx[0] sees it (its rows and
  // images are every column phase's), tx0 the tile's first column in phase units (tile_x *
  // TX), ntaps the row phase's taps (each warpgroup's phase has column taps), and the tile is
  // empty only past the row phase's extent.
  struct WorkTile {
    BlockTile b;
    int v0, ph, ntaps, tx0;
  };
  auto tile_of = [&](int w) -> WorkTile {
    const int ph = w % nph, rest = w / nph;
    const int z = rest / p.tiles, tile = rest - z * p.tiles;
    WorkTile t{decode_tile(p, tile, kCols ? ph * p.SW + p.cols_rx[0] : ph, z), 0, ph, 0,
               (tile % p.tiles_x) * p.TX};
    t.ntaps = t.b.ay.ntaps * t.b.ax.ntaps;
    if (kCols) {
      t.ntaps = t.b.ay.ntaps;
      t.b.empty = t.b.ay.jlo + t.b.ay.count - t.b.j0y <= 0;
    }
    if (p.tall) {
      t.v0 = tile * p.TY;
      t.b.nimg0 = 0;
      t.b.nimg = static_cast<int>(g.N);
      t.b.j0y = t.b.ay.jlo;
      t.b.j0x = t.b.ax.jlo;
      t.b.empty = t.b.ay.count <= 0 || t.b.ax.count <= 0;
      t.b.rows_left = t.b.ay.count;
      t.b.cols_left = t.b.ax.count < p.TX ? t.b.ax.count : p.TX;
    }
    return t;
  };

  const int tid = threadIdx.x;
  // Column-phase blocks: the warpgroup index broadcast from lane 0 (CUTLASS's
  // canonical_warp_group_idx), so that the compiler knows it is uniform across the warp.
  // Derived from threadIdx.x alone, their per-warpgroup tap count (my_ntaps) looked divergent,
  // and ptxas serialized every MMA behind it (advisory C7520: a wait after each HGMMA, 8
  // WARPGROUP.DEPBAR where 1 is needed). The other variants keep tid / 128 (same code as before).
  const int wg = kCols ? __shfl_sync(0xffffffffu, tid / 128, 0) : tid / 128, wl = tid % 128;
  const int wg_co = wg % WG_CO, wg_px = wg / WG_CO;
  const int warp = wl / 32, lane = wl % 32, gq = lane / 4, tq = lane % 4;

  static_assert(PX == 256 || PX == 128, "one m64n256 or m64n128 product per warpgroup");
  constexpr int kAcc = PX / 2;  // accumulators per thread

  if (tid == 0) {
    bulk::mbar_init(&s_wbar[0]);
    bulk::mbar_init(&s_wbar[1]);
    if constexpr (kTma)
      for (int r = 0; r < p.raw_stages; ++r) bulk::mbar_init(&s_rbar[r]);
    bulk::fence_mbar_init();
  }
  // The tap table of phase ph (slot offset of each tap in the input tile), written where a
  // tile's phase differs from the last one's: after the last tile's closing barrier (its
  // reads are done) and before the new tile's prologue barrier (the reads to come).
  // kCols: one table per warpgroup (its column phase), ntaps_pack entries apart.
  int table_ph = -1;
  auto write_tap_table = [&](int ph) {
    for (int i = 0; i < (kCols ? p.cols_np : 1); ++i) {
      const int ry = kCols ? ph : ph / p.SW, rx = kCols ? p.cols_rx[i] : ph % p.SW;
      const int nty = p.phase_y[ry].ntaps, ntx = p.phase_x[rx].ntaps;
      for (int t = tid; t < nty * ntx; t += kThreads) {
        const int my = t / ntx, mx = t % ntx;
        s_tap_off[i * p.taps_y * p.taps_x + t] = (nty - 1 - my) * p.ddy * p.P + (ntx - 1 - mx) * p.ddx;
      }
    }
    table_ph = ph;
  };

  // This thread's slot groups (VEC slots of one staged row; the same every chunk and every
  // tile), decoded once: -2 none (past the allocated slots), -1 zeros (past the staged
  // images), else img << 21 | row << 10 | xg: the staged image, row (tall: the staged row,
  // image 0) and column group. Each fits: slots_alloc <= 8 * 512, so a row holds < 1024
  // groups (VEC >= 4), a tile < 2048 rows and < 1024 images. (kTma: the boxes need none.)
  constexpr int VEC = Stage<T>::kVec;
  constexpr int kMaxGroups = 8 / VEC;  // slots_alloc <= 8 * kThreads (planner)
  int g_code[kMaxGroups];
#pragma unroll
  for (int i = 0; i < kMaxGroups; ++i) {
    const int u = tid + i * kThreads;
    g_code[i] = u * VEC < p.slots_alloc ? -1 : -2;
    if (!kTma && u * VEC < p.slots_load) {
      const int groups_per_row = p.P / VEC, groups_per_img = p.img_stride / VEC;
      const int img = p.tall ? 0 : u / groups_per_img, rr = u - img * groups_per_img;
      const int row = rr / groups_per_row;
      g_code[i] = (img << 21) | (row << 10) | (rr - row * groups_per_row);
    }
  }

  // The epilogue's pixels of this thread (tile slots n_wg of its warpgroup, the same every
  // tile), decoded once: img << 20 | y << 10 | x for a slot inside the TY x TX window of its
  // image (x, y < 512 and img < 2048: the planner's tiles hold at most 512 slots), -1 for a
  // slot never stored (halo columns or rows). Tall tiles decode per tile (pixel_offset).
  // NCHW: slots 2 lane + 64 (m >> 1) + (m & 1) (pair_cols) or lane + 32 m of each half nb;
  // channels_last: warp + 4 lane of each half.
  constexpr int kPixPerHalf = kCL ? 1 : 4;
  auto epi_slot = [&](int nb, int m) -> int {
    if constexpr (kCL) return nb * 128 + warp + 4 * lane;
    return nb * 128 + (p.pair_cols ? 2 * lane + 64 * (m >> 1) + (m & 1) : lane + 32 * m);
  };
  int pix_code[PX / 128][kPixPerHalf];
#pragma unroll
  for (int nb = 0; nb < PX / 128; ++nb)
#pragma unroll
    for (int m = 0; m < kPixPerHalf; ++m) {
      const int n = wg_px * PX + epi_slot(nb, m);
      const int img = n / p.img_stride, r = n - img * p.img_stride;
      const int y = r / p.P, x = r - y * p.P;
      pix_code[nb][m] = (!p.tall && y < p.TY && x < p.TX) ? (img << 20) | (y << 10) | x : -1;
    }

  const int ntaps_pack = p.taps_y * p.taps_x;
  const int64_t chunk_words = static_cast<int64_t>(ntaps_pack) * kQuanta * BMCO;  // uint4 (per part, kSplit)
  constexpr int kParts = kSplit ? 2 : 1;  // packed weight blocks per chunk (kSplit: big, small)
  const int64_t HW = g.H * g.W;
  const uint32_t smem_base = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
  const int n = p.nchunks;
  const int R = p.raw_stages;

  // What a tile's loads need: its input origin, group, weights and (per-thread variants) the
  // element offset of each slot group's first pixel in the group's input (-1 zeros, -2 none)
  // with its valid columns (kElemLoads).
  // (Kept small: the next tile's is live through this tile's main loop, beside the
  // accumulators, on blocks of at most 128 registers per thread.)
  struct Load {
    int64_t goff[kMaxGroups];  // element offsets from `in` (group and image included)
    int nvalid[kMaxGroups];
    int ix0, iy0, nimg0;       // the tile's input origin (fits: H, W, N < 2^31, the launcher)
    int grp, ph, ntaps, shift; // shift: the tile's first column sits `shift` slots into its row
  };
  auto make_load = [&](const WorkTile& t) -> Load {
    Load L;
    L.grp = t.b.grp;
    L.ph = t.ph;
    L.ntaps = t.ntaps;
    L.nimg0 = static_cast<int>(t.b.nimg0);
    const int halo_y = (t.b.ay.ntaps - 1) * p.ddy, halo_x = (t.b.ax.ntaps - 1) * p.ddx;
    L.iy0 = static_cast<int>(t.b.j0y + t.b.ay.base - halo_y);  // input origin of the tile
    L.ix0 = static_cast<int>(kCols ? t.tx0 + p.cols_lo : t.b.j0x + t.b.ax.base - halo_x);
    // Columns start at a multiple of VEC (x_al). (kTma: the box starts at ix0 itself.)
    const int x_al = kTma ? L.ix0 : floor_div<int>(L.ix0, VEC) * VEC;
    L.shift = L.ix0 - x_al;
    const int64_t g_base = kCL ? t.b.nimg0 * HW * g.Cin + static_cast<int64_t>(L.grp) * g.Cin_g
                               : (t.b.nimg0 * g.Cin + static_cast<int64_t>(L.grp) * g.Cin_g) * HW;
#pragma unroll
    for (int i = 0; i < kMaxGroups; ++i) {
      L.nvalid[i] = 0;
      L.goff[i] = g_code[i] == -2 ? -2 : -1;
      if (!kTma && g_code[i] >= 0) {
        int img = g_code[i] >> 21, row = (g_code[i] >> 10) & 2047;
        if (p.tall) {
          // Staged row sr is virtual row v0 + sr: image v / R, local row v % R.
          const int v = t.v0 + row;
          img = v / p.R;
          row = v - img * p.R;
        }
        const int64_t iy = static_cast<int64_t>(L.iy0) + row;
        const int64_t ix = x_al + static_cast<int64_t>(g_code[i] & 1023) * VEC;
        // ix is a multiple of VEC: a group with ix >= 0 starts inside the row; with
        // W % VEC == 0 it also ends inside, else nvalid masks the pixels past the end.
        if (img < t.b.nimg && iy >= 0 && iy < g.H && ix >= 0 && ix < g.W) {
          L.nvalid[i] = static_cast<int>(std::min<int64_t>(VEC, g.W - ix));
          L.goff[i] = g_base + (kCL ? ((static_cast<int64_t>(img) * g.H + iy) * g.W + ix) * g.Cin
                                    : static_cast<int64_t>(img) * g.Cin * HW + iy * g.W + ix);
        }
      }
    }
    return L;
  };
  // The packed weights of chunk c of tile L's group and phase ph (ry * SW + rx), this block's
  // channel tile.
  auto weights_of = [&](const Load& L, int ph, int c) -> const uint4* {
    return wp + (((static_cast<int64_t>(L.grp) * p.SH * p.SW + ph) * p.co_tiles + co_tile) * p.nchunks + c) *
                    chunk_words * kParts;
  };

  // kAsync: raw stage s, [quantum][element][slot] (NCHW: 16 bytes per slot group and channel,
  // so a warp's pieces are consecutive 16-byte words: no bank conflict) or the MMA's tile
  // itself (channels_last). Chunks go through the raw stages in order, across tiles too, so
  // the stage of the next chunk to issue and of the next one to use are running counters.
  auto raw_stage = [&](int s) -> unsigned char* { return smem + p.raw_base + s * p.tile_bytes; };
  int issue_slot = 0, use_slot = 0;
  uint32_t use_parity = 0;  // kTma: the phase of use_slot's barrier
  auto advance = [&](int& s) { s = s + 1 == R ? 0 : s + 1; };
  // Waits until this thread's copies of all but the newest R - 2 chunks landed.
  auto raw_wait = [&]() {
    if (R == 2) {
      mma::cp_async_wait<0>();
    } else if (R == 3) {
      mma::cp_async_wait<1>();
    } else {
      mma::cp_async_wait<2>();
    }
  };
  auto raw_offset = [&](int u, int q, int e) -> int {
    return ((q * VEC + e) * p.slots_alloc + u * VEC) * static_cast<int>(sizeof(T));
  };
  // Calls body(i, u, q, ch0) for this thread's pieces of chunk c: slot group i (its first
  // slot u * VEC) and quantum q (its first channel ch0), skipping groups past the slots.
  auto for_each_piece = [&](const Load& L, int c, auto&& body) {
#pragma unroll
    for (int i = 0; i < kMaxGroups; ++i) {
      if (L.goff[i] == -2) continue;
      const int u = tid + i * kThreads;
#pragma unroll
      for (int q = 0; q < kQuanta; ++q) body(i, u, q, (c * kQuanta + q) * VEC);
    }
  };
  // Copies chunk c of tile L into the next raw stage (zeros outside the image); with
  // cp.async, then commits one group. kTma: one box per quantum, channels grp * Cin_g +
  // (c * kQuanta + q) * VEC onwards, the tile's input columns, rows and images (zeros outside
  // the tensor), each filling its quantum plane's first slots_load slots.
  auto issue_raw = [&](const Load& L, int c) {
    unsigned char* raw = raw_stage(issue_slot);
    if constexpr (kTma) {
      if (tid == 0) {
        uint64_t* bar = &s_rbar[issue_slot];
        tma::expect_bytes(bar, static_cast<uint32_t>(kQuanta * p.slots_load * 16));
#pragma unroll
        for (int q = 0; q < kQuanta; ++q)
          tma::load_4d(raw + q * p.slots_alloc * 16, &in_map,
                       static_cast<int>(L.grp * g.Cin_g + (c * kQuanta + q) * VEC), L.ix0, L.iy0, L.nimg0, bar);
      }
    } else {
      for_each_piece(L, c, [&](int i, int u, int q, int ch0) {
        if constexpr (kCL) {
          // channels_last: pixel k's channels ch0 .. ch0 + VEC - 1 are 16 contiguous bytes
          // (Cin_g % VEC == 0), already the tile's K quantum: copied straight into the
          // tile [quantum][slot][16 B]; pixels past the row's end read as zero.
          const bool ok = L.goff[i] >= 0 && ch0 < g.Cin_g;
          const T* src = in + L.goff[i] + ch0;
#pragma unroll
          for (int k = 0; k < VEC; ++k)
            mma::cp_async16(raw + (q * p.slots_alloc + u * VEC + k) * 16,
                            ok && k < L.nvalid[i] ? src + static_cast<int64_t>(k) * g.Cin : in,
                            ok && k < L.nvalid[i]);
        } else {
#pragma unroll
          for (int e = 0; e < VEC; ++e) {
            const bool ok = L.goff[i] >= 0 && ch0 + e < g.Cin_g;
            const T* src = ok ? in + L.goff[i] + static_cast<int64_t>(ch0 + e) * HW : in;
            if constexpr (kElemLoads) {
              // Rows not 16-byte aligned: four 4-byte copies (1 fp32 or 2 16-bit elements;
              // the launcher requires even widths for 16-bit), zero-filled past the row's end.
              constexpr int kPerWord = 4 / static_cast<int>(sizeof(T));
              const int nv = ok ? L.nvalid[i] : 0;
#pragma unroll
              for (int j = 0; j < 4; ++j) {
                const bool wok = j * kPerWord < nv;
                mma::cp_async4(raw + raw_offset(u, q, e) + 4 * j, wok ? src + j * kPerWord : in, wok);
              }
            } else {
              mma::cp_async16(raw + raw_offset(u, q, e), src, ok);
            }
          }
        }
      });
      mma::cp_async_commit();
    }
    advance(issue_slot);
  };

  // Weights of chunk c into stage buf (one bulk copy, completing on s_wbar[buf]: the first
  // ntaps of the packed chunk, this phase's taps), and the chunk's input tile: NCHW kAsync,
  // the block's transpose of the next raw stage; register staging, loads and transpose.
  auto load_chunk = [&](const Load& L, int c, int buf) {
    unsigned char* stage = smem + buf * p.stage_bytes;
    uint4* s_tile = reinterpret_cast<uint4*>(stage);
    uint4* s_w = reinterpret_cast<uint4*>(stage + p.w_offset);
    if constexpr (kCols) {
      // Each warpgroup's column phase: its weights one packed block (chunk_words) apart.
      if (tid == 0) {
        const int nty = p.phase_y[L.ph].ntaps;
        uint32_t total = 0;
        for (int i = 0; i < p.cols_np; ++i) total += nty * p.phase_x[p.cols_rx[i]].ntaps * kQuanta * BMCO * 16;
        bulk::arrive_expect(&s_wbar[buf], total);
        for (int i = 0; i < p.cols_np; ++i)
          bulk::copy_g2s_only(s_w + i * chunk_words, weights_of(L, L.ph * p.SW + p.cols_rx[i], c),
                              static_cast<uint32_t>(nty * p.phase_x[p.cols_rx[i]].ntaps * kQuanta * BMCO * 16),
                              &s_wbar[buf]);
      }
    } else if constexpr (kSplit) {
      // The big and the small part, each the phase's taps of its block, to s_w and one
      // packed block (chunk_words) further in the stage.
      if (tid == 0) {
        const uint32_t bytes = static_cast<uint32_t>(L.ntaps * kQuanta * BMCO * 16);
        const uint4* src = weights_of(L, L.ph, c);
        bulk::arrive_expect(&s_wbar[buf], 2 * bytes);
        bulk::copy_g2s_only(s_w, src, bytes, &s_wbar[buf]);
        bulk::copy_g2s_only(s_w + chunk_words, src + chunk_words, bytes, &s_wbar[buf]);
      }
    } else if (tid == 0) {
      bulk::copy_g2s(s_w, weights_of(L, L.ph, c), static_cast<uint32_t>(L.ntaps * kQuanta * BMCO * 16),
                     &s_wbar[buf]);
    }
    if constexpr (kAsync && kCL) {
      // The tile is the raw stage itself (issue_raw), nothing to stage.
    } else if constexpr (kAsync) {
      // Raw [quantum][element][slot] -> tile [quantum][slot][16 B], one slot per thread.
      // Chunk c landed in every thread's pieces before the last barrier.
      const unsigned char* rs = raw_stage(use_slot);
      advance(use_slot);
#pragma unroll
      for (int q = 0; q < kQuanta; ++q) {
        const unsigned char* rq = rs + q * VEC * p.slots_alloc * static_cast<int>(sizeof(T));
        uint4* tq_ = s_tile + q * p.slots_alloc;
        if constexpr (kSplit) {
          // The small parts' tile right after the big parts' (kQuanta planes further).
          uint4* tq_small = tq_ + kQuanta * p.slots_alloc;
          for (int slot = tid; slot < p.slots_alloc; slot += kThreads)
            Stage<T>::gather_split(rq, slot, p.slots_alloc, tq_[slot], tq_small[slot]);
        } else {
          for (int slot = tid; slot < p.slots_alloc; slot += kThreads)
            tq_[slot] = Stage<T>::gather(rq, slot, p.slots_alloc);
        }
      }
    } else {
      // Input: per slot group and quantum, EPQ 16-byte loads (all issued before the
      // transpose uses them) and VEC 16-byte stores.
      for_each_piece(L, c, [&](int i, int u, int q, int ch0) {
        uint4 v[VEC];
        uint4* dst = s_tile + q * p.slots_alloc + u * VEC;
        if constexpr (kCL) {
          // Pixel k's channels ch0..ch0+VEC-1: 16 contiguous bytes (Cin_g % VEC == 0).
          // Pixels past the row's end (W % VEC != 0) read as zero.
          const bool ok = L.goff[i] >= 0 && ch0 < g.Cin_g;
#pragma unroll
          for (int k = 0; k < VEC; ++k)
            v[k] = ok && k < L.nvalid[i]
                       ? *reinterpret_cast<const uint4*>(in + L.goff[i] + static_cast<int64_t>(k) * g.Cin + ch0)
                       : make_uint4(0, 0, 0, 0);
#pragma unroll
          for (int k = 0; k < VEC; ++k) dst[k] = Stage<T>::pixel(v[k]);
        } else {
#pragma unroll
          for (int e = 0; e < VEC; ++e) {
            const bool ok = L.goff[i] >= 0 && ch0 + e < g.Cin_g;
            const T* src = in + L.goff[i] + static_cast<int64_t>(ch0 + e) * HW;
            if constexpr (kElemLoads) {
              v[e] = load_elems(src, ok ? L.nvalid[i] : 0);
            } else {
              v[e] = ok ? *reinterpret_cast<const uint4*>(src) : make_uint4(0, 0, 0, 0);
            }
          }
#pragma unroll
          for (int k = 0; k < VEC; ++k) dst[k] = Stage<T>::quantum(v, k);
        }
      });
    }
  };

  __syncthreads();  // tap table, barriers

  uint32_t w_parity = 0;  // bit b: the phase of s_wbar[b]'s next completion
  bool pre = false;  // the tile's first chunks were issued during the previous tile
  Load cur, nxt;
  // (The tiles are decoded again where needed rather than kept: registers, see Load.)
  for (int w = w_first; w < w_total; w += p.w_step) {
    const int w_next = w + p.w_step;
    bool empty, next_pre = false;
    int ntaps = 0;
    {
      const WorkTile t = tile_of(w);
      empty = t.b.empty;
      ntaps = t.ntaps;
      if (!empty) cur = pre ? nxt : make_load(t);
      if (!empty && ntaps > 0 && t.ph != table_ph) write_tap_table(t.ph);
      // Persistent blocks issue the next tile's first chunks while this tile's last ones are
      // computed, so that they land during this tile's epilogue (the raw stages lie outside
      // the epilogue's staging: make_plan). kAsync only, and where both tiles have taps; the
      // plan keeps the lead (R or R - 1 chunks) within one tile.
      if (kAsync && ntaps > 0 && !empty && w_next < w_total) {
        const WorkTile tn = tile_of(w_next);
        next_pre = !tn.b.empty && tn.ntaps > 0;
        if (next_pre) nxt = make_load(tn);
      }
    }
    if (!empty) {
      // Issues chunk k of the stream from this tile's chunk 0 on: this tile's, then the next
      // tile's, else an empty group (cp.async: the group count per iteration stays fixed).
      auto issue_at = [&](int k) {
        if (k < n) {
          issue_raw(cur, k);
        } else if (next_pre) {
          issue_raw(nxt, k - n);
        } else if constexpr (!kTma) {
          mma::cp_async_commit();
        }
      };

      // acc[4j + 2h + e] = D[co 16w + lane/4 + 8h][pixel 8j + 2(lane%4) + e], j < PX / 8: one
      // m64nPX product per warpgroup.
      float acc[kAcc];
#pragma unroll
      for (int i = 0; i < kAcc; ++i) acc[i] = 0.f;
      // kSplit: the current chunk's products (added into acc in fp32 after the chunk).
      float part[kSplit ? kAcc : 1];
#pragma unroll
      for (int i = 0; i < (kSplit ? kAcc : 1); ++i) part[i] = 0.f;

      if (ntaps > 0) {
        if constexpr (kTma) {
          // Chunks 0 .. R - 2 in flight; each iteration waits on its own stage's barrier.
          if (!pre)
            for (int c = 0; c < R - 1; ++c) issue_at(c);
        } else if constexpr (kAsync) {
          // Chunks 0 .. R - 2 in flight; chunk 0 landed (own pieces) and visible (barrier).
          // (Prefetched: they were issued and chunk 0 (NCHW: 0 and 1) waited for during the
          // previous tile; the barrier after its epilogue made them visible.)
          if (!pre) {
            for (int c = 0; c < R - 1; ++c) issue_at(c);
            raw_wait();
            __syncthreads();
          }
        }
        load_chunk(cur, 0, 0);
        if constexpr (kAsync && !kCL) {
          if (!pre) {
            issue_at(R - 1);
            raw_wait();  // chunk 1 (made visible by the barrier below)
          }
        }
        wgmma::fence_proxy_async();
        __syncthreads();

        const uint32_t a_lbo = BMCO * 16, b_lbo = p.slots_alloc * 16;
        // kCols: this warpgroup's column phase: its weights (one packed block per warpgroup),
        // taps, tap table and first input column; its output slots are every warpgroup's.
        const int my_ntaps = kCols ? ntaps * p.phase_x[p.cols_rx[wg_px]].ntaps : ntaps;
        const int* my_tap_off = s_tap_off + (kCols ? wg_px * ntaps_pack : 0);
        const int b_slot = kCols ? cur.shift + p.cols_d[wg_px] : wg_px * PX + cur.shift;
        const uint32_t a_off = kCols ? static_cast<uint32_t>(wg_px * chunk_words * 16) : 0u;
        for (int c = 0; c < n; ++c) {
          const int buf = c & 1;
          const uint32_t st = smem_base + buf * p.stage_bytes;
          const uint32_t tile = (kAsync && kCL) ? smem_base + p.raw_base + use_slot * p.tile_bytes : st;
          if constexpr (kTma) bulk::mbar_wait(&s_rbar[use_slot], use_parity);  // chunk c's input landed
          if constexpr (kAsync && kCL) {
            advance(use_slot);
            if (kTma && use_slot == 0) use_parity ^= 1u;
          }
          // The chunk's descriptors, built once; per tap only the start-address field moves, by a
          // 32-bit add to the low word (desc_lo, above the kernel, says why that add is exact).
          const uint64_t a0 = wgmma::make_desc(st + p.w_offset + a_off + wg_co * 64 * 16, a_lbo, 128);
          const uint64_t b0 = wgmma::make_desc(tile + b_slot * 16, b_lbo, 128);
          const uint32_t a0_lo = static_cast<uint32_t>(a0), b0_lo = static_cast<uint32_t>(b0);
          bulk::mbar_wait(&s_wbar[buf], (w_parity >> buf) & 1u);  // this chunk's weights
          w_parity ^= 1u << buf;
          wgmma::fence();
          for (int tp = 0; tp < my_ntaps; ++tp) {
            // Tap tp's weights are tp * kQuanta * BMCO * 16 bytes into the stage; its input view
            // starts s_tap_off[tp] slots (16 bytes each: already in descriptor units) further on.
            const uint32_t a_lo = a0_lo + tp * ((kQuanta * BMCO * 16) >> 4), b_lo = b0_lo + my_tap_off[tp];
            const uint64_t a = desc_lo(a0, a_lo);
            const uint64_t b = desc_lo(b0, b_lo);
            if constexpr (kSplit) {
              // The small parts: the weights' one packed block on, the input's kQuanta planes on
              // (16-byte units). Small terms first, the big product last.
              const uint64_t a_small = desc_lo(a0, a_lo + static_cast<uint32_t>(chunk_words));
              const uint64_t b_small = desc_lo(b0, b_lo + kQuanta * p.slots_alloc);
              wgmma::mma<T, PX>(part, a_small, b);
              wgmma::mma<T, PX>(part, a, b_small);
              wgmma::mma<T, PX>(part, a, b);
            } else {
              wgmma::mma<T, PX>(acc, a, b);
            }
          }
          wgmma::commit();
          if (c + 1 < n) {
            load_chunk(cur, c + 1, buf ^ 1);  // the other stage: its MMAs (chunk c-1) are done
            wgmma::fence_proxy_async();
          }
          if constexpr (kTma) {
            // Into the tile of chunk c - 1, whose MMAs finished before the last barrier (its
            // consumer, R - 1 chunks on, waits on the stage's barrier).
            issue_at(c + R - 1);
          } else if constexpr (kAsync && kCL) {
            // Into the tile of chunk c - 1, whose MMAs finished before the last barrier; then
            // chunk c + 1 must land before this iteration's closing barrier, its cp.async
            // writes ordered before the MMAs' async-proxy reads.
            issue_at(c + R - 1);
            raw_wait();
            wgmma::fence_proxy_async();
          } else if constexpr (kAsync) {
            // Into the raw stage of chunk c, which the block transposed before the last
            // barrier; then chunk c + 2 must land before this iteration's closing barrier.
            issue_at(c + R);
            raw_wait();
          }
          wgmma::wait<0>();
          if constexpr (kSplit) {
            // The chunk's sum into the running one, rounded to nearest (see kSplit).
#pragma unroll
            for (int i = 0; i < kAcc; ++i) {
              wgmma::fence_operand(part[i]);
              acc[i] += part[i];
              part[i] = 0.f;
            }
          }
          __syncthreads();
        }
#pragma unroll
        for (int i = 0; i < kAcc; ++i) wgmma::fence_operand(acc[i]);
        if constexpr (kAsync && !kTma) {
          if (!next_pre) mma::cp_async_wait<0>();  // (only empty groups are left)
        }
      }

      const WorkTile t = tile_of(w);
      const int grp = t.b.grp, nimg = t.b.nimg, rows_left = t.b.rows_left, cols_left = t.b.cols_left;
      const int64_t nimg0 = t.b.nimg0, j0y = t.b.j0y, j0x = t.b.j0x;
      // Output offset (without the channel) of epilogue pixel m of half nb, or -1 for a pixel
      // outside the phase image (slots past TX or TY, images past the batch).
      auto pixel_offset = [&](int nb, int m) -> int64_t {
        int img, y, x;
        if (p.tall) {
          // Slot rows past TY belong to the next tile's virtual rows.
          const int nn = wg_px * PX + epi_slot(nb, m);
          const int sr = nn / p.P, v = t.v0 + sr;
          x = nn - sr * p.P;
          img = v / p.R;
          y = v - img * p.R;
          if (sr >= p.TY) return -1;
        } else {
          const int code = pix_code[nb][m];
          if (code < 0) return -1;
          img = code >> 20;
          y = (code >> 10) & 1023;
          x = code & 1023;
        }
        if (img >= nimg || y >= rows_left || x >= cols_left) return -1;
        const int64_t oy = (j0y + y) * g.SH + t.b.ry - g.PH;
        const int64_t ox = (j0x + x) * g.SW + t.b.rx - g.PW;
        return (nimg0 + img) * p.out_s[0] + oy * p.out_s[2] + ox * p.out_s[3];
      };
      if constexpr (kCL) {
        // ---- channels_last epilogue, per half nb: accumulators -> shared memory ([pixel][co],
        // per warpgroup) -> global memory, a warp writing one pixel's 64 channels per store
        // (two per lane, consecutive), bias added, converted to T.
        float* s_out = reinterpret_cast<float*>(smem) + wg * (128 * kOutPitchCL);
        const int co_l = co_tile * BMCO + wg_co * 64 + 2 * lane;  // this lane's two channels
        const bool ok0 = co_l < g.Cout_g, ok1 = co_l + 1 < g.Cout_g;
        const int64_t co = static_cast<int64_t>(grp) * g.Cout_g + co_l;
        const float b0 = (bias != nullptr && ok0) ? static_cast<float>(bias[co]) : 0.f;
        const float b1 = (bias != nullptr && ok1) ? static_cast<float>(bias[co + 1]) : 0.f;
        T* o_co = out + co * p.out_s[1];
#pragma unroll
        for (int nb = 0; nb < PX / 128; ++nb) {
          __syncthreads();  // the tile (or the previous half) is no longer read
#pragma unroll
          for (int j = 0; j < 16; ++j)
#pragma unroll
            for (int h = 0; h < 2; ++h)
#pragma unroll
              for (int e = 0; e < 2; ++e)
                s_out[(8 * j + 2 * tq + e) * kOutPitchCL + warp * 16 + gq + 8 * h] = acc[64 * nb + 4 * j + 2 * h + e];
          __syncthreads();
          // The warp's 32 pixels are warp + 4k, k = 0..31; lane k decodes pixel k's offset.
          const int64_t my_off = pixel_offset(nb, 0);
          for (int k = 0; k < 32; ++k) {
            const int64_t off = __shfl_sync(0xffffffffu, my_off, k);
            if (off < 0) continue;  // the same for the whole warp
            const float2 v = *reinterpret_cast<const float2*>(s_out + (warp + 4 * k) * kOutPitchCL + 2 * lane);
            T* o = o_co + off;
            if (p.out_pairs && ok1) {
              store_pair(o, v.x + b0, v.y + b1);
            } else {
              if (ok0) o[0] = static_cast<T>(v.x + b0);
              if (ok1) o[p.out_s[1]] = static_cast<T>(v.y + b1);
            }
          }
        }
      } else if constexpr (kCols) {
        // ---- column-phase epilogue: accumulators -> shared memory ([warpgroup][co][slot]) ->
        // whole output rows. Phase pixel x of column phase rx is output column
        // col0 + x * SW + off(rx), off(rx) = jlo(rx) * SW + rx - PW in [0, SW) (a bijection),
        // so a row's outputs of the tile are TX * SW consecutive columns: a warp stores one
        // (channel, row) unit's columns with consecutive lanes, whole sectors, reading each
        // from its phase's warpgroup (zero for phases without taps). Each phase's own stores
        // would land every SW-th element, one piece per sector (ncu, run FD: fp32 kb1_81 NCHW
        // 5.4x channels_last's L2 write sectors, L2 at 81%).
        // Warpgroup w's staging starts w * skew floats past the previous one's 64 rows, so that
        // lanes reading the same x of different phases fall in different banks.
        const int SW = p.SW;
        const int skew = (32 / SW) & ~1;
        float* s_out = reinterpret_cast<float*>(smem) + wg * (64 * kOutPitch + skew);
#pragma unroll
        for (int j = 0; j < 16; ++j)
#pragma unroll
          for (int h = 0; h < 2; ++h)
            *reinterpret_cast<float2*>(s_out + (warp * 16 + gq + 8 * h) * kOutPitch + 8 * j + 2 * tq) =
                make_float2(acc[4 * j + 2 * h], acc[4 * j + 2 * h + 1]);

        // Where output column c of a channel row reads from, relative to the row's slot 0 of
        // warpgroup 0: warpgroup w's phase pixel x at w * (64 * kOutPitch + skew) + x, or -1
        // (a phase without taps: zero). The same for every row, so computed once per tile:
        // lane l's columns l + 32 k in registers where they are at most kMapRegs per lane
        // (TX * SW <= 32 kMapRegs), else a table in shared memory after the staging.
        constexpr int kMapRegs = 8;
        const int64_t col0 = static_cast<int64_t>(t.tx0) * SW;  // the tile's first output column
        const int ncols = static_cast<int>(std::min<int64_t>(static_cast<int64_t>(p.TX) * SW, g.Wout - col0));
        const int pw_mod = static_cast<int>(g.PW % SW);
        auto map_of = [&](int c) -> int {
          const int off = c % SW, x = c / SW;
          const int rx = off + pw_mod < SW ? off + pw_mod : off + pw_mod - SW;  // off = rx - PW (mod SW)
          const int wgi = p.cols_wg[rx];
          return wgi >= 0 ? wgi * (64 * kOutPitch + skew) + x : -1;
        };
        int* s_map = reinterpret_cast<int*>(smem + p.cols_map_offset);
        const bool in_regs = ncols <= 32 * kMapRegs;
        if (!in_regs)
          for (int c = tid; c < ncols; c += kThreads) s_map[c] = map_of(c);
        int m_reg[kMapRegs];
#pragma unroll
        for (int k = 0; k < kMapRegs; ++k) m_reg[k] = in_regs && lane + 32 * k < ncols ? map_of(lane + 32 * k) : -2;
        __syncthreads();  // the staging and the map

        // Each warp takes channel rows r = warp, warp + kWarps, ... of every (image, row) of the
        // tile, and stores a row's ncols outputs with consecutive lanes (whole sectors).
        constexpr int kWarps = kThreads / 32;
        const float* s_all = reinterpret_cast<const float*>(smem);
        const int rows = rows_left > 0 ? rows_left : 0;
        // Lane k holds the bias of the warp's k-th row (shuffled per row: a load per row would
        // put a memory latency before each row's stores).
        const int lane_co = co_tile * BMCO + tid / 32 + kWarps * lane;
        const float b_lane = (bias != nullptr && tid / 32 + kWarps * lane < BMCO && lane_co < g.Cout_g)
                                 ? static_cast<float>(bias[static_cast<int64_t>(grp) * g.Cout_g + lane_co])
                                 : 0.f;
        for (int ir = 0; ir < nimg * rows; ++ir) {
          const int img = ir / rows, y = ir - img * rows;
          const int64_t oy = (j0y + y) * g.SH + t.b.ry - g.PH;
          T* out_row = out + (nimg0 + img) * p.out_s[0] + oy * p.out_s[2] + col0;
          const float* s_row = s_all + img * p.img_stride + y * p.P;
          for (int r = tid / 32, k = 0; r < BMCO; r += kWarps, ++k) {
            const float b = __shfl_sync(0xffffffffu, b_lane, k);
            const int co_l = co_tile * BMCO + r;
            if (co_l >= g.Cout_g) break;  // (rows rise: the rest are past the group's channels)
            const int64_t co = static_cast<int64_t>(grp) * g.Cout_g + co_l;
            T* o = out_row + co * p.out_s[1];
            const float* src = s_row + r * kOutPitch;
            if (in_regs) {
#pragma unroll
              for (int k = 0; k < kMapRegs; ++k) {
                const int m = m_reg[k];  // -2: past the row's end
                if (m != -2) o[lane + 32 * k] = static_cast<T>((m >= 0 ? src[m] : 0.f) + b);
              }
            } else {
              for (int c = lane; c < ncols; c += 32) {
                const int m = s_map[c];
                o[c] = static_cast<T>((m >= 0 ? src[m] : 0.f) + b);
              }
            }
          }
        }
      } else {
        // ---- epilogue, per half nb: accumulators -> shared memory ([co][pixel]) -> global
        // memory, bias added, converted to T. A warp stages and stores only its own 16 rows
        // (co 16 warp .. +15 of its warpgroup), so a __syncwarp orders the two (the main loop's
        // last barrier already freed the stages). Where a phase's adjacent columns are adjacent
        // output elements (pair_cols), each lane owns two pixel pairs of the half, and a pair
        // that starts at an even element is one 2-element store: a warp covers 64 consecutive
        // pixels of a row per store.
        // Per store the address is a running row pointer plus a per-lane offset (ncu, run BM:
        // the element-per-lane version with its 64-bit address math per store was a third of
        // the kernel's instructions on bf16 kb1_57).
        // acc[64 nb + 4j + 2h + e] = D[co 16w + gq + 8h][pixel 128 nb + 8j + 2tq + e].
        float* s_out = reinterpret_cast<float*>(smem) + wg * (64 * kOutPitch);
        const int co_l0 = co_tile * BMCO + wg_co * 64 + warp * 16;  // the warp's first row
        const int rows = static_cast<int>(std::max<int64_t>(0, std::min<int64_t>(16, g.Cout_g - co_l0)));
        const int64_t co0 = static_cast<int64_t>(grp) * g.Cout_g + co_l0;
        // Lane r < rows holds row r's bias; shuffled to the warp per row.
        const float b_lane =
            (bias != nullptr && (lane & 15) < rows) ? static_cast<float>(bias[co0 + (lane & 15)]) : 0.f;
#pragma unroll
        for (int nb = 0; nb < PX / 128; ++nb) {
          __syncwarp();  // the previous half's rows are read
#pragma unroll
          for (int j = 0; j < 16; ++j)
#pragma unroll
            for (int h = 0; h < 2; ++h)
              *reinterpret_cast<float2*>(s_out + (warp * 16 + gq + 8 * h) * kOutPitch + 8 * j + 2 * tq) =
                  make_float2(acc[64 * nb + 4 * j + 2 * h], acc[64 * nb + 4 * j + 2 * h + 1]);
          __syncwarp();
          // This lane's 4 pixels of the half and their output offsets (-1: outside). Pair
          // mode: slots 2 lane + 64 k + e (k, e < 2), so that a lane holds two adjacent
          // pixels; otherwise slots lane + 32 m, so that a warp's store covers 32 consecutive
          // slots (the densest pattern a strided phase allows).
          int64_t off[4];
#pragma unroll
          for (int m = 0; m < 4; ++m) off[m] = pixel_offset(nb, m);
          int64_t row_off = co0 * p.out_s[1];
#pragma unroll 4
          for (int r = 0; r < 16; ++r, row_off += p.out_s[1]) {
            const float b = __shfl_sync(0xffffffffu, b_lane, r);
            if (r >= rows) break;  // the same for the whole warp
            const float* srow = s_out + (warp * 16 + r) * kOutPitch;
            T* o = out + row_off;
            if (p.pair_cols) {
#pragma unroll
              for (int k = 0; k < 2; ++k) {
                const float2 v = *reinterpret_cast<const float2*>(srow + 2 * lane + 64 * k);
                const int64_t a = off[2 * k], c = off[2 * k + 1];
                if (a >= 0 && c == a + 1 && ((row_off + a) & 1) == 0) {
                  store_pair(o + a, v.x + b, v.y + b);
                } else {
                  if (a >= 0) o[a] = static_cast<T>(v.x + b);
                  if (c >= 0) o[c] = static_cast<T>(v.y + b);
                }
              }
            } else {
#pragma unroll
              for (int m = 0; m < 4; ++m)
                if (off[m] >= 0) o[off[m]] = static_cast<T>(srow[lane + 32 * m] + b);
            }
          }
        }
      }
    }
    if (w_next >= w_total) break;
    // The staging is read by every warp before the next tile's weights and tiles are written
    // there (by the bulk copy's async proxy, and the transposes).
    wgmma::fence_proxy_async();
    __syncthreads();
    pre = next_pre;
  }
#else
  __trap();  // built without sm_90a code: wgmma_available() keeps the host from launching
#endif
}

// ---- host side -------------------------------------------------------------------------

// Tall tiles for small images (WgParams): on wherever they fill more rows than whole images
// do. Measured (H100, run CL): dcgan_g4 float32 forward 0.142 -> 0.114 ms; bfloat16 and the
// larger images unchanged. Test knob CONVT_FWD_TALL=0 turns them off. Read once.
bool tall_tiles_allowed() {
  static const bool on = !env_equals("CONVT_FWD_TALL", "0");
  return on;
}

// any_width: the kernel's loads work for any row width (channels_last, or NCHW with
// element loads); else NCHW rows must hold a whole number of 16-byte vectors.
// cols: column-phase blocks (WgParams::cols_np, wgmma_fwd_kernel's kCols): wg_px warpgroups,
// one per column phase with taps (the plan fails where their number differs), on one tile
// of px_per_wg slots; one block per tile, not tall.
// split: 3xTF32 (wgmma_fwd_kernel's kSplit): a stage holds the big and the small parts' tiles
// and weights, twice each.
bool make_plan(const Geometry& g, int elem_size, int wg_co, int wg_px, int px_per_wg, bool any_width,
               int raw_stages, bool tile_in_raw, WgParams& p, int smem_max = kSmemMax, bool persist = false,
               bool cols = false, bool split = false) {
  const PhaseExtents e = phase_extents(g);
  p.tall = false;  // (the caller may retry with fewer raw stages on the same p)
  if (cols && (persist || g.SW < 2)) return false;
  if (!plan_phases(g, e, kMaxTaps, p)) return false;
  const int ntaps_pack = p.taps_y * p.taps_x;
  const int threads = 128 * wg_co * wg_px;
  const int64_t npix = static_cast<int64_t>(px_per_wg) * (cols ? 1 : wg_px);
  const int64_t hy = e.halo_y;
  int64_t hx = e.halo_x;
  p.cols_np = 0;
  if (cols) {
    // The column phases with taps and outputs, one warpgroup each. A tile's phase-x columns
    // [tx0, tx0 + TX) read input columns tx0 + [first, jlo + base + TX) of each phase (first =
    // jlo + base - halo): staged from tx0 + lo (lo: the smallest first), the columns
    // beyond TX that a tile needs are hi - lo (hi: the largest jlo + base).
    int64_t lo = INT64_MAX, hi = INT64_MIN;
    for (int64_t r = 0; r < g.SW; ++r) {
      p.cols_wg[r] = -1;
      const PhaseAxis a = phase_axis(r, g.SW, g.PW, g.DW, g.KW, g.Wout);
      if (a.ntaps == 0 || a.count == 0) continue;
      if (p.cols_np == wg_px || p.cols_np == kMaxColPhases) return false;
      const int64_t first = a.jlo + a.base - (a.ntaps - 1) * p.ddx;
      lo = std::min(lo, first);
      hi = std::max(hi, a.jlo + a.base);
      p.cols_rx[p.cols_np] = static_cast<int>(r);
      p.cols_d[p.cols_np] = static_cast<int>(first);  // made relative to lo below
      p.cols_wg[r] = p.cols_np++;
    }
    if (p.cols_np != wg_px || p.cols_np * ntaps_pack > kMaxTaps) return false;
    if (lo < -(int64_t(1) << 30) || hi - lo > (int64_t(1) << 20)) return false;
    for (int i = 0; i < p.cols_np; ++i) p.cols_d[i] -= static_cast<int>(lo);
    p.cols_lo = static_cast<int>(lo);
    hx = hi - lo;
  }
  // NCHW 16-byte input loads: rows must start 16-byte aligned (the launcher checks the
  // pointer).
  const int vec = 16 / elem_size;
  if (!any_width && g.W % vec != 0) return false;
  p.vec = vec;
  // A tile's staged columns start at the multiple of vec at or below its first input
  // column; the tile then sits `shift` slots in. With TX a multiple of vec, a phase's
  // shift is the same for every tile: mod(jlo + base - halo_x, vec); else up to vec - 1.
  // (cols: the tile's one staged origin, tx0 + lo.)
  int64_t phase_shift = 0;
  for (int64_t r = 0; r < g.SW; ++r) {
    const PhaseAxis a = phase_axis(r, g.SW, g.PW, g.DW, g.KW, g.Wout);
    if (a.ntaps == 0 || a.count == 0) continue;
    const int64_t first = cols ? p.cols_lo : a.jlo + a.base - (a.ntaps - 1) * p.ddx;
    phase_shift = std::max(phase_shift, first - floor_div<int64_t>(first, vec) * vec);
  }
  auto shift_for = [&](int64_t tx, bool single_tile) {
    return (single_tile || tx % vec == 0) ? phase_shift : int64_t(vec - 1);
  };
  // Tile: whole phase images when one (with its halo) fits the block's slots, several per
  // block; else the window TY x TX with the fewest blocks (each block costs the same),
  // then the fewest staged slots.
  int64_t shift_max = 0;
  const int64_t whole_pitch = round_up(e.cx + hx + shift_for(e.cx, true), vec);
  if ((e.cy + hy) * whole_pitch <= npix) {
    p.TX = static_cast<int>(e.cx);
    p.TY = static_cast<int>(e.cy);
    p.P = static_cast<int>(whole_pitch);
    shift_max = shift_for(e.cx, true);
    p.img_stride = static_cast<int>((e.cy + hy) * p.P);
    const int64_t last = (e.cy - 1) * p.P + e.cx;  // slots the last image's outputs span
    p.IMGS = static_cast<int>(std::min<int64_t>(g.N, (npix - last) / p.img_stride + 1));
    // Tall tiles where they fill more rows than whole images do (32-bit virtual rows).
    const int64_t R = e.cy + hy, tyv = npix / p.P - hy;
    if (tall_tiles_allowed() && p.IMGS < g.N && tyv > p.IMGS * R && g.N * R < (int64_t(1) << 30)) {
      if (cols) return false;  // (such batches keep their tall tiles)
      p.tall = true;
      p.R = static_cast<int>(R);
      p.TY = static_cast<int>(tyv);
    }
  } else {
    int64_t best_blocks = INT64_MAX, best_slots = INT64_MAX;
    for (int64_t tx = 1; tx <= std::min<int64_t>(e.cx, npix); ++tx) {
      const int64_t pitch = round_up(tx + hx + shift_for(tx, tx >= e.cx), vec);
      const int64_t ty = std::min<int64_t>(e.cy, npix / pitch);
      if (ty < 1) continue;
      const int64_t blocks = ((e.cx + tx - 1) / tx) * ((e.cy + ty - 1) / ty);
      const int64_t slots = (ty + hy) * pitch;
      if (blocks < best_blocks || (blocks == best_blocks && slots < best_slots)) {
        best_blocks = blocks;
        best_slots = slots;
        p.TX = static_cast<int>(tx);
        p.TY = static_cast<int>(ty);
        p.P = static_cast<int>(pitch);
        shift_max = shift_for(tx, tx >= e.cx);
      }
    }
    if (best_blocks == INT64_MAX) return false;
    p.img_stride = static_cast<int>((p.TY + hy) * p.P);
    p.IMGS = 1;
  }
  p.tiles_x = static_cast<int>((e.cx + p.TX - 1) / p.TX);
  // Tall: the staged rows are the tile's TY virtual rows and their halo.
  p.slots_load = p.tall ? (p.TY + static_cast<int>(hy)) * p.P : p.IMGS * p.img_stride;
  // Every slot an MMA reads: outputs 0..npix-1, moved by the shift and the largest tap
  // offset.
  p.slots_alloc = static_cast<int>(
      round_up(std::max<int64_t>(p.slots_load, npix + shift_max + hy * p.P + hx), 8));
  if (p.slots_alloc > 8 * threads) return false;  // kMaxGroups * VEC slots per thread
  const int epq = 16 / elem_size;
  p.nchunks = static_cast<int>((g.Cin_g + kQuanta * epq - 1) / (kQuanta * epq));
  const int bmco = 64 * wg_co;
  p.co_tiles = static_cast<int>((g.Cout_g + bmco - 1) / bmco);
  p.tile_bytes = kQuanta * p.slots_alloc * 16;
  const int64_t w_bytes = static_cast<int64_t>(ntaps_pack) * kQuanta * bmco * 16;
  const int parts = split ? 2 : 1;
  if (split && (tile_in_raw || cols)) return false;
  p.w_offset = tile_in_raw ? 0 : p.tile_bytes * parts;
  // (cols: a packed block of weights per warpgroup.)
  p.stage_bytes = static_cast<int>(round_up(p.w_offset + w_bytes * (cols ? p.cols_np : parts), 128));
  // The epilogue reuses the stages: a 64 x kOutPitch float tile per warpgroup (128 pixels
  // at a time; channels_last: 128 x kOutPitchCL, the same size). On a persistent grid the
  // next tile's first chunks land in the raw stages during the epilogue, so the raw stages
  // come after the staging; and a tile's stream of chunks may lead into the next tile's only
  // (the lead: R chunks with the NCHW transposes, R - 1 where the raw stage is the tile).
  // (cols: each warpgroup's tile starts a few floats further, the kernel's skew; then the
  // column map, TX * SW ints.)
  p.cols_map_offset = wg_co * wg_px * 64 * kOutPitch * 4 + wg_px * 16 * 4;
  const int epi_bytes = cols ? p.cols_map_offset + p.TX * p.SW * 4 : wg_co * wg_px * 64 * kOutPitch * 4;
  p.raw_stages = raw_stages;
  p.persist = persist;
  if (persist && (raw_stages < 2 || raw_stages - (tile_in_raw ? 1 : 0) > p.nchunks)) return false;
  p.raw_base = persist ? static_cast<int>(round_up(std::max(2 * p.stage_bytes, epi_bytes), 128))
                       : 2 * p.stage_bytes;
  p.smem_bytes = std::max(p.raw_base + raw_stages * p.tile_bytes, epi_bytes);
  if (p.smem_bytes > smem_max) return false;
  const int64_t tiles = p.tall ? (g.N * p.R + p.TY - 1) / p.TY
                              : ((e.cy + p.TY - 1) / p.TY) * p.tiles_x;
  p.imgs_per_block = p.tall ? static_cast<int>(g.N) : p.IMGS;
  if (tiles >= (int64_t(1) << 31)) return false;
  p.tiles = static_cast<int>(tiles);
  const TileGrid grid = tile_grid(g, tiles, p.imgs_per_block);
  if (grid.x * grid.z >= (int64_t(1) << 31)) return false;  // work items: 32-bit
  p.w_total = static_cast<int>(grid.x / (cols ? g.SW : 1) * grid.z);  // (cols: no column phase digit)
  p.w_step = p.w_total;                                      // (one item per block)
  return grid.fits && p.co_tiles < 65536 &&
         g.H * g.W < (int64_t(1) << 31);
}

// Where the kAsync forward runs on a persistent grid (WgParams::persist): channels_last
// input. Test knob CONVT_FWD_PERSIST=0: one block per tile everywhere (the kernel before the
// persistent grid); =1: NCHW too. Read once.
bool persistent_grid_allowed(bool cl) {
  static const int mode = [] {  // 0 nowhere, 1 channels_last, 2 everywhere
    const char* e = std::getenv("CONVT_FWD_PERSIST");
    if (e == nullptr) return 1;
    return std::string(e) == "0" ? 0 : std::string(e) == "1" ? 2 : 1;
  }();
  return mode == 2 || (mode == 1 && cl);
}

// Blocks of `kernel` resident per multiprocessor at `smem` bytes of dynamic shared memory,
// asked of the runtime once per kernel, device, block size and shared-memory size. (Keyed by the
// kernel's address: the instantiations of one signature share this function's static map, and
// their register counts differ.)
template <typename Kernel>
int resident_blocks_per_sm(Kernel kernel, int threads, int smem) {
  using Key = std::tuple<const void*, int, int, int>;
  static std::mutex mu;
  static std::map<Key, int> known;
  const Key key{reinterpret_cast<const void*>(kernel), c10::cuda::current_device(), threads, smem};
  std::lock_guard<std::mutex> lock(mu);
  auto it = known.find(key);
  if (it != known.end()) return it->second;
  int nb = 0;
  C10_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&nb, kernel, threads, smem));
  nb = std::max(nb, 1);
  known[key] = nb;
  return nb;
}

// kSmemCap: the plan's shared-memory limit (below kSmemMax so that two blocks share a
// multiprocessor: the 2x128 blocks).
// plan_ok: where given, a plan it rejects is not launched (false returned). kTma: the
// tensor-map input tiles (wgmma_fwd_kernel), where the plan and the input allow them.
template <typename T, int WG_CO, int WG_PX, bool kCL, bool kElemLoads, bool kAsync, int PX = kPixPerWg,
          int kSmemCap = kSmemMax, bool kTma = false, bool kCols = false, bool kSplit = false>
bool run_config(const at::Tensor& input, const at::Tensor& weight,
                const std::optional<at::Tensor>& bias, const Geometry& g,
                const at::Tensor& output,
                bool (*plan_ok)(const WgParams&) = nullptr) {
  CONVT_TRACE("cuda.forward.wgmma");  // per block shape tried (a plan that does not fit returns early)
  constexpr int kThreads = 128 * WG_CO * WG_PX;
  constexpr int BMCO = 64 * WG_CO;
  WgParams p{};
  p.g = g;
  for (int i = 0; i < 4; ++i) p.out_s[i] = output.stride(i);
  p.out_pairs = output.stride(1) == 1 && g.Cout_g % 2 == 0 && output.stride(0) % 2 == 0 &&
                output.stride(2) % 2 == 0 && output.stride(3) % 2 == 0 &&
                reinterpret_cast<uintptr_t>(output.data_ptr()) % (2 * sizeof(T)) == 0;
  p.pair_cols = g.SW == 1 && output.stride(3) == 1 &&
                reinterpret_cast<uintptr_t>(output.data_ptr()) % (2 * sizeof(T)) == 0;
  static_assert(!(kCL && kElemLoads), "channels_last loads are 16-byte pixel quanta");
  static_assert(!(kCL && kAsync && !kTma) || sizeof(T) == 2,
                "float's cp.async channels_last tiles would need a TF32 rounding pass (tensor maps do without)");
  if constexpr (kAsync) {
    // As many raw stages as fit (each one a chunk further ahead), at least 2; on a persistent
    // grid where one fits, else one block per tile.
    bool planned = false;
    for (int r = kMaxRawStages; !kCols && persistent_grid_allowed(kCL) && r >= 2 && !planned; --r)
      planned = make_plan(g, sizeof(T), WG_CO, WG_PX, PX, kCL || kElemLoads, r, kCL, p, kSmemCap, true, false,
                          kSplit);
    for (int r = kMaxRawStages; r >= 2 && !planned; --r)
      planned = make_plan(g, sizeof(T), WG_CO, WG_PX, PX, kCL || kElemLoads, r, kCL, p, kSmemCap, false, kCols,
                          kSplit);
    if (!planned) return false;
  } else if (!make_plan(g, sizeof(T), WG_CO, WG_PX, PX, kCL || kElemLoads, 0, false, p, kSmemCap)) {
    return false;
  }
  if (plan_ok != nullptr && !plan_ok(p)) return false;
  CUtensorMap in_map{};  // (unused without kTma)
  if constexpr (kTma) {
    CONVT_TRACE("cuda.forward.wgmma.tensor_map");
    static_assert(kCL && kAsync, "tensor-map tiles: channels_last");
    // The box: one K quantum (16 bytes of channels) x P columns x the staged rows x IMGS
    // images, at most 256 per dimension. A chunk's second quantum must not run into the next
    // group's channels (past the last channel the map reads zeros, as the other paths do).
    constexpr uint64_t es = sizeof(T), vec = 16 / sizeof(T);
    const int rows = p.img_stride / p.P;
    if (p.tall || p.P > 256 || rows > 256 || p.IMGS > 256) return false;
    if (g.groups > 1 && g.Cin_g % (kQuanta * static_cast<int64_t>(vec)) != 0) return false;
    if (g.Cin >= (int64_t(1) << 31) || g.W >= (int64_t(1) << 31) || g.H >= (int64_t(1) << 31)) return false;
    const uint64_t N = g.N, C = g.Cin, H = g.H, W = g.W;
    const uint64_t dims[4] = {C, W, H, N};
    const uint64_t strides[3] = {C * es, W * C * es, H * W * C * es};
    const uint32_t box[4] = {static_cast<uint32_t>(vec), static_cast<uint32_t>(p.P), static_cast<uint32_t>(rows),
                             static_cast<uint32_t>(p.IMGS)};
    const CUtensorMapDataType type = std::is_same_v<T, float>            ? CU_TENSOR_MAP_DATA_TYPE_FLOAT32
                                     : std::is_same_v<T, c10::BFloat16> ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16
                                                                         : CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
    if (!tma::encode_4d(&in_map, type, input.data_ptr(), dims, strides, box)) return false;
  }
  auto stream = at::cuda::getCurrentCUDAStream();

  const at::Tensor w = weight.contiguous();
  const int64_t total = g.groups * g.SH * g.SW * p.co_tiles * p.nchunks *
                        static_cast<int64_t>(p.taps_y * p.taps_x) * kQuanta * BMCO *
                        (16 / static_cast<int64_t>(sizeof(T))) * (kSplit ? 2 : 1);
  at::Tensor wp = at::empty({total}, weight.options());
  {
    CONVT_TRACE("cuda.forward.wgmma.pack_weights");
    const int threads = 256;
    const int64_t blocks = std::min<int64_t>((total + threads - 1) / threads, 4096);
    pack_weights_wgmma<T, BMCO, std::is_same_v<T, float>, kSplit><<<blocks, threads, 0, stream>>>(
        w.data_ptr<T>(), wp.data_ptr<T>(), p, total);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  }
  CONVT_TRACE("cuda.forward.wgmma.launch");  // attributes, grid, occupancy (persistent), launch
  auto kernel = wgmma_fwd_kernel<T, WG_CO, WG_PX, kCL, kElemLoads, kAsync, PX, kTma, kCols, kSplit>;
  C10_CUDA_CHECK(
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, p.smem_bytes));
  const TileGrid grid = tile_grid(g, p.tiles, p.imgs_per_block);
  // (kCols: a block per (row phase, tile): the column phases are its warpgroups.)
  dim3 blocks(static_cast<unsigned>(grid.x / (kCols ? g.SW : 1)), static_cast<unsigned>(p.co_tiles),
              static_cast<unsigned>(grid.z));
  if (p.persist) {
    // One wave: as many blocks per channel tile as fill every multiprocessor's resident
    // slots, each taking every w_step-th work item (so that at any time the resident blocks
    // work on neighbouring items: the phases of the same rows together).
    const int64_t slots = static_cast<int64_t>(resident_blocks_per_sm(kernel, kThreads, p.smem_bytes)) *
                          at::cuda::getCurrentDeviceProperties()->multiProcessorCount;
    int64_t kb = std::min<int64_t>(p.w_total, std::max<int64_t>(1, (slots + p.co_tiles - 1) / p.co_tiles));
    // A step prime to the phase count, so that each block's items cycle through every phase
    // (phases of more taps cost more; with 264 blocks and 4 phases, each block kept one).
    while (kb > 1 && gcd64(kb, g.SH * g.SW) != 1) --kb;
    p.w_step = static_cast<int>(kb);
    blocks = dim3(static_cast<unsigned>(kb), static_cast<unsigned>(p.co_tiles), 1);
  }
  const T* bias_ptr = (bias.has_value() && bias->defined()) ? bias->data_ptr<T>() : nullptr;
  kernel<<<blocks, kThreads, p.smem_bytes, stream>>>(input.data_ptr<T>(),
                                             reinterpret_cast<const uint4*>(wp.data_ptr<T>()),
                                             bias_ptr, output.data_ptr<T>(), p, in_map);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return true;
}

// Test knob CONVT_FWD_STAGE=regs: register loads everywhere (the variant before the cp.async
// raw stages; measurements and tests). Read once.
bool async_staging_allowed() {
  static const bool allowed = [] {
    const char* e = std::getenv("CONVT_FWD_STAGE");
    return !(e != nullptr && std::string(e) == "regs");
  }();
  return allowed;
}

// The block shape of the cp.async paths. 2x256: two warpgroups of m64n256 on a 64 x 512 tile;
// 4x128: four of m64n128 on the same tile (twice the warps per multiprocessor for the latency
// chain that bounds the kernel: perf-notes-forward, run BM, 8 warps, issue active 35%); 2x128:
// two of m64n128 on a 64 x 256 tile with the plan's shared memory capped at kTwoBlockSmem, so
// that two blocks share a multiprocessor and one's prologue and epilogue overlap the other's
// MMAs (ncu, run CR: the 512-thread blocks ran one per SM, 139-187 KB, SM 32-43%, L2 40-48%).
// Measured (H100, bf16, ms): 4x128 against 2x256 (run CL) faster on all 7 shapes timed, NCHW
// kb1_57 2.61 -> 2.33, kb1_71 0.94 -> 0.82; float32 mixed (kb1_71 1.27 -> 1.18, but kb2_2 2.94
// -> 3.14, kb2_5 3.19 -> 3.43), so float32 keeps 2x256. 2x128 against 4x128 (run CT): NCHW
// kb2_5 2.21 -> 1.98, kb2_10 2.54 -> 2.37, kb1_71 0.83 -> 0.79, kb1_57 2.31 -> 2.40;
// channels_last kb1_57 2.21 -> 2.07, kb1_69 1.41 -> 1.32, kb2_5 1.73 -> 1.53, kb2_10 2.31 ->
// 2.11 (geomean over 7 shapes NCHW 1.35x -> 1.40x PyTorch, channels_last 0.81x -> 0.87x).
// float32, 2x128 against 2x256 (run DA, NCHW): faster on the large multi-tap shapes (kb1_57
// 3.98 -> 3.63 ms, kb1_71 1.26 -> 1.05, kb1_78 1.88 -> 1.70, kb1_69 2.75 -> 2.64, kb2_5 3.19
// -> 3.09), slower where a phase has one tap (kb1_81 1.58 -> 1.67: one MMA per chunk, so the
// chunk's fixed cost weighs more on the smaller tile) and on small images (dcgan_g4 0.115 ->
// 0.145, whose 2x128 plan tiles a 16-column phase image 8 columns wide; dcgan_g2 0.103 ->
// 0.147, tall either way, 512 channels of weights staged per 256 pixels instead of 512).
// So float32 takes 2x128 only where two_block_plan_ok says so (a rule fitted to those 11
// shapes, not a model).
// Default: 2x128 for 16-bit types; for float32 2x128 (else 4x128) where two_block_plan_ok,
// else 2x256.
// Test knob CONVT_FWD_WG=2x256|4x128|2x128 forces one for every dtype. Where a shape's plan
// does not fit, the next larger block runs.
enum class BlockShape { k2x256, k4x128, k2x128, k2x128_where_ok };
constexpr int kTwoBlockSmem = 110 * 1024;  // two blocks: 2 x (this + static + 1 KB reserved) <= 228 KB

// The 2x128 plan of a float32 shape (or, where it does not fit, the 4x128 one) is taken where
// its phases have two taps or more and its tiles are not tall and at least 32 outputs wide
// (128-byte rows).
bool two_block_plan_ok(const WgParams& p) {
  return !p.tall && p.taps_y * p.taps_x >= 2 && p.TX >= 32;
}

// channels_last input tiles through tensor maps (wgmma_fwd_kernel's kTma) where they apply;
// test knob CONVT_FWD_TMA=0 keeps the per-thread tiles (16-bit: cp.async; float32: the
// register staging with its TF32 rounding). Read once.
bool tma_tiles_allowed() {
  static const bool on = !env_equals("CONVT_FWD_TMA", "0");
  return on;
}

// Column-phase blocks (wgmma_fwd_kernel's kCols): the smallest stride along W that takes
// them. Measured (H100, run GF, against one block per phase): with three column phases or
// more they win (NCHW kb1_81, stride 5: float32 1.58 -> 0.88 ms, bfloat16 0.80 -> 0.74), with
// two they lose (float32 kb2_5 2.95 -> 3.98, bfloat16 kb2_93 1.17 -> 2.21, dcgan_g4 0.095 ->
// 0.123: these were not bound by their L2 writes, 47-56% of the L2's throughput, and the
// column-phase kernel stalls longer at its barriers, ncu run GF).
// Test knob CONVT_FWD_COLS=0 turns them off, =all takes them from stride 2; CONVT_FWD_WG (a
// forced block shape) turns them off. Read once.
int column_phase_blocks_from() {
  static const int from = [] {
    const char* e = std::getenv("CONVT_FWD_COLS");
    if (std::getenv("CONVT_FWD_WG") != nullptr || (e != nullptr && std::string(e) == "0")) return 1 << 30;
    return e != nullptr && std::string(e) == "all" ? 2 : 3;
  }();
  return from;
}

template <typename T>
BlockShape block_shape() {
  static const int forced = [] {  // 0: the dtype's default
    const char* e = std::getenv("CONVT_FWD_WG");
    if (e == nullptr) return 0;
    const std::string v(e);
    return v == "2x256" ? 1 : v == "4x128" ? 2 : v == "2x128" ? 3 : 0;
  }();
  switch (forced) {
    case 1: return BlockShape::k2x256;
    case 2: return BlockShape::k4x128;
    case 3: return BlockShape::k2x128;
    default: return sizeof(T) == 2 ? BlockShape::k2x128 : BlockShape::k2x128_where_ok;
  }
}

template <typename T>
bool run_typed(const at::Tensor& input, const at::Tensor& weight,
               const std::optional<at::Tensor>& bias, const Geometry& g,
               const at::Tensor& output) {
  // Blocks of 64 output channels x 512 pixels: two warpgroups side by side along the
  // pixels, so the weights of a chunk serve 512 pixels. Measured (H200, 2026-11-22, see
  // docs/perf-notes-forward.md): better than 128 channels x 256 pixels (two channel
  // warpgroups) on the Cout = 128 shapes (kb1_69 3.12 -> 2.96 ms, kb2_93 2.09 -> 1.90),
  // and than 64 x 256 with two blocks per multiprocessor; chunks of more than one K step
  // per tap were slower (a longer unoverlapped first load).
  //
  // channels_last input (NHWC) is read as is when a pixel's channels of one quantum are
  // 16 aligned bytes (Cin and Cin_g multiples of the quantum) and the output keeps the
  // channels contiguous; otherwise it is copied to NCHW first.
  constexpr int64_t epq = 16 / sizeof(T);
  const bool cl = !input.is_contiguous() && input.is_contiguous(at::MemoryFormat::ChannelsLast) &&
                  output.stride(1) == 1 && g.Cin % epq == 0 && g.Cin_g % epq == 0 &&
                  reinterpret_cast<uintptr_t>(input.data_ptr()) % 16 == 0;
  if (cl) {
    // Tensor-map or cp.async tiles for 16-bit types; tensor-map tiles for float (unrounded
    // input, see kTma), else the register staging: float's cp.async tiles would need their
    // TF32 rounding done in place in shared memory after the copies, which made the kernel
    // slower than rounding in registers (run BN: kb1_57 3.85 -> 5.27 ms, kb2_10 4.04 -> 5.53).
    if constexpr (sizeof(T) == 2) {
      if (async_staging_allowed()) {
        const BlockShape bs = block_shape<T>();
        if (bs == BlockShape::k2x128 && tma_tiles_allowed() &&
            run_config<T, 1, 2, true, false, true, 128, kTwoBlockSmem, true>(input, weight, bias, g, output))
          return true;
        if (bs == BlockShape::k2x128 &&
            run_config<T, 1, 2, true, false, true, 128, kTwoBlockSmem>(input, weight, bias, g, output))
          return true;
        if ((bs == BlockShape::k4x128 || bs == BlockShape::k2x128) && tma_tiles_allowed() &&
            run_config<T, 1, 4, true, false, true, 128, kSmemMax, true>(input, weight, bias, g, output))
          return true;
        if ((bs == BlockShape::k4x128 || bs == BlockShape::k2x128) &&
            run_config<T, 1, 4, true, false, true, 128>(input, weight, bias, g, output))
          return true;
        if (run_config<T, 1, 2, true, false, true>(input, weight, bias, g, output)) return true;
      }
    } else if (async_staging_allowed() && tma_tiles_allowed()) {
      // float32: tensor-map tiles under the float32 block rule (block_shape), else 2x256.
      const BlockShape bs = block_shape<T>();
      if (bs == BlockShape::k2x128 || bs == BlockShape::k2x128_where_ok) {
        bool (*const ok)(const WgParams&) = bs == BlockShape::k2x128 ? nullptr : &two_block_plan_ok;
        if (run_config<T, 1, 2, true, false, true, 128, kTwoBlockSmem, true>(input, weight, bias, g, output, ok))
          return true;
      }
      if (bs != BlockShape::k2x256) {
        bool (*const ok)(const WgParams&) = bs == BlockShape::k2x128_where_ok ? &two_block_plan_ok : nullptr;
        if (run_config<T, 1, 4, true, false, true, 128, kSmemMax, true>(input, weight, bias, g, output, ok))
          return true;
      }
      if (run_config<T, 1, 2, true, false, true, kPixPerWg, kSmemMax, true>(input, weight, bias, g, output))
        return true;
    }
    return run_config<T, 1, 2, true, false, false>(input, weight, bias, g, output);
  }
  const at::Tensor in = input.is_contiguous() ? input : input.contiguous();
  // 16-byte loads where every row starts 16-byte aligned, element loads otherwise.
  const bool aligned = g.W % epq == 0 && reinterpret_cast<uintptr_t>(in.data_ptr()) % 16 == 0;
  // Unaligned rows that 4-byte copies can still move: every row start 4-byte aligned (an even
  // width for 16-bit types; the slot groups start at multiples of VEC).
  const bool word_aligned = (g.W * static_cast<int64_t>(sizeof(T))) % 4 == 0 &&
                            reinterpret_cast<uintptr_t>(in.data_ptr()) % 4 == 0;
  // The cp.async raw stages where their shared memory fits (make_plan), else register loads.
  if (async_staging_allowed()) {
    const BlockShape bs = block_shape<T>();
    // Column-phase blocks where the output's column phases interleave: one warpgroup per
    // column phase with taps, two or three of them (column_phase_blocks_from says where).
    if (aligned && g.SW >= column_phase_blocks_from() && output.stride(3) == 1) {
      if (run_config<T, 1, 2, false, false, true, 128, kTwoBlockSmem, false, true>(in, weight, bias, g, output))
        return true;
      if (run_config<T, 1, 3, false, false, true, 128, kSmemMax, false, true>(in, weight, bias, g, output))
        return true;
    }
    if (bs == BlockShape::k2x128 || bs == BlockShape::k2x128_where_ok) {
      bool (*const ok)(const WgParams&) = bs == BlockShape::k2x128 ? nullptr : &two_block_plan_ok;
      if (aligned && run_config<T, 1, 2, false, false, true, 128, kTwoBlockSmem>(in, weight, bias, g, output, ok))
        return true;
      if (!aligned && word_aligned &&
          run_config<T, 1, 2, false, true, true, 128, kTwoBlockSmem>(in, weight, bias, g, output, ok))
        return true;
    }
    if (bs != BlockShape::k2x256) {
      // (float32's rule-based 2x128 falls back to 4x128 under the same rule where the 2x128
      // plan does not fit: kb1_78, 21 taps, 2x256 1.85 -> 1.69 ms, run DC)
      bool (*const ok)(const WgParams&) = bs == BlockShape::k2x128_where_ok ? &two_block_plan_ok : nullptr;
      if (aligned && run_config<T, 1, 4, false, false, true, 128>(in, weight, bias, g, output, ok)) return true;
      if (!aligned && word_aligned && run_config<T, 1, 4, false, true, true, 128>(in, weight, bias, g, output, ok))
        return true;
    }
    if (aligned && run_config<T, 1, 2, false, false, true>(in, weight, bias, g, output)) return true;
    if (!aligned && word_aligned && run_config<T, 1, 2, false, true, true>(in, weight, bias, g, output))
      return true;
  }
  if (aligned) return run_config<T, 1, 2, false, false, false>(in, weight, bias, g, output);
  return run_config<T, 1, 2, false, true, false>(in, weight, bias, g, output);
}

}  // namespace

bool wgmma_available(const at::Tensor& input) {
#ifdef CONVT_HAVE_SM90A
  const cudaDeviceProp* prop = at::cuda::getDeviceProperties(input.get_device());
  return prop->major == 9 && prop->minor == 0;
#else
  (void)input;
  return false;
#endif
}

namespace {
// The bias as the kernels read it: unit stride.
std::optional<at::Tensor> unit_stride_bias(const std::optional<at::Tensor>& bias) {
  if (bias.has_value() && bias->defined() && bias->stride(0) != 1) return bias->contiguous();
  return bias;
}
}  // namespace

bool launch_wgmma_3xtf32(const at::Tensor& input, const at::Tensor& weight,
                         const std::optional<at::Tensor>& bias, const Geometry& g,
                         const at::Tensor& output) {
  if (!wgmma_available(input) || input.scalar_type() != at::kFloat || !input.is_contiguous() ||
      !async_staging_allowed())
    return false;
  const std::optional<at::Tensor> b = unit_stride_bias(bias);
  // NCHW cp.async raw stages only (the block's transpose splits the values): 16-byte pieces
  // where every row starts 16-byte aligned, else 4-byte ones.
  const bool aligned = g.W % 4 == 0 && reinterpret_cast<uintptr_t>(input.data_ptr()) % 16 == 0;
  if (aligned)
    return run_config<float, 1, 2, false, false, true, 128, kSmemMax, false, false, true>(input, weight, b, g, output);
  return reinterpret_cast<uintptr_t>(input.data_ptr()) % 4 == 0 &&
         run_config<float, 1, 2, false, true, true, 128, kSmemMax, false, false, true>(input, weight, b, g, output);
}

bool launch_wgmma(const at::Tensor& input, const at::Tensor& weight,
                  const std::optional<at::Tensor>& bias, const Geometry& g,
                  const at::Tensor& output) {
  if (!wgmma_available(input)) return false;
  const std::optional<at::Tensor> b = unit_stride_bias(bias);
  switch (input.scalar_type()) {
    case at::kFloat:
      return run_typed<float>(input, weight, b, g, output);
    case at::kHalf:
      return run_typed<c10::Half>(input, weight, b, g, output);
    case at::kBFloat16:
      return run_typed<c10::BFloat16>(input, weight, b, g, output);
    default:
      return false;
  }
}

}  // namespace fwd
}  // namespace convt
