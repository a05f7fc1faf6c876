// Warp-specialized grad_weight for channels_last bf16 / fp16, stride 1 or 2 (sm_90a).
//
//   gw[ci, co, ky, kx] = sum_{n, iy, ix} x[n, iy, ix, ci] * go[n, SH iy - PH + ky DH, SW ix - PW + kx DW, co]
//
// Stride by residues: the grad_output rows a tap reads, SH iy + (ky DH - PH), lie on one residue
// subgrid of grad_output (rows SH m + ry, ry = (ky DH - PH) mod SH) at row iy + qy of it, so each
// residue holding taps is a stride-1 correlation of x with its subgrid, read in place through a
// tensor map whose strides are SH / SW times the dense ones (plan_gw_ws). At stride 1 the one
// residue is grad_output itself.
//
// Why: the channels_last ring kernel (backward_grad_weight_wgmma.cu) runs at 1.2-2.2x cuDNN's
// wgrad on the stride-1 suite shapes (run KB, device us, ours / cuDNN: kb1_57 1696 / 1386,
// kb1_65 1418 / 835, kb1_69 1653 / 1182), and grad_weight is what keeps their bf16
// channels_last training steps below PyTorch. This kernel takes the structure of the
// warp-specialized forward (forward_wgmma_ws.cu):
//  - warpgroup 0 is the producer (40 registers): one thread fills a ring of stages, each one
//    pixel tile of TY x TX input pixels (TX 64, or 16 / 32 on narrower images): one tensor-map
//    box of x (the block's 64 input
//    channels of every pixel, a 128-byte row, 128-byte swizzle) and one per grad_output residue
//    its kind reads (64 output channels), with the residue's taps' halo (TY + the largest qy span
//    rows of P = TX + the largest qx span columns; at stride 1, TY + (KH-1) DH rows of
//    TX + (KW-1) DW). One 128-byte row per pixel, not eight 16-byte quanta: a
//    box with 16-byte rows makes the copy engine move 16 bytes per request (the first
//    version, 8 boxes per operand, ran kb1_57 at 46% of the MMA rate with 15.6 GB/s per SM;
//    one box per operand took its bf16 grad_weight from 1.417 to 1.020 ms, kb1_69 from 1.400
//    to 0.762: runs LC, LD);
//  - warpgroups 1 and 2 are consumers (232 registers) of every stage: consumer c owns a unit
//    of its block's kind (up to TPC taps, of any of the residue boxes the kind loads), an
//    m64n64 fp32 accumulator per tap
//    (D[ci][co]); per 16 pixels of a tile row and per tap, one m64n64k16 MMA with both
//    operands MN-major and 128-byte swizzled (x rows [pixel][64 ci] are A = x^T, 64 ci x 16
//    pixels; grad_output rows are B, 16 pixels x 64 co, started at the tap's shift
//    ty P + (qy - min qy) P + (qx - min qx) rows: a tap moves B by whole 128-byte rows, at any
//    swizzle phase);
//  - a stage goes back to the producer once the block's consumers' MMAs on it are done (4 warp
//    arrivals per consumer with a unit on `empty`), so every parity wait is exact without turn
//    barriers.
// The pixels are split over blocks (splits): block (split, kind, ci tile, co tile)
// reduces its split's pixel tiles and writes its partial sums to ws[split][tap][ci][co];
// grad_weight_reduce sums the splits in a fixed order: deterministic, no atomics.
// Pixels outside the image (the last tile of a row, the halo) and channels past Cin / Cout
// (a box is always 64 channels wide) read as zeros from the boxes.
// Padding tap slots (a consumer with fewer taps than TPC) multiply at shift 0 and are not
// stored: a branch around a wgmma would make the compiler fence the accumulators.
//
// grad_bias from the same stages (when asked, bias_ws non-null): consumer 0 of a summing block
// adds up each grad_output box's own region, rows [0, TY) x columns [0, TX) of the box (and its
// halo rows / columns in the last tile row / column), which the pixel tiles partition over the
// residue's subgrid (disjoint across tiles and residues). Only the ci tile 0 blocks sum, and
// each residue's first kind, so every element is added once; the copy engine's zeros past the
// edges add nothing. This needs every residue to hold taps and the tiles' own regions to reach
// the subgrid's edges (plan_gw_ws: bias_ok); elsewhere grad_bias keeps its own pass. Why: that
// pass read grad_output once more at the copy rate, 357-373 us of bf16 channels_last kb2_2 /
// kb2_5 / kb2_10 training steps of 2250-3960 (run UN).
#include <ATen/ATen.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "backward_common.cuh"
#include "bulk_copy.cuh"
#include "env_knob.h"
#include "forward_launch.cuh"
#include "mma.cuh"
#include "tensor_map.cuh"
#include "wgmma.cuh"
#include "../host_trace.h"

namespace convt {
namespace bwd {
namespace {

constexpr int kThreads = 384;           // producer warpgroup + two consumer warpgroups
constexpr int kCh = 64;                 // input channels per tile; output channels per wide tile (and per box)
constexpr int kNarrowCo = 32;           // output channels per narrow tile (Cout <= 32: see kernel's NCO)
constexpr int kMaxTX = 64;              // input columns per pixel tile: at most 4 K steps of 16
constexpr int kTilePixels = 512;        // tile rows x columns the planner aims for (8 rows of 64)
constexpr int kAccRegs = 192;           // accumulator floats a consumer thread holds at most
constexpr int kMaxTpc = 6;              // taps per consumer on wide tiles: 6 x 32 accumulators
// Taps per consumer on narrow tiles: 9 x 16 accumulators. (12 would fit kAccRegs, but ptxas
// spilled 64-152 bytes at 10-12 taps on 64-column tiles.)
constexpr int kMaxUnitTaps = 9;
// The most taps a consumer may hold on tiles of nco output channels (nco / 2 accumulators a tap).
constexpr int max_tpc(int nco) { return nco == kCh ? kMaxTpc : kMaxUnitTaps; }
constexpr int kMaxStages = 6;
constexpr int kMaxResidues = 4;         // grad_output residue subgrids with taps (stride <= 2 x 2)
constexpr int kMaxKinds = 16;           // block kinds (consumer unit pairs)
constexpr int kMaxTaps = 2 * kMaxKinds * kMaxTpc;  // the most taps the kinds can hold
constexpr int kRowBytes = 128;          // one pixel's 64 channels, a swizzle row
constexpr int kSwizzleAlign = 1024;     // the 128-byte swizzle's repeat: box and stage alignment
constexpr int kSmemLimit = 225 * 1024;  // stages; the launch adds kSwizzleAlign for the alignment
// Plan cost of a block kind, in consumer tap slots: its loads per pixel tile weigh about as
// much as kLoadSlots taps' MMAs (the stride-1 choices of the first version are kept by it).
constexpr int kLoadSlots = 4;

// One consumer's work in a block: up to TPC taps (ntaps 0: idle), of any of the kind's residue
// boxes. shift: where the tap's B operand starts, in rows (pixels) from the stage's first box:
// the box's place in the stage plus the tap's offset in it.
struct GwWsUnit {
  int ntaps;
  int tap[kMaxUnitTaps], shift[kMaxUnitTaps];
};

struct GwWsParams {
  int N, Cin, Cout, H, W, OH, OW;
  int taps;
  int TX;                           // tile columns: 16, 32 or 64 (the image's width rounded up; the kernel's TX)
  int TY, P, go_rows;               // tile rows; grad_output box pitch and rows
  int tiles_x, tiles_y, ptiles;     // pixel tiles (n, tile row, tile column)
  int ci_tiles, co_tiles;
  int nco;                          // output channels per co tile: kCh, or kNarrowCo where Cout <= 32
  // Block kinds: kind k's consumers run unit[k][0] and unit[k][1] over the boxes of residues
  // box_res[k][0 .. go_boxes[k]) (the residues its units' taps read, each loaded once). Residue
  // r's box starts at (tile row + res_oy[r], tile column + res_ox[r]) in its subgrid's pixels.
  int kinds, go_box_count;          // go_box_count: the most boxes of any kind (stage layout)
  GwWsUnit unit[kMaxKinds][2];
  int go_boxes[kMaxKinds];
  int box_res[kMaxKinds][kMaxResidues];
  int nres, res_oy[kMaxResidues], res_ox[kMaxResidues];
  int splits, tiles_per_split;
  int x_bytes, go_bytes;            // bytes of a stage's x box and of one grad_output box (multiples of 1024)
  int stage_bytes, stages, smem_bytes;
  // grad_bias: whether the boxes' own regions cover grad_output (every residue holds taps and
  // the pixel tiles' regions reach its subgrid's edges), and per kind the box slots (bit b) it
  // sums: those of the residues it is the first kind to load.
  bool bias_ok;
  uint32_t bias_boxes[kMaxKinds];
};

// grad_bias's partial sums: ws rows [split][kind][kBiasRows] of Cout floats: row 0 from consumer 0's
// tensor-core sums, rows 1 .. 4 from its warps' sums of the halo parts (bias_halo_sums).
constexpr int kBiasRows = 5;
// Whether a kernel of TPC taps per consumer on tiles of NCO output channels sums grad_bias: not
// with a full kAccRegs accumulators (the sums' registers spilled beside 192 of them).
constexpr bool kBiasTpc(int tpc, int nco) { return tpc * (nco / 2) < kAccRegs; }

// grad_output's residue subgrids (go_maps.m[r]; at stride 1 the one subgrid is grad_output).
struct GoMaps {
  CUtensorMap m[kMaxResidues];
};

#ifdef CONVT_SM90A_DEVICE
// One tap's m64nNk16 product, N = NCO (64, or 32 on narrow tiles: B is then the first 32 output
// channels of each 128-byte box row, the rest of the row, channels past Cout, not multiplied).
template <typename T, int NCO>
__device__ __forceinline__ void mma_tab(float (&d)[NCO / 2], uint64_t a, uint64_t b) {
  static_assert(NCO == 64 || NCO == 32, "wide or narrow co tiles");
  if constexpr (NCO == 64 && std::is_same_v<T, c10::BFloat16>) {
    wgmma::m64n64k16_bf16_tab(d, a, b);
  } else if constexpr (NCO == 64) {
    wgmma::m64n64k16_f16_tab(d, a, b);
  } else if constexpr (std::is_same_v<T, c10::BFloat16>) {
    wgmma::m64n32k16_bf16_tab(d, a, b);
  } else {
    wgmma::m64n32k16_f16_tab(d, a, b);
  }
}
#endif

#ifdef CONVT_SM90A_DEVICE
// d (+)= A * B, m64n8k16 with A MN-major from a_desc (tnsp-a = 1: the box's pixel rows of 64
// output channels, as x is read) and B K-major from b_desc (here a tile of ones).
template <typename T>
__device__ __forceinline__ void mma_n8_ta(float (&d)[4], uint64_t a_desc, uint64_t b_desc) {
  if constexpr (std::is_same_v<T, c10::BFloat16>) {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %6, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n8k16.f32.bf16.bf16 {%0, %1, %2, %3}, %4, %5, p, 1, 1, 1, 0;\n}\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "l"(a_desc), "l"(b_desc), "r"(1));
  } else {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %6, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {%0, %1, %2, %3}, %4, %5, p, 1, 1, 1, 0;\n}\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "l"(a_desc), "l"(b_desc), "r"(1));
  }
}

// Adds the 8 16-bit values of a 16-byte word to s.
template <typename T>
__device__ __forceinline__ void add8(float (&s)[8], const uint4& v) {
  const uint32_t w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    if constexpr (std::is_same_v<T, c10::BFloat16>) {
      s[2 * i] += __uint_as_float(w[i] << 16);
      s[2 * i + 1] += __uint_as_float(w[i] & 0xffff0000u);
    } else {
      const float2 f = __half22float2(*reinterpret_cast<const __half2*>(&w[i]));
      s[2 * i] += f.x;
      s[2 * i + 1] += f.y;
    }
  }
}

// The halo part of a box's own region in the last tile row / column, which the m64n8 sums
// (whole 16-pixel runs of rows [0, TY) x columns [0, TX)) leave: columns [TX, P) of rows
// [0, y_end) (last column), rows [TY, go_rows) x columns [0, TX) (last row). Consumer 0's thread
// c sums the 16-byte chunk c % 8 (8 output channels) of pixels c / 8, + 16, ...; chunk j of
// pixel row r is at (j ^ r % 8) * 16 (128-byte swizzle). Few pixels, and only in those tiles.
template <typename T, int TX>
__device__ __forceinline__ void bias_halo_sums(float (&hs)[8], const unsigned char* box, const GwWsParams& p,
                                               int ctid, bool last_x, bool last_y) {
  const int j = ctid & 7;
  const int halo_x = p.P - TX;
  const int y_end = last_y ? p.go_rows : p.TY;
  if (last_x) {
    for (int e = ctid >> 3; e < y_end * halo_x; e += 16) {
      const int row = (e / halo_x) * p.P + TX + e % halo_x;
      add8<T>(hs, *reinterpret_cast<const uint4*>(box + row * kRowBytes + ((j ^ (row & 7)) << 4)));
    }
  }
  if (last_y) {
    for (int e = ctid >> 3; e < (p.go_rows - p.TY) * TX; e += 16) {
      const int row = (p.TY + e / TX) * p.P + e % TX;
      add8<T>(hs, *reinterpret_cast<const uint4*>(box + row * kRowBytes + ((j ^ (row & 7)) << 4)));
    }
  }
}
#endif  // CONVT_SM90A_DEVICE

// TX: the tile's columns (p.TX) as a template argument, so that a tile row's TX / 16 K steps unroll
// (one flat loop over K steps under a runtime TX ran the 64-column kernel 6-7% slower: run AB3).
// NCO: output channels per co tile (p.nco). 32 where Cout <= 32: an m64n64 product there
// multiplies 32 zero columns of the box (channels past Cout), and at 32 x 32 channels the wide
// kernel kept the tensor pipe 87% busy at 18% of the bf16 rate (kb1_78 channels_last, run AK2).
// Narrow tiles halve each product and the accumulators a tap, so a consumer holds up to
// kMaxUnitTaps taps and a kind loads x for twice as many. Measured (run AL1, kernel us, wide ->
// narrow): kb1_71 370 -> 310, kb1_78 1005 -> 685; shared memory then binds (L1 95%, tensor pipe 63%).
template <typename T, int TPC, int TX, int NCO>
__global__ void __launch_bounds__(kThreads, 1)
    grad_weight_ws_kernel(float* __restrict__ ws, float* __restrict__ bias_ws, const __grid_constant__ GwWsParams p,
                          const __grid_constant__ CUtensorMap x_map, const __grid_constant__ GoMaps go_maps) {
#ifdef CONVT_SM90A_DEVICE
  extern __shared__ __align__(128) unsigned char smem_raw[];  // aligned to 1024 below
  __shared__ uint64_t full[kMaxStages], empty[kMaxStages];
  // B of the m64n8 bias sums: 16 x 8 ones (K-major, two 8 x 8 core matrices 128 bytes apart).
  __shared__ __align__(128) uint32_t ones_tile[64];
  const int tid = threadIdx.x;
  // Block: co tile fastest (neighbours read the same pixel tiles), then ci tile, kind, split.
  int r = blockIdx.x;
  const int co_tile = r % p.co_tiles;
  r /= p.co_tiles;
  const int ci_tile = r % p.ci_tiles;
  r /= p.ci_tiles;
  const int kind = r % p.kinds;
  const int split = r / p.kinds;
  const int active = p.unit[kind][1].ntaps > 0 ? 2 : 1;  // consumers with a unit
  // grad_bias: consumer 0 of the ci tile 0 blocks sums the boxes its kind owns.
  const bool bias_row = bias_ws != nullptr && ci_tile == 0;
  if (tid < 64) {
    ones_tile[tid] = std::is_same_v<T, c10::BFloat16> ? 0x3F803F80u : 0x3C003C00u;  // two 1.0s
    // The wgmma reads it through the async proxy: fence these generic-proxy stores (the barrier
    // below then publishes them).
    wgmma::fence_proxy_async();
  }
  if (tid == 0) {
    for (int s = 0; s < p.stages; ++s) {
      bulk::mbar_init(&full[s]);               // the producer's expect_tx
      bulk::mbar_init(&empty[s], 4 * active);  // one arrival per consumer warp
    }
    bulk::fence_mbar_init();
  }
  __syncthreads();
  // The swizzle pattern repeats every 1024 bytes from an aligned address: stages start there.
  unsigned char* smem = smem_raw + ((kSwizzleAlign - (bulk::smem_addr(smem_raw) & (kSwizzleAlign - 1))) & (kSwizzleAlign - 1));
  const int pt_begin = split * p.tiles_per_split;
  const int pt_end = min(p.ptiles, pt_begin + p.tiles_per_split);
  const int ci0 = ci_tile * kCh, co0 = co_tile * NCO;
  const int wg = tid / 128;
  const int nbox = p.go_boxes[kind];

  if (wg == 0) {
    // ---- producer ----
    asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\n" ::: "memory");
    if (tid != 0) return;
    // Whole boxes, zero-filled past the tensor's edges, count in full.
    const uint32_t bytes = static_cast<uint32_t>(kRowBytes * (TX * p.TY + nbox * p.P * p.go_rows));
    int k = 0;
    for (int pt = pt_begin; pt < pt_end; ++pt, ++k) {
      int q = pt;
      const int tx = q % p.tiles_x;
      q /= p.tiles_x;
      const int ty = q % p.tiles_y;
      const int n = q / p.tiles_y;
      const int iy0 = ty * p.TY, ix0 = tx * TX;
      const int s = k % p.stages;
      if (k >= p.stages) bulk::mbar_wait(&empty[s], ((k / p.stages) - 1) & 1);
      unsigned char* st = smem + s * p.stage_bytes;
      bulk::arrive_expect(&full[s], bytes);
      tma::load_4d(st, &x_map, ci0, ix0, iy0, n, &full[s]);
      for (int b = 0; b < nbox; ++b) {
        const int res = p.box_res[kind][b];
        tma::load_4d(st + p.x_bytes + b * p.go_bytes, &go_maps.m[res], co0, ix0 + p.res_ox[res],
                     iy0 + p.res_oy[res], n, &full[s]);
      }
    }
    return;
  }

  // ---- consumers ----
  asm volatile("setmaxnreg.inc.sync.aligned.u32 232;\n" ::: "memory");
  const int cw = wg - 1;
  if (cw >= active) return;  // no unit for this consumer in this kind
  const int ctid = tid - 128 * wg;
  const int warp = ctid / 32, lane = ctid % 32;
  const GwWsUnit& unit = p.unit[kind][cw];
  // Slot u is the unit's tap u, if it has one (else a padding slot at shift 0, not stored).
  int shift[TPC];
#pragma unroll
  for (int u = 0; u < TPC; ++u) shift[u] = u < unit.ntaps ? unit.shift[u] : 0;
  constexpr int kAcc = NCO / 2;  // accumulators a tap
  float acc[TPC][kAcc];
#pragma unroll
  for (int u = 0; u < TPC; ++u)
#pragma unroll
    for (int e = 0; e < kAcc; ++e) acc[u][e] = 0.f;
  // grad_bias (a summing block): per stage, each owned box's rows [0, TY) x columns [0, TX) in
  // m64n8k16 MMAs, A = 16 pixel rows of the box (64 output channels), B = ones, so every column
  // of bsum is the channels' sum; consumer 0 adds the halo parts (bias_halo_sums into hs) and
  // writes both. Both consumers issue the MMAs (consumer 1's sums are not used): a wgmma under a
  // condition or loop bound that depends on the thread (cw) made ptxas wait after every wgmma of
  // the loop (WARPGROUP.DEPBAR), one under the block's own values did not; sharing each row's
  // runs between the consumers through the descriptor alone ran slower (UV: kb2_2 849 us against
  // 758). Measured on the kernel (bf16 channels_last, us, no sums -> sums): kb2_2 560 -> 758,
  // kb2_5 512 -> 562, kb2_10 966 -> 1039, kb2_93 224 -> 302 (UR), against the pass of its own
  // they replace, 188-368 us. The same sums as converts and adds in the producer's idle warps
  // slowed the kernel 4-37%, as mma.sync in those warps 30-87% (runs UO, UQ).
  // (Not compiled with kAccRegs accumulators, which leave no room: plan_gw_ws's bias_ok.)
  const uint32_t bias_boxes = kBiasTpc(TPC, NCO) && bias_row ? p.bias_boxes[kind] : 0u;
  const uint64_t ones_desc = wgmma::make_desc(bulk::smem_addr(ones_tile), 128, 256);
  float bsum[4] = {0.f, 0.f, 0.f, 0.f};
  float hs[8] = {0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f};

  int prev = -1, k = 0;
  for (int pt = pt_begin; pt < pt_end; ++pt, ++k) {
    const int s = k % p.stages;
    bulk::mbar_wait(&full[s], (k / p.stages) & 1);
    const uint32_t st = bulk::smem_addr(smem + s * p.stage_bytes);
    // MN-major, 128-byte swizzle: SBO = 8 K rows (1024 bytes); one 64-channel atom (LBO unused).
    // A starts on 16-row (2048-byte) boundaries; B at any row.
    const uint64_t a0 = wgmma::make_desc_swizzled(st, kSwizzleAlign, kSwizzleAlign, wgmma::Swizzle::k128);
    // Base offset 0 at every start row: the hardware applies the 128-byte swizzle to the
    // absolute shared-memory address (bits 7-9 into bits 4-6), as the copy engine wrote it;
    // setting bits 49-51 to the start row's phase gave wrong sums (run LD).
    const uint64_t b0 = wgmma::make_desc_swizzled(st + p.x_bytes, kSwizzleAlign, kSwizzleAlign, wgmma::Swizzle::k128);
    wgmma::fence();
#pragma unroll 1
    for (int ty = 0; ty < p.TY; ++ty) {
#pragma unroll
      for (int j = 0; j < TX / 16; ++j) {
        const uint64_t a = a0 + static_cast<uint64_t>((ty * TX + 16 * j) * (kRowBytes / 16));
#pragma unroll
        for (int u = 0; u < TPC; ++u) {
          const uint32_t row = static_cast<uint32_t>(ty * p.P + shift[u] + 16 * j);
          mma_tab<T, NCO>(acc[u], a, b0 + static_cast<uint64_t>(row * (kRowBytes / 16)));
        }
      }
    }
    for (uint32_t m = bias_boxes; m != 0u; m &= m - 1u) {
      const uint64_t box = b0 + static_cast<uint64_t>(((__ffs(m) - 1) * p.go_bytes) >> 4);
#pragma unroll 1
      for (int ty = 0; ty < p.TY; ++ty) {
#pragma unroll
        for (int j = 0; j < TX / 16; ++j) {
          mma_n8_ta<T>(bsum, box + static_cast<uint64_t>((ty * p.P + 16 * j) * (kRowBytes / 16)), ones_desc);
        }
      }
    }
    wgmma::commit();
    if (cw == 0 && bias_boxes != 0u) {
      const bool last_x = pt % p.tiles_x == p.tiles_x - 1, last_y = (pt / p.tiles_x) % p.tiles_y == p.tiles_y - 1;
      if (last_x || last_y) {
        for (uint32_t m = bias_boxes; m != 0u; m &= m - 1u) {
          bias_halo_sums<T, TX>(hs, smem + s * p.stage_bytes + p.x_bytes + (__ffs(m) - 1) * p.go_bytes, p, ctid, last_x,
                            last_y);
        }
      }
    }
    // The previous stage's MMAs are done once at most this stage's group is in flight.
    wgmma::wait<1>();
    if (prev >= 0 && lane == 0) bulk::mbar_arrive(&empty[prev]);
    prev = s;
  }
  wgmma::wait<0>();
  if (prev >= 0 && lane == 0) bulk::mbar_arrive(&empty[prev]);
#pragma unroll
  for (int u = 0; u < TPC; ++u)
#pragma unroll
    for (int e = 0; e < kAcc; ++e) wgmma::fence_operand(acc[u][e]);
#pragma unroll
  for (int e = 0; e < 4; ++e) wgmma::fence_operand(bsum[e]);

  if (kBiasTpc(TPC, NCO) && bias_row && cw == 0) {
    // Row 0: bsum (m64n8: warp w, g = lane / 4 holds output channels 16w + g in bsum[0] and
    // 16w + g + 8 in bsum[2], every column alike; consumer 1's copy of the same sums is not
    // written). Rows 1 .. 4: warp w's halo sums, its four 8-thread pixel groups added in a fixed
    // butterfly, lanes 0-7 writing chunks 0-7. A kind that owns no box writes zeros.
    float* brow = bias_ws + (static_cast<int64_t>(split) * p.kinds + kind) * kBiasRows * p.Cout;
    if ((lane & 3) == 0) {
      const int co = co0 + 16 * warp + (lane >> 2);
      if (co < p.Cout) brow[co] = bsum[0];
      if (co + 8 < p.Cout) brow[co + 8] = bsum[2];
    }
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      hs[i] += __shfl_xor_sync(0xffffffffu, hs[i], 8);
      hs[i] += __shfl_xor_sync(0xffffffffu, hs[i], 16);
    }
    const int co = co0 + 8 * lane;
    if (lane < 8 && co < p.Cout) {  // Cout % 8 == 0: the chunk is whole
#pragma unroll
      for (int i = 0; i < 8; ++i) brow[(1 + warp) * p.Cout + co + i] = hs[i];
    }
  }

  // Partial sums: D[ci][co] of m64nNCO, thread (warp w, g = lane / 4, t = lane % 4) holds
  // rows 16w + g (+8), columns 8nb + 2t (+1), nb < NCO / 8. Every (ci, co) of the tile is written, zeros
  // for an empty split included, so the reduce reads no stale workspace.
  const int g = lane / 4, t4 = lane % 4;
  float* dst = ws + static_cast<int64_t>(split) * p.taps * p.Cin * p.Cout;
#pragma unroll
  for (int u = 0; u < TPC; ++u) {
    if (u >= unit.ntaps) continue;  // (the unit is read from the parameters again: fewer live registers)
    float* dt = dst + static_cast<int64_t>(unit.tap[u]) * p.Cin * p.Cout;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int ci = ci0 + 16 * warp + g + 8 * h;
      if (ci >= p.Cin) continue;
#pragma unroll
      for (int nb = 0; nb < NCO / 8; ++nb) {
        const int co = co0 + 8 * nb + 2 * t4;  // even; Cout % 8 == 0: co + 1 is in when co is
        if (co < p.Cout) {
          *reinterpret_cast<float2*>(dt + static_cast<int64_t>(ci) * p.Cout + co) =
              make_float2(acc[u][4 * nb + 2 * h], acc[u][4 * nb + 2 * h + 1]);
        }
      }
    }
  }
#else
  __trap();  // built without sm_90a code: the host checks wgmma_available first
#endif
}

// Test / measurement knob CONVT_BWD_GW_WS=0: this kernel off (the ring kernels take these
// shapes). Read once.
bool gw_ws_allowed() {
  static const bool on = !env_equals("CONVT_BWD_GW_WS", "0");
  return on;
}

// Measurement knob CONVT_BWD_GW_WS_NARROW=0: wide (64-channel) co tiles at any Cout, for A/B
// against the narrow ones. Read once.
bool narrow_co_allowed() {
  static const bool on = !env_equals("CONVT_BWD_GW_WS_NARROW", "0");
  return on;
}

// The kernel's parameters plus what the host needs for the tensor maps: residue r is grad_output's
// subgrid of rows SH m + ry[r], columns SW q + rx[r] (m, q >= 0).
struct GwWsPlan {
  GwWsParams p;
  int tpc;
  int ry[kMaxResidues], rx[kMaxResidues];
  int64_t rh[kMaxResidues], rw[kMaxResidues];  // the subgrid's rows, columns
};

// Residues. Tap (ky, kx) reads grad_output row oy = SH iy - PH + ky DH for input row iy. With
// ry = (ky DH - PH) mod SH and qy = (ky DH - PH - ry) / SH, oy = SH (iy + qy) + ry: row iy + qy
// of residue ry's subgrid. So each residue (ry, rx) holding taps is a stride-1 correlation of x
// with its subgrid, read through its own tensor map (strides SH, SW times the dense ones), the
// box of a pixel tile starting at (iy0 + min qy, ix0 + min qx) and a tap's B operand at
// (qy - min qy) P + (qx - min qx) rows into it. At stride 1 the one residue is grad_output
// itself, qy = ky DH - PH.
// Units: the taps in residue order in runs of TPC (a unit may span residues), paired in order
// into block kinds, consumer 0 and 1; a kind loads one box per residue its taps read (up to 4).
// TPC: the least cost, kinds x 2 TPC MMA slots + kLoadSlots per box loaded (x counts one): at
// stride 1 the fewest kinds x (2 TPC + kLoadSlots), 9 taps -> 5 + 4, 15 -> 4 + 4 | 4 + 3,
// 21 -> 6 + 6 | 6 + 3; k4 s2 (residues of 4 taps) -> 4 + 4 | 4 + 4, two boxes each; k3 s2
// (residues of 1, 2, 2, 4 taps) -> 5 + 4 in one kind of four boxes (x read once). Narrow co
// tiles (Cout <= 32) weigh an MMA slot half and take up to kMaxUnitTaps a unit: at stride 1,
// 9 taps -> 5 + 4 (as wide), 15 -> 8 + 7 in one kind (x read once, not twice), 21 -> 6 + 6 |
// 6 + 3 (as wide).
// Tile columns TX: the width rounded up to 16, 32 or 64; tile rows: the most (up to 512 / TX pixels)
// that keep 3 stages, else 2 stages of 1 row, spread evenly over the image's rows.
bool plan_gw_ws(const Geometry& g, GwWsPlan& plan, int sms) {
  GwWsParams& p = plan.p;
  p.N = static_cast<int>(g.N);
  p.Cin = static_cast<int>(g.Cin);
  p.Cout = static_cast<int>(g.Cout);
  p.H = static_cast<int>(g.H);
  p.W = static_cast<int>(g.W);
  p.OH = static_cast<int>(g.Hout);
  p.OW = static_cast<int>(g.Wout);
  p.taps = static_cast<int>(g.KH * g.KW);
  // Residues with taps, in (ry, rx) order; per tap its residue and (qy, qx).
  if (p.taps > kMaxTaps) return false;
  int tap_res[kMaxTaps], tap_qy[kMaxTaps], tap_qx[kMaxTaps];
  int res_of_id[16 * 16];
  const int SH = static_cast<int>(g.SH), SW = static_cast<int>(g.SW);
  if (SH > 16 || SW > 16) return false;
  for (int i = 0; i < SH * SW; ++i) res_of_id[i] = -1;
  p.nres = 0;
  int qy_lo[kMaxResidues], qy_hi[kMaxResidues], qx_lo[kMaxResidues], qx_hi[kMaxResidues];
  for (int ky = 0; ky < g.KH; ++ky) {
    for (int kx = 0; kx < g.KW; ++kx) {
      const int64_t ay = ky * g.DH - g.PH, ax = kx * g.DW - g.PW;
      const int ry = static_cast<int>(ay - floor_div<int64_t>(ay, SH) * SH);
      const int rx = static_cast<int>(ax - floor_div<int64_t>(ax, SW) * SW);
      const int qy = static_cast<int>(floor_div<int64_t>(ay, SH)), qx = static_cast<int>(floor_div<int64_t>(ax, SW));
      int& r = res_of_id[ry * SW + rx];
      if (r < 0) {
        if (p.nres == kMaxResidues) return false;
        r = p.nres++;
        plan.ry[r] = ry;
        plan.rx[r] = rx;
        qy_lo[r] = qy_hi[r] = qy;
        qx_lo[r] = qx_hi[r] = qx;
      }
      const int t = static_cast<int>(ky * g.KW + kx);
      tap_res[t] = r;
      tap_qy[t] = qy;
      tap_qx[t] = qx;
      qy_lo[r] = std::min(qy_lo[r], qy), qy_hi[r] = std::max(qy_hi[r], qy);
      qx_lo[r] = std::min(qx_lo[r], qx), qx_hi[r] = std::max(qx_hi[r], qx);
    }
  }
  int halo_y = 0, halo_x = 0;
  for (int r = 0; r < p.nres; ++r) {
    // An empty subgrid (output smaller than the stride) is left to the other kernels.
    plan.rh[r] = g.Hout > plan.ry[r] ? ceil_div(g.Hout - plan.ry[r], SH) : 0;
    plan.rw[r] = g.Wout > plan.rx[r] ? ceil_div(g.Wout - plan.rx[r], SW) : 0;
    if (plan.rh[r] == 0 || plan.rw[r] == 0) return false;
    p.res_oy[r] = qy_lo[r];
    p.res_ox[r] = qx_lo[r];
    halo_y = std::max(halo_y, qy_hi[r] - qy_lo[r]);
    halo_x = std::max(halo_x, qx_hi[r] - qx_lo[r]);
  }
  // Tile columns: the image's width rounded up to 16, 32 or 64 (narrow images, DCGAN's 16 x 16:
  // a 64-column tile would run 3/4 empty), its rows filling up to kTilePixels (below).
  p.TX = p.W <= 16 ? 16 : p.W <= 32 ? 32 : kMaxTX;
  p.P = p.TX + halo_x;
  if (p.P > 256) return false;
  // TPC and the units. The taps in residue order; runs of TPC are the units, consecutive pairs
  // of units the kinds. Cost (doubled) of a kind: 2 x 2 TPC MMA slots + kLoadSlots x (x box + its
  // residue boxes). With one residue (stride 1) this is the kinds x (2 TPC + kLoadSlots) rule.
  int order[kMaxTaps];  // p.taps <= kMaxTaps (checked above)
  int norder = 0;
  for (int r = 0; r < p.nres; ++r) {
    for (int t = 0; t < p.taps; ++t) {
      if (tap_res[t] == r) order[norder++] = t;
    }
  }
  // One tile row of x and of every box a kind may read must fit twice.
  const int64_t box1 = round_up(static_cast<int64_t>(kRowBytes) * p.P * (1 + halo_y), kSwizzleAlign);
  // Narrow co tiles where Cout <= 32 (the kernel's NCO; knob CONVT_BWD_GW_WS_NARROW=0: wide ones).
  // A narrow product costs half a wide one's MMA slots.
  p.nco = p.Cout <= kNarrowCo && narrow_co_allowed() ? kNarrowCo : kCh;
  int best_cost = -1;
  for (int tpc = 1; tpc <= max_tpc(p.nco); ++tpc) {
    const int kinds = static_cast<int>(ceil_div(p.taps, 2 * tpc));
    if (kinds > kMaxKinds) continue;
    int cost = 0, most_boxes = 0;
    for (int k = 0; k < kinds; ++k) {
      bool seen[kMaxResidues] = {};
      int nb = 0;
      for (int i = 2 * tpc * k; i < std::min(p.taps, 2 * tpc * (k + 1)); ++i) {
        if (!seen[tap_res[order[i]]]) seen[tap_res[order[i]]] = true, ++nb;
      }
      cost += 4 * tpc * p.nco / kCh + kLoadSlots * (1 + nb);
      most_boxes = std::max(most_boxes, nb);
    }
    if (2 * (kRowBytes * p.TX + most_boxes * box1) > kSmemLimit) continue;
    if (best_cost < 0 || cost < best_cost) {
      best_cost = cost;
      plan.tpc = tpc;
    }
  }
  if (best_cost < 0) return false;
  // Units: the taps in residue order, runs of TPC (a unit may span residues); kinds pair them.
  // A kind loads the boxes of the residues its units read. The go box's rows in the stage
  // (go_bytes / 128) are known only with the tile rows, so shifts get the box's place below.
  GwWsUnit units[2 * kMaxKinds];
  int unit_res[2 * kMaxKinds][kMaxUnitTaps];
  int nunits = 0;
  for (int i = 0; i < norder; ++i) {
    const int t = order[i], r = tap_res[t];
    if (nunits == 0 || units[nunits - 1].ntaps == plan.tpc) units[nunits++] = GwWsUnit{};
    GwWsUnit& u = units[nunits - 1];
    u.tap[u.ntaps] = t;
    u.shift[u.ntaps] = (tap_qy[t] - qy_lo[r]) * p.P + (tap_qx[t] - qx_lo[r]);  // within its box
    unit_res[nunits - 1][u.ntaps] = r;
    ++u.ntaps;
  }
  p.kinds = (nunits + 1) / 2;
  p.go_box_count = 1;
  int box_of[kMaxKinds][2][kMaxUnitTaps];  // the box slot of each unit tap in its kind
  for (int k = 0; k < p.kinds; ++k) {
    p.go_boxes[k] = 0;
    for (int c = 0; c < 2; ++c) {
      const int ui = 2 * k + c;
      p.unit[k][c] = ui < nunits ? units[ui] : GwWsUnit{};
      for (int j = 0; j < p.unit[k][c].ntaps; ++j) {
        const int r = unit_res[ui][j];
        int b = 0;
        while (b < p.go_boxes[k] && p.box_res[k][b] != r) ++b;
        if (b == p.go_boxes[k]) p.box_res[k][p.go_boxes[k]++] = r;
        box_of[k][c][j] = b;
      }
    }
    p.go_box_count = std::max(p.go_box_count, p.go_boxes[k]);
  }
  // Tile rows: the most (up to kTilePixels / TX) that keep 3 stages, else 2 stages of 1 row; then
  // the image's rows spread evenly over that many tile rows (16 rows at most 10 a tile: 2 tiles of
  // 8, not 10 + 6 of 10).
  // A stage of ty tile rows: the x box, one box per residue a kind loads; the stages that fit.
  const auto size_stages = [&](int ty) {
    p.x_bytes = static_cast<int>(round_up(kRowBytes * p.TX * ty, kSwizzleAlign));
    p.go_bytes = static_cast<int>(round_up(static_cast<int64_t>(kRowBytes) * p.P * (ty + halo_y), kSwizzleAlign));
    p.stage_bytes = p.x_bytes + p.go_box_count * p.go_bytes;
    p.stages = std::min(kMaxStages, kSmemLimit / p.stage_bytes);
  };
  int best = 0;
  for (int ty = std::min(kTilePixels / p.TX, std::max(p.H, 1)); ty >= 1; --ty) {
    if (ty + halo_y > 256) continue;
    size_stages(ty);
    if (p.stages >= 3 || (ty == 1 && p.stages >= 2)) {
      best = ty;
      break;
    }
  }
  if (best == 0) return false;
  best = static_cast<int>(ceil_div(p.H, ceil_div(p.H, best)));  // <= best: fits as well
  size_stages(best);
  p.TY = best;
  p.go_rows = best + halo_y;
  for (int k = 0; k < p.kinds; ++k) {
    for (int c = 0; c < 2; ++c) {
      for (int j = 0; j < p.unit[k][c].ntaps; ++j) p.unit[k][c].shift[j] += box_of[k][c][j] * (p.go_bytes / kRowBytes);
    }
  }
  p.smem_bytes = p.stages * p.stage_bytes + kSwizzleAlign;
  p.tiles_x = static_cast<int>(ceil_div(p.W, p.TX));
  p.tiles_y = static_cast<int>(ceil_div(p.H, p.TY));
  const int64_t ptiles = static_cast<int64_t>(p.N) * p.tiles_y * p.tiles_x;
  if (ptiles >= (int64_t(1) << 31)) return false;
  p.ptiles = static_cast<int>(ptiles);
  p.ci_tiles = static_cast<int>(ceil_div(p.Cin, kCh));
  p.co_tiles = static_cast<int>(ceil_div(p.Cout, p.nco));
  const int64_t combos = static_cast<int64_t>(p.ci_tiles) * p.co_tiles * p.kinds;
  // One block per SM in all (a single wave), each split at least 8 pixel tiles, a workspace
  // of at most 256 MiB.
  const int64_t E = static_cast<int64_t>(p.taps) * p.Cin * p.Cout;
  int64_t splits = std::max<int64_t>(1, sms / combos);
  splits = std::min<int64_t>(splits, std::max<int64_t>(1, p.ptiles / 8));
  splits = std::min<int64_t>(splits, std::max<int64_t>(1, (int64_t(256) << 20) / (4 * E)));
  p.tiles_per_split = static_cast<int>(ceil_div(p.ptiles, splits));
  p.splits = static_cast<int>(ceil_div(p.ptiles, p.tiles_per_split));
  // grad_bias from the boxes (the kernel's header): every residue holds taps, and the own
  // regions of the pixel tiles, subgrid rows [res_oy, res_oy + tiles_y TY + halo_y) and columns
  // [res_ox, res_ox + tiles_x TX + halo_x) (the last tile row / column takes its box's halo),
  // cover its rh x rw pixels. A residue's boxes are summed by
  // the first kind that loads it.
  p.bias_ok = p.nres == SH * SW && kBiasTpc(plan.tpc, p.nco);
  for (int r = 0; r < p.nres; ++r) {
    p.bias_ok = p.bias_ok && p.res_oy[r] <= 0 &&
                p.res_oy[r] + static_cast<int64_t>(p.tiles_y) * p.TY + halo_y >= plan.rh[r] && p.res_ox[r] <= 0 &&
                p.res_ox[r] + static_cast<int64_t>(p.tiles_x) * p.TX + halo_x >= plan.rw[r];
  }
  bool owned[kMaxResidues] = {};
  for (int k = 0; k < p.kinds; ++k) {
    p.bias_boxes[k] = 0u;
    for (int b = 0; b < p.go_boxes[k]; ++b) {
      const int r = p.box_res[k][b];
      if (!owned[r]) owned[r] = true, p.bias_boxes[k] |= 1u << b;
    }
  }
  return combos * p.splits < (int64_t(1) << 31);
}

template <typename T, int TPC, int TX, int NCO>
void launch_typed(const GwWsParams& p, const at::Tensor& ws, float* bias_ws, const CUtensorMap& x_map,
                  const GoMaps& go_maps) {
  auto kernel = grad_weight_ws_kernel<T, TPC, TX, NCO>;
  C10_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, p.smem_bytes));
  const int64_t blocks = static_cast<int64_t>(p.splits) * p.kinds * p.ci_tiles * p.co_tiles;
  kernel<<<static_cast<unsigned>(blocks), kThreads, p.smem_bytes, at::cuda::getCurrentCUDAStream()>>>(
      ws.data_ptr<float>(), bias_ws, p, x_map, go_maps);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

// The kernel for tpc taps a consumer, 1 .. max_tpc(NCO) (plan_gw_ws keeps it in range).
template <typename T, int TX, int NCO, int TPC = 1>
void launch_by_tpc(int tpc, const GwWsParams& p, const at::Tensor& ws, float* bias_ws, const CUtensorMap& x_map,
                   const GoMaps& go_maps) {
  if constexpr (TPC < max_tpc(NCO)) {
    if (tpc != TPC) return launch_by_tpc<T, TX, NCO, TPC + 1>(tpc, p, ws, bias_ws, x_map, go_maps);
  }
  launch_typed<T, TPC, TX, NCO>(p, ws, bias_ws, x_map, go_maps);
}

template <typename T, int NCO>
void launch_by_tx(int tpc, const GwWsParams& p, const at::Tensor& ws, float* bias_ws, const CUtensorMap& x_map,
                  const GoMaps& go_maps) {
  switch (p.TX) {
    case 16: launch_by_tpc<T, 16, NCO>(tpc, p, ws, bias_ws, x_map, go_maps); break;
    case 32: launch_by_tpc<T, 32, NCO>(tpc, p, ws, bias_ws, x_map, go_maps); break;
    default: launch_by_tpc<T, kMaxTX, NCO>(tpc, p, ws, bias_ws, x_map, go_maps); break;
  }
}

template <typename T>
void launch_by_nco(int tpc, const GwWsParams& p, const at::Tensor& ws, float* bias_ws, const CUtensorMap& x_map,
                   const GoMaps& go_maps) {
  if (p.nco == kNarrowCo) {
    launch_by_tx<T, kNarrowCo>(tpc, p, ws, bias_ws, x_map, go_maps);
  } else {
    launch_by_tx<T, kCh>(tpc, p, ws, bias_ws, x_map, go_maps);
  }
}

// plan_gw_ws of the latest problem on this thread: a backward call asks three times (whether
// it applies, its splits, the launch), and a training loop repeats its shapes.
bool plan_gw_ws_cached(const Geometry& g, GwWsPlan& plan) {
  struct Last {
    bool valid = false, ok = false;
    int sms = 0;
    Geometry g{};
    GwWsPlan plan{};
  };
  thread_local Last last;
  const int sms = sm_count();
  if (!last.valid || last.sms != sms || std::memcmp(&last.g, &g, sizeof(Geometry)) != 0) {
    last.ok = plan_gw_ws(g, last.plan, sms);
    last.g = g;
    last.sms = sms;
    last.valid = true;
  }
  if (last.ok) plan = last.plan;
  return last.ok;
}

}  // namespace

bool grad_weight_ws_supported(const at::Tensor& x, const at::Tensor& go, const Geometry& g) {
  if (!fwd::channels_last_dense(x) || !fwd::channels_last_dense(go)) return false;
  if (reinterpret_cast<uintptr_t>(x.const_data_ptr()) % 16 != 0 || reinterpret_cast<uintptr_t>(go.const_data_ptr()) % 16 != 0)
    return false;
  return grad_weight_ws_plans(g, x);
}

bool grad_weight_ws_plans(const Geometry& g, const at::Tensor& like) {
  if (!gw_ws_allowed()) return false;
  const auto dtype = like.scalar_type();
  if (dtype != at::kBFloat16 && dtype != at::kHalf) return false;
  if (!fwd::wgmma_available(like)) return false;
  if (g.groups != 1 || g.Cin % 8 != 0 || g.Cout % 8 != 0) return false;
  const int64_t big = int64_t(1) << 30;
  if (g.N >= big || g.H >= big || g.W >= big || g.Hout >= big || g.Wout >= big || g.PH >= big || g.PW >= big ||
      g.KH * g.DH >= big || g.KW * g.DW >= big)
    return false;
  GwWsPlan plan{};
  return plan_gw_ws_cached(g, plan);
}

int64_t grad_weight_ws_splits(const Geometry& g) {
  GwWsPlan plan{};
  TORCH_CHECK(plan_gw_ws_cached(g, plan), "convt: grad_weight_ws: unsupported problem");
  return plan.p.splits;
}

bool grad_weight_ws(const at::Tensor& x, const at::Tensor& go, const Geometry& g, int64_t splits,
                    const at::Tensor& ws, const at::Tensor& grad_bias) {
  CONVT_TRACE("cuda.backward.grad_weight_ws");
  GwWsPlan plan{};
  TORCH_CHECK(plan_gw_ws_cached(g, plan) && plan.p.splits == splits, "convt: grad_weight_ws: plan mismatch");
  const GwWsParams& p = plan.p;
  const auto dtype = x.scalar_type();
  const CUtensorMapDataType type = tma::data_type(dtype);  // bfloat16 / float16 here
  CUtensorMap x_map{};
  GoMaps go_maps{};
  {
    const uint64_t C = g.Cin, W = g.W, H = g.H, N = g.N;
    const uint64_t dims[4] = {C, W, H, N};
    const uint64_t strides[3] = {C * 2, W * C * 2, H * W * C * 2};
    const uint32_t box[4] = {static_cast<uint32_t>(kCh), static_cast<uint32_t>(p.TX), static_cast<uint32_t>(p.TY), 1};
    TORCH_CHECK(tma::encode_4d(&x_map, type, x.const_data_ptr(), dims, strides, box, CU_TENSOR_MAP_SWIZZLE_128B),
                "convt: grad_weight_ws: tensor map of the input");
  }
  // Residue r: grad_output's pixels (SH m + ry, SW q + rx), from its first one, strides SH / SW
  // times the dense ones (at stride 1: grad_output itself).
  const uint64_t C = g.Cout;
  for (int r = 0; r < p.nres; ++r) {
    const uint64_t dims[4] = {C, static_cast<uint64_t>(plan.rw[r]), static_cast<uint64_t>(plan.rh[r]),
                              static_cast<uint64_t>(g.N)};
    const uint64_t strides[3] = {g.SW * C * 2, g.SH * g.Wout * C * 2, g.Hout * g.Wout * C * 2};
    const uint32_t box[4] = {static_cast<uint32_t>(kCh), static_cast<uint32_t>(p.P), static_cast<uint32_t>(p.go_rows), 1};
    const char* base = static_cast<const char*>(go.const_data_ptr()) +
                       (static_cast<int64_t>(plan.ry[r]) * g.Wout + plan.rx[r]) * g.Cout * 2;
    TORCH_CHECK(tma::encode_4d(&go_maps.m[r], type, base, dims, strides, box, CU_TENSOR_MAP_SWIZZLE_128B),
                "convt: grad_weight_ws: tensor map of grad_output's residue ", r);
  }
  // grad_bias's partial sums, kBiasRows rows per (split, kind); reduced in that order.
  const bool bias = grad_bias.defined() && p.bias_ok;
  at::Tensor bias_ws;
  if (bias) bias_ws = at::empty({static_cast<int64_t>(p.splits) * p.kinds * kBiasRows, g.Cout}, x.options().dtype(at::kFloat));
  float* bias_ptr = bias ? bias_ws.data_ptr<float>() : nullptr;
  if (dtype == at::kBFloat16) {
    launch_by_nco<c10::BFloat16>(plan.tpc, p, ws, bias_ptr, x_map, go_maps);
  } else {
    launch_by_nco<c10::Half>(plan.tpc, p, ws, bias_ptr, x_map, go_maps);
  }
  if (bias) grad_bias_reduce(bias_ws, g, bias_ws.size(0), grad_bias);
  return bias;
}

}  // namespace bwd
}  // namespace convt
