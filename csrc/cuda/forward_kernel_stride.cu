// Forward of conv_transpose2d with kernel == stride on channels_last input and output
// (sm_90a; bfloat16 / float16, float in TF32): one GEMM whose result is written
// depth-to-space by its epilogue. U-Net's and Mask R-CNN's 2 x 2 / stride 2 up-sampling.
//
// Why: with kernel == stride (no padding, dilation or output padding) every output pixel is
// one tap of one input pixel,
//   out[n][iy*KH + ky][ix*KW + kx][co] = bias[co] + sum_ci x[n][iy][ix][ci] * w[ci][co][ky][kx],
// and the cuBLAS path (forward_gemm.cu launch_gemm_direct_cl) runs it as KH strided-batched
// GEMMs with one batch entry per input row. On Mask R-CNN's 14 x 14 images that is 7168 entries
// of 512 x 14 x 256: cuBLAS re-reads the weights for every entry, 320 us against cuDNN's 99
// (bf16, H100, run LF). Each call also costs two cublasLtMatmul calls (19.5 us of host time
// each) and a bias repeat (43 us of host time; run MB), which is most of a small layer's step.
//
// The GEMM: D[(tap, co)][pixel] = sum_ci W[ci][co][tap] X[pixel][ci], K = Cin, with the pixels
// flat over (n, iy, ix): one tap per output pixel means no halo, so image boundaries do not
// matter. A consumer item is one column tile (a tap and 64 output channels: M, operand A =
// the packed weights) times one run of 128 flat pixels (N, operand B = the input): one
// m64n128 MMA per 32-byte K chunk. Its epilogue writes each pixel's 64 channels (128 bytes in
// bf16) to that pixel's output pixel of the tap: whole 16-byte pieces, as forward_wgmma_ws.cu.
//
// Traffic: a block keeps a run's whole input (128 pixels x Cin) in shared memory and runs
// every column tile (KH*KW*Cout/64 items) over it, so the input crosses L2 once; the weights
// (KH*KW*Cout*Cin elements, L2-resident) stream once per item. Mask R-CNN bf16: 51 MB of input
// and 12544 items x 32 KB = 411 MB of weights from L2, against 617 MB for a 128 x 256 tiled
// GEMM that re-reads both operands. Inputs too wide to keep (128 x Cin x element size beyond
// what shared memory holds next to the stages: bf16 Cin > 384) are not taken (U-Net's
// 1024-channel layer stays with cuBLAS).
//
// Structure (forward_wgmma_ws.cu's warp-specialized ping-pong):
//  - warpgroup 0 is the producer: one thread loads a run's input into one of `nbuf` input
//    buffers (one 32-byte-swizzled tensor-map box [128 pixels][32 B] per K chunk, completing on
//    xfull), then each item's weights through a ring of stages (`cps` chunks per stage, one
//    bulk copy), waiting `empty` before refilling a stage and `xempty` before refilling a buffer.
//  - warpgroups 1 and 2 are consumers taking alternate items (a run's column tiles in turn),
//    so that one consumer's epilogue overlaps the other's MMAs. Each waits for its run's input
//    (xfull) even where it has no item in the run, and signals xempty once its MMAs on the run
//    are done: a buffer is refilled only after both consumers have left it, and neither can
//    run a whole buffer cycle ahead of the other.
//  - setmaxnreg moves registers from the producer (40) to the consumers (232).
//
// float (TF32): the weights are rounded to TF32 when packed; the input reaches the MMA
// unrounded (truncated by it), as in forward_wgmma_ws.cu. Its epilogue stores from the
// registers (32-byte runs of 8 channels per pixel).
//
// NCHW output (kNchw; forward.cu's route for NCHW tensors copies only the input), for KW == 2:
// an item is (ky, a column tile of 64 channels) with both kx taps, two accumulators over the same
// input chunks (two m64n128 MMAs per chunk, the weights of both taps in one stage). A thread
// then holds, for its channel and pixels ix, ix + 1 of one row (W even), the outputs at
// ox = 2 ix .. 2 ix + 3: one 16-byte store of float (8 bytes of 16-bit) per channel and pixel
// pair, so a quad of lanes writes 64 contiguous bytes of a row. Why both taps: with one tap per
// item a lane's outputs would be every other element of a row (the stride-2 sectors that made
// forward_wgmma_ws.cu's NCHW epilogue 1.5-5x slower on large outputs, run QP). Odd W: one
// 8-byte (4-byte) store per pixel. Items go tile-major (item_column). Mask R-CNN (H100, run RC):
// float32 477 us (channels_last output ~540), bf16 368 (channels_last output 213: its 8-byte
// stores fill a sector per lane quad, the staged 16-bit epilogue writes whole pixels).
//
// Deterministic: each output element is one fixed-order sum over K chunks; no atomics.
#include <ATen/ATen.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>

#include <algorithm>
#include <cstdint>

#include "bulk_copy.cuh"
#include "env_knob.h"
#include "forward_launch.cuh"
#include "mma.cuh"
#include "pack.cuh"
#include "tensor_map.cuh"
#include "tf32_flag.h"
#include "wgmma.cuh"
#include "ws_consumer.cuh"
#include "../host_trace.h"

namespace convt {
namespace fwd {
namespace {

constexpr int kRun = 128;            // pixels per run: N of one m64n128 MMA
constexpr int kCoTile = 64;          // M: output channels per column tile
constexpr int kChunkBytes = 32;      // K chunk: 16 bf16 / fp16, 8 float (one k16 / k8 step)
constexpr int kXChunkBytes = kRun * kChunkBytes;  // a run's chunk: [128 pixels][32 B], 32-byte swizzle
constexpr int kWChunkBytes = 2 * kCoTile * 16;    // a column tile's chunk: [2 quanta][64 co][16 B]
constexpr int kMaxStages = 4;
constexpr int kMaxBufs = 2;
constexpr int kStagePitch = 72;      // epilogue staging row (16-bit): 64 channels + 8
constexpr int kStagingBytes = kRun * kStagePitch * 2;
constexpr int kSwizzleRepeat = 256;  // the 32-byte swizzle's pattern: 8 rows
constexpr int kSmemLimit = 225 * 1024;
static_assert(kSmemLimit + 8 * 1024 < (1 << 18), "descriptor start addresses must fit 14 bits of 16 bytes (wgmma::desc_lo)");
constexpr int kThreads = 384;        // producer warpgroup + two consumer warpgroups
// Input rows at least this wide stay with cuBLAS's per-row GEMMs (launch_gemm_direct_cl), which
// run near their rate once a row fills their 64+ pixel tiles. H100 run NC (A/B, ms): Mask R-CNN
// (W = 14) bf16 0.352 -> 0.227, fp16 0.333 -> 0.228, fp32 0.766 -> 0.543 here; unet_up1 (W = 256)
// bf16 0.202 -> 0.216, fp32 0.425 -> 0.532, slower here.
constexpr int64_t kMaxWidth = 64;
static_assert(kXChunkBytes % kSwizzleRepeat == 0 && kStagingBytes % kSwizzleRepeat == 0 &&
                  kWChunkBytes % kSwizzleRepeat == 0,
              "every shared-memory region keeps the swizzle's alignment");

struct KsParams {
  int64_t M;           // input pixels, N * H * W
  int H, W, OH, OW, KH, KW, Cin, Cout;
  int taps_per_item;   // 1, or KW (== 2) with NCHW output: an item's kx taps
  int wchunk_bytes;    // an item's weights per K chunk: taps_per_item * kWChunkBytes
  int co_tiles, cols;  // items: cols = KH * KW / taps_per_item * co_tiles, in item_column's order
  int runs;            // ceil(M / kRun)
  int nchunks;         // K chunks (the last one past Cin reads zeros)
  int cps, spi;        // weight chunks per stage; stages per item
  int nbuf, stages;
  int x_bytes, stage_bytes, stages_offset, staging_offset, smem_bytes;
};

// Item col's tap group (a tap, or kNchw's ky) and column tile. Channels_last output: tap-major.
// kNchw: tile-major, so the consumers (alternate items) write a tile's rows oy = iy KH + ky for
// consecutive ky at the same time. Why: an output row is not whole sectors (Mask R-CNN bf16: 56
// bytes), so the sectors between rows ky and ky + 1 are whole only once both items have written.
// In tap-major order the second came co_tiles items later (4 on Mask R-CNN, ~40 us): H100 runs
// RB -> RC, Mask R-CNN kernel us, tap-major -> tile-major: bf16 495 -> 368, float32 707 -> 477
// (channels_last output: bf16 213, float32 ~540).
__host__ __device__ __forceinline__ void item_column(const KsParams& p, int col, int& tapg, int& cot) {
  if (p.taps_per_item > 1) {
    tapg = col % p.KH;
    cot = col / p.KH;
  } else {
    tapg = col / p.co_tiles;
    cot = col - tapg * p.co_tiles;
  }
}

// weights [Cin][Cout][KH][KW] (any strides) -> [item (tap group, co tile)][chunk][tap of the group][quantum][co 64][16 B]:
// an item's chunks are contiguous (a stage is one bulk copy) and each tap's part of a chunk is
// wgmma's K-major A operand without swizzle. A tap group is one tap, or a row's KW taps
// (taps_per_item). Channels past Cin or Cout are zeros.
template <typename T>
__global__ void pack_weights_ks(const T* __restrict__ w, T* __restrict__ wp, const KsParams p, WeightStrides ws,
                                int64_t total) {
  constexpr int EPQ = 16 / sizeof(T);  // elements per 16-byte quantum
  for (int64_t idx = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; idx < total;
       idx += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const OperandDigits d = operand_digits<EPQ, kCoTile, 2>(idx);
    const int e = d.e, co_l = d.co_l, q = d.q;
    const int sub = static_cast<int>(d.rest % p.taps_per_item);
    const int64_t r = d.rest / p.taps_per_item;
    const int chunk = static_cast<int>(r % p.nchunks);
    const int col = static_cast<int>(r / p.nchunks);
    int tapg, cot;
    item_column(p, col, tapg, cot);
    const int tap = tapg * p.taps_per_item + sub;
    const int64_t ci = (static_cast<int64_t>(chunk) * 2 + q) * EPQ + e;
    const int64_t co = static_cast<int64_t>(cot) * kCoTile + co_l;
    const int ky = tap / p.KW, kx = tap - ky * p.KW;
    T v = ci < p.Cin && co < p.Cout ? w[ci * ws.ci + co * ws.co + ky * ws.ky + kx * ws.kx] : T(0);
    if constexpr (std::is_same_v<T, float>) v = __uint_as_float(mma::to_tf32(v));
    wp[idx] = v;
  }
}

#ifdef CONVT_SM90A_DEVICE
// Output pixel of input pixel m (flat (n, iy, ix), below 2^31: 32-bit division) for tap
// (ky, kx): with OH = H * KH, n * OH + iy * KH = (n * H + iy) * KH.
__device__ __forceinline__ int64_t out_pixel(const KsParams& p, int64_t m, int ky, int kx) {
  const int m32 = static_cast<int>(m);
  const int row = m32 / p.W;  // n * H + iy
  const int ix = m32 - row * p.W;
  return (static_cast<int64_t>(row) * p.KH + ky) * p.OW + static_cast<int64_t>(ix) * p.KW + kx;
}
#endif

#ifdef CONVT_SM90A_DEVICE
// kNchw stores: two or four consecutive outputs (8 / 16 bytes of float, 4 / 8 of 16-bit).
template <typename T>
__device__ __forceinline__ void store_two(T* o, float a, float b) {
  if constexpr (std::is_same_v<T, float>) {
    *reinterpret_cast<float2*>(o) = make_float2(a, b);
  } else {
    *reinterpret_cast<uint32_t*>(o) = ws::pack_pair<T>(a, b);
  }
}
template <typename T>
__device__ __forceinline__ void store_four(T* o, float a, float b, float c, float d) {
  if constexpr (std::is_same_v<T, float>) {
    *reinterpret_cast<float4*>(o) = make_float4(a, b, c, d);
  } else {
    *reinterpret_cast<uint2*>(o) = make_uint2(ws::pack_pair<T>(a, b), ws::pack_pair<T>(c, d));
  }
}
#endif

template <typename T, bool kNchw>
__global__ void __launch_bounds__(kThreads, 1)
    kernel_stride_fwd_kernel(const uint4* __restrict__ wp, const T* __restrict__ bias, T* __restrict__ out,
                             const KsParams p, const __grid_constant__ CUtensorMap x_map) {
#ifdef CONVT_SM90A_DEVICE
  extern __shared__ __align__(128) unsigned char smem_raw[];  // aligned to kSwizzleRepeat below
  __shared__ uint64_t full[kMaxStages], empty[kMaxStages];
  __shared__ uint64_t xfull[kMaxBufs], xempty[kMaxBufs];
  __shared__ uint64_t turn[2];  // as forward_wgmma_ws.cu: consumers take items strictly in turn
  const int tid = threadIdx.x;
  if (tid == 0) {
    for (int s = 0; s < p.stages; ++s) {
      bulk::mbar_init(&full[s]);      // the producer's expect_tx
      bulk::mbar_init(&empty[s], 4);  // one arrival per warp of the consuming warpgroup
    }
    for (int b = 0; b < p.nbuf; ++b) {
      bulk::mbar_init(&xfull[b]);
      bulk::mbar_init(&xempty[b], 8);  // every warp of both consumers, once per run
    }
    bulk::mbar_init(&turn[0], 4);  // one arrival per warp of consumer 1 (forward_wgmma_ws.cu)
    bulk::mbar_init(&turn[1], 4);  // one arrival per warp of consumer 0
    bulk::fence_mbar_init();
  }
  unsigned char* smem = smem_raw + ((kSwizzleRepeat - (bulk::smem_addr(smem_raw) & (kSwizzleRepeat - 1))) & (kSwizzleRepeat - 1));
  __syncthreads();
  const int wg = tid / 128;
  constexpr int chunk_ch = kChunkBytes / static_cast<int>(sizeof(T));

  if (wg == 0) {
    // ---- producer ----
    asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\n" ::: "memory");
    if (tid != 0) return;
    const unsigned char* wbase = reinterpret_cast<const unsigned char*>(wp);
    int64_t k = 0;  // weight stages issued by this block
    int rl = 0;     // this block's runs so far
    for (int run = blockIdx.x; run < p.runs; run += gridDim.x, ++rl) {
      const int buf = rl % p.nbuf;
      if (rl >= p.nbuf) bulk::mbar_wait(&xempty[buf], ((rl / p.nbuf) - 1) & 1);
      unsigned char* xb = smem + buf * p.x_bytes;
      // Every box lands whole (pixels past M and channels past Cin as zeros).
      bulk::arrive_expect(&xfull[buf], static_cast<uint32_t>(p.x_bytes));
      for (int c = 0; c < p.nchunks; ++c) {
        tma::load_4d(xb + c * kXChunkBytes, &x_map, c * chunk_ch, run * kRun, 0, 0, &xfull[buf]);
      }
      for (int col = 0; col < p.cols; ++col) {
        const unsigned char* wsrc = wbase + static_cast<int64_t>(col) * p.nchunks * p.wchunk_bytes;
        for (int si = 0; si < p.spi; ++si, ++k) {
          const int s = static_cast<int>(k % p.stages);
          if (k >= p.stages) bulk::mbar_wait(&empty[s], static_cast<uint32_t>((k / p.stages) - 1) & 1);
          const int c0 = si * p.cps;
          const uint32_t bytes = static_cast<uint32_t>(p.cps * p.wchunk_bytes);
          bulk::arrive_expect(&full[s], bytes);
          bulk::copy_g2s_only(smem + p.stages_offset + s * p.stage_bytes, wsrc + static_cast<int64_t>(c0) * p.wchunk_bytes,
                              bytes, &full[s]);
        }
      }
    }
    return;
  }

  // ---- consumers ----
  asm volatile("setmaxnreg.inc.sync.aligned.u32 232;\n" ::: "memory");
  const int cw = wg - 1;
  const int ctid = tid - 128 * wg;
  const int warp = ctid / 32, lane = ctid % 32;
  const int g = lane / 4, t4 = lane % 4;
  unsigned char* staging = smem + p.staging_offset + cw * kStagingBytes;
  const uint32_t staging_addr = bulk::smem_addr(staging);
  float acc[64];
  float acc1[kNchw ? 64 : 1];  // kNchw: tap kx = 1 (acc: kx = 0)
  int rl = 0;
  for (int run = blockIdx.x; run < p.runs; run += gridDim.x, ++rl) {
    const int buf = rl % p.nbuf;
    bulk::mbar_wait(&xfull[buf], (rl / p.nbuf) & 1);
    const uint32_t xaddr = bulk::smem_addr(smem + buf * p.x_bytes);
    const int64_t m0 = static_cast<int64_t>(run) * kRun;
    const int64_t j0 = static_cast<int64_t>(rl) * p.cols;  // this run's first item
    for (int col = static_cast<int>((j0 + cw) & 1); col < p.cols; col += 2) {
      const int64_t j = j0 + col;  // item j: consumer j % 2
      int tapg, cot;  // kNchw: tapg = ky, both kx
      item_column(p, col, tapg, cot);
      const int ky = kNchw ? tapg : tapg / p.KW, kx = kNchw ? 0 : tapg - ky * p.KW;
      // This thread's two output channels: co = 16 warp + g and co + 8 of the tile.
      const int co0 = cot * kCoTile + 16 * warp + g;
      float b_lo = 0.f, b_hi = 0.f;
      if (bias != nullptr) {
        if (co0 < p.Cout) b_lo = static_cast<float>(bias[co0]);
        if (co0 + 8 < p.Cout) b_hi = static_cast<float>(bias[co0 + 8]);
      }
#pragma unroll
      for (int i = 0; i < 64; ++i) acc[i] = 0.f;
      if constexpr (kNchw) {
#pragma unroll
        for (int i = 0; i < 64; ++i) acc1[i] = 0.f;
      }
      // Turns (forward_wgmma_ws.cu): item j starts once every warp of the other consumer has seen
      // item j - 1's stages land, so each parity wait on a shared stage is exact. One arrival per
      // warp, not one per consumer: with thread 0's alone, a lagging warp could miss a phase
      // (both turns' phases completing before it polled) and wait forever, holding its
      // warpgroup's MMAs; that was the hang of runs MC-MG.
      const int64_t n = j / 2;
      if (cw == 0 && j > 0) bulk::mbar_wait(&turn[0], static_cast<uint32_t>(n - 1) & 1);
      if (cw == 1) bulk::mbar_wait(&turn[1], static_cast<uint32_t>(n) & 1);
      int prev = -1;
      for (int si = 0; si < p.spi; ++si) {
        const int64_t k = j * p.spi + si;
        const int s = static_cast<int>(k % p.stages);
        bulk::mbar_wait(&full[s], static_cast<uint32_t>(k / p.stages) & 1);
        if (si == p.spi - 1 && lane == 0) bulk::mbar_arrive(&turn[1 - cw]);
        const uint32_t st = bulk::smem_addr(smem + p.stages_offset + s * p.stage_bytes);
        const int c0 = si * p.cps;
        const uint64_t a0 = wgmma::make_desc(st, kCoTile * 16, 128);
        // B K-major, 32-byte swizzle: SBO = 8 pixels (256 bytes).
        const uint64_t b0 = wgmma::make_desc_swizzled(xaddr + c0 * kXChunkBytes, 16, 8 * kChunkBytes, wgmma::Swizzle::k32);
        // Per chunk only the descriptors' low words move, by 32-bit adds (wgmma::desc_lo): 13 instructions
        // per HGMMA here, against 27 with 64-bit adds (a chain of adds with carry and four R2UR).
        const uint32_t a_lo = static_cast<uint32_t>(a0), b_lo = static_cast<uint32_t>(b0);
        wgmma::fence();
#pragma unroll 1
        for (int cc = 0; cc < p.cps; ++cc) {  // a kernel parameter: a uniform trip count (see plan_ks)
          const uint64_t a = wgmma::desc_lo(a0, a_lo + static_cast<uint32_t>(cc * (p.wchunk_bytes / 16)));  // 16-byte units
          const uint64_t b = wgmma::desc_lo(b0, b_lo + static_cast<uint32_t>(cc * (kXChunkBytes / 16)));
          wgmma::mma<T, 128>(acc, a, b);
          if constexpr (kNchw) wgmma::mma<T, 128>(acc1, wgmma::desc_lo(a, static_cast<uint32_t>(a) + kWChunkBytes / 16), b);  // tap kx = 1
        }
        wgmma::commit();
        ws::release_previous(empty, prev, s, lane);
      }
      ws::release_last(empty, prev, lane);
#pragma unroll
      for (int i = 0; i < 64; ++i) wgmma::fence_operand(acc[i]);
      if constexpr (kNchw) {
#pragma unroll
        for (int i = 0; i < 64; ++i) wgmma::fence_operand(acc1[i]);
      }

      // Epilogue. This thread holds D[co][px] for co = 16 warp + g (+8), px = 8 j' + 2 t4 (+1).
      if constexpr (kNchw) {
        // Pixels m, m + 1 (m even) and taps kx = 0, 1: outputs ox = 2 ix .. 2 ix + 3 of row
        // oy = iy KH + ky where both pixels are in one row (W even; then OW % 4 == 0 and ix is
        // even: 16-byte aligned), else each pixel's two (ox even: 8-byte aligned).
        const int64_t plane = static_cast<int64_t>(p.OH) * p.OW;
        const bool lo_in = co0 < p.Cout, hi_in = co0 + 8 < p.Cout;
        T* const out_lo = out + static_cast<int64_t>(co0) * plane;  // only stored through where lo_in
        const bool even_w = (p.W & 1) == 0;
        // Output offset of pixel m's tap kx = 0 in channel 0's plane.
        const auto pixel_offset = [&](int64_t m) {
          const int m32 = static_cast<int>(m);
          const int row = m32 / p.W, ix = m32 - row * p.W;  // row = n * H + iy
          const int n = row / p.H, iy = row - n * p.H;
          return (static_cast<int64_t>(n) * p.Cout * p.OH + static_cast<int64_t>(iy) * p.KH + ky) * p.OW + 2 * ix;
        };
#pragma unroll  // whole: a runtime index into acc would move it to local memory
        for (int jj = 0; jj < 16; ++jj) {
          const int64_t m = m0 + 8 * jj + 2 * t4;
          if (m >= p.M) continue;
          const int64_t off = pixel_offset(m);
          if (even_w) {  // M = N H W is even: m + 1 < M
            if (lo_in)
              store_four(out_lo + off, acc[4 * jj] + b_lo, acc1[4 * jj] + b_lo, acc[4 * jj + 1] + b_lo,
                         acc1[4 * jj + 1] + b_lo);
            if (hi_in)
              store_four(out_lo + 8 * plane + off, acc[4 * jj + 2] + b_hi, acc1[4 * jj + 2] + b_hi,
                         acc[4 * jj + 3] + b_hi, acc1[4 * jj + 3] + b_hi);
          } else {
            if (lo_in) store_two(out_lo + off, acc[4 * jj] + b_lo, acc1[4 * jj] + b_lo);
            if (hi_in) store_two(out_lo + 8 * plane + off, acc[4 * jj + 2] + b_hi, acc1[4 * jj + 2] + b_hi);
            if (m + 1 < p.M) {
              const int64_t off1 = pixel_offset(m + 1);
              if (lo_in) store_two(out_lo + off1, acc[4 * jj + 1] + b_lo, acc1[4 * jj + 1] + b_lo);
              if (hi_in) store_two(out_lo + 8 * plane + off1, acc[4 * jj + 3] + b_hi, acc1[4 * jj + 3] + b_hi);
            }
          }
        }
      } else if constexpr (std::is_same_v<T, float>) {
        const bool lo_in = co0 < p.Cout, hi_in = co0 + 8 < p.Cout;
#pragma unroll  // whole: a runtime index into acc would move it to local memory
        for (int jj = 0; jj < 16; ++jj) {
#pragma unroll
          for (int h = 0; h < 2; ++h) {
            const int64_t m = m0 + 8 * jj + 2 * t4 + h;
            if (m < p.M) {
              T* o = out + out_pixel(p, m, ky, kx) * p.Cout + co0;
              if (lo_in) o[0] = acc[4 * jj + h] + b_lo;
              if (hi_in) o[8] = acc[4 * jj + 2 + h] + b_hi;
            }
          }
        }
      } else {
        // stmatrix.trans into [pixel][64 + 8 channels], then 16-byte stores of whole pixels.
        const int mi = lane / 8, mr = lane % 8;
        const uint32_t row_addr =
            staging_addr + static_cast<uint32_t>(((8 * (mi >> 1) + mr) * kStagePitch + 16 * warp + 8 * (mi & 1)) * 2);
        ws::stage_transposed<T>(acc, row_addr, kStagePitch * 2, b_lo, b_hi);
        ws::consumer_sync(1 + cw);
        const int piece = ctid % 8;  // 8 lanes x 16 bytes per pixel's 64 channels
        const bool piece_in = cot * kCoTile + piece * 8 < p.Cout;  // Cout % 8 == 0: whole pieces
        T* const out_tile = out + static_cast<int64_t>(cot) * kCoTile + piece * 8;
#pragma unroll 4
        for (int i = 0; i < kRun / 16; ++i) {
          const int slot = ctid / 8 + 16 * i;
          const int64_t m = m0 + slot;
          if (piece_in && m < p.M) {
            const uint4 v = *reinterpret_cast<const uint4*>(staging + (slot * kStagePitch + piece * 8) * 2);
            *reinterpret_cast<uint4*>(out_tile + out_pixel(p, m, ky, kx) * p.Cout) = v;
          }
        }
        ws::consumer_sync(1 + cw);  // the staging tile is free for this consumer's next item
      }
    }
    // This consumer's MMAs on the run's input are done (wait<0> after each item): the buffer may
    // be refilled once the other consumer's warps say the same.
    if (lane == 0) bulk::mbar_arrive(&xempty[buf]);
  }
#else
  __trap();  // built without sm_90a code: the host checks wgmma_available first
#endif
}

// Test / measurement knob CONVT_FWD_KSTRIDE: 0 turns this kernel off (kernel == stride then takes
// the cuBLAS path); cl keeps it to channels_last output (no kNchw: forward.cu's route for NCHW
// tensors then copies the output back). Read once.
bool ks_allowed() {
  static const bool on = !env_equals("CONVT_FWD_KSTRIDE", "0");
  return on;
}
bool ks_nchw_allowed() {
  static const bool on = !env_equals("CONVT_FWD_KSTRIDE", "cl");
  return on;
}

bool plan_ks(const Geometry& g, int elem, bool nchw, KsParams& p) {
  p.M = g.N * g.H * g.W;
  p.H = static_cast<int>(g.H);
  p.W = static_cast<int>(g.W);
  p.OH = static_cast<int>(g.Hout);
  p.OW = static_cast<int>(g.Wout);
  p.KH = static_cast<int>(g.KH);
  p.KW = static_cast<int>(g.KW);
  p.Cin = static_cast<int>(g.Cin);
  p.Cout = static_cast<int>(g.Cout);
  p.taps_per_item = nchw ? p.KW : 1;
  p.wchunk_bytes = p.taps_per_item * kWChunkBytes;
  p.co_tiles = static_cast<int>(ceil_div(g.Cout, kCoTile));
  p.cols = p.KH * p.KW / p.taps_per_item * p.co_tiles;
  p.runs = static_cast<int>(ceil_div(p.M, kRun));
  p.nchunks = static_cast<int>(ceil_div(g.Cin, kChunkBytes / elem));
  p.x_bytes = p.nchunks * kXChunkBytes;
  // Stages of up to 16 KB of weights, every one full: cps divides nchunks. The MMA loop's trip
  // count is then a kernel parameter; a count the compiler cannot prove uniform (the last
  // stage's remainder) made ptxas serialize the MMAs (advisory C7520: a wait after each one).
  p.cps = 1;
  for (int c = std::min(p.nchunks, 8 / p.taps_per_item); c >= 1; --c) {
    if (p.nchunks % c == 0) {
      p.cps = c;
      break;
    }
  }
  p.spi = p.nchunks / p.cps;
  p.stage_bytes = p.cps * p.wchunk_bytes;
  const int staging = elem == 2 && !nchw ? 2 * kStagingBytes : 0;  // kNchw stores from the registers
  // Two input buffers (the next run loads while this one computes) with at least 3 weight
  // stages, else one buffer; fewer than 2 stages: not taken.
  const int choices[][2] = {{2, 4}, {2, 3}, {1, 4}, {1, 3}, {2, 2}, {1, 2}};
  p.nbuf = 0;
  for (const auto& ch : choices) {
    if (static_cast<int64_t>(ch[0]) * p.x_bytes + static_cast<int64_t>(ch[1]) * p.stage_bytes + staging <= kSmemLimit) {
      p.nbuf = ch[0];
      p.stages = ch[1];
      break;
    }
  }
  if (p.nbuf == 0) return false;
  p.stages_offset = p.nbuf * p.x_bytes;
  p.staging_offset = p.stages_offset + p.stages * p.stage_bytes;
  p.smem_bytes = p.staging_offset + staging + kSwizzleRepeat;
  return true;
}

template <typename T>
void launch_typed(const at::Tensor& input, const at::Tensor& weight, const std::optional<at::Tensor>& bias,
                  const at::Tensor& output, const KsParams& p, const CUtensorMap& x_map) {
  auto stream = at::cuda::getCurrentCUDAStream();
  const int64_t total = static_cast<int64_t>(p.cols) * p.nchunks * p.wchunk_bytes / static_cast<int64_t>(sizeof(T));
  at::Tensor wp = at::empty({total}, weight.options());
  {
    CONVT_TRACE("cuda.forward.kernel_stride.pack_weights");
    const int threads = 256;
    const int64_t blocks = std::min<int64_t>(ceil_div(total, threads), 4096);
    pack_weights_ks<T><<<static_cast<unsigned>(blocks), threads, 0, stream>>>(
        weight.data_ptr<T>(), wp.data_ptr<T>(), p, WeightStrides(weight), total);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  }
  CONVT_TRACE("cuda.forward.kernel_stride.launch");
  auto kernel = p.taps_per_item > 1 ? kernel_stride_fwd_kernel<T, true> : kernel_stride_fwd_kernel<T, false>;
  C10_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, p.smem_bytes));
  const int sms = at::cuda::getCurrentDeviceProperties()->multiProcessorCount;
  const int blocks = std::min(sms, p.runs);
  const T* bias_ptr = (bias.has_value() && bias->defined()) ? bias->data_ptr<T>() : nullptr;
  kernel<<<blocks, kThreads, p.smem_bytes, stream>>>(reinterpret_cast<const uint4*>(wp.data_ptr<T>()), bias_ptr,
                                                     output.data_ptr<T>(), p, x_map);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

// The checks of the geometry and dtype (the kernel's reach) and the plan. nchw: NCHW output
// (kNchw: kernel width 2).
bool ks_admit(const Geometry& g, at::ScalarType dtype, bool nchw, int& elem, KsParams& p) {
  if (!ks_allowed()) return false;
  if (dtype != at::kBFloat16 && dtype != at::kHalf && !(dtype == at::kFloat && allow_tf32_conv())) return false;
  elem = dtype == at::kFloat ? 4 : 2;
  if (!kernel_equals_stride(g) || g.groups != 1 || g.W >= kMaxWidth) return false;
  // Input rows whole 16-byte quanta (the tensor map's row stride); 16-bit outputs in whole
  // 16-byte pieces of 8 channels (float stores single channels).
  if ((g.Cin * elem) % 16 != 0 || (elem == 2 && !nchw && g.Cout % 8 != 0)) return false;
  if (nchw && (g.KW != 2 || !ks_nchw_allowed())) return false;
  // Box coordinates are 32-bit: pixels below 2^31 (runs * 128 too).
  if (g.N * g.H * g.W >= (int64_t(1) << 31) - kRun || g.Cin >= (int64_t(1) << 20) || g.Cout >= (int64_t(1) << 20) ||
      g.KH * g.KW * ceil_div(g.Cout, kCoTile) >= (int64_t(1) << 20))
    return false;
  if (g.N * g.H * g.W == 0) return false;
  p = KsParams{};
  return plan_ks(g, elem, nchw, p);
}

}  // namespace

bool kernel_stride_plans(const Geometry& g, at::ScalarType dtype, bool nchw_out) {
  int elem = 0;
  KsParams p;
  return ks_admit(g, dtype, nchw_out, elem, p);
}

bool launch_kernel_stride(const at::Tensor& input, const at::Tensor& weight, const std::optional<at::Tensor>& bias,
                          const Geometry& g, const at::Tensor& output) {
  CONVT_TRACE("cuda.forward.kernel_stride");
  if (!ks_allowed() || !wgmma_available(input)) return false;
  // Output channels_last, or NCHW (kNchw).
  const bool nchw = !channels_last_dense(output);
  if (!channels_last_dense(input) || (nchw && (output.dim() != 4 || !output.is_contiguous()))) return false;
  if (reinterpret_cast<uintptr_t>(input.data_ptr()) % 16 != 0 || reinterpret_cast<uintptr_t>(output.data_ptr()) % 16 != 0)
    return false;
  if (bias.has_value() && bias->defined() && bias->stride(0) != 1) return false;
  const auto dtype = input.scalar_type();
  int elem = 0;
  KsParams p;
  if (!ks_admit(g, dtype, nchw, elem, p)) return false;
  CUtensorMap x_map;
  {
    CONVT_TRACE("cuda.forward.kernel_stride.tensor_map");
    // The input as a matrix [pixels][Cin] (dims 2 and 3 of size 1).
    const uint64_t es = elem, C = g.Cin, M = static_cast<uint64_t>(p.M);
    const uint64_t dims[4] = {C, M, 1, 1};
    const uint64_t strides[3] = {C * es, M * C * es, M * C * es};
    const uint32_t box[4] = {static_cast<uint32_t>(kChunkBytes / elem), static_cast<uint32_t>(kRun), 1, 1};
    if (!tma::encode_4d(&x_map, tma::data_type(dtype), input.data_ptr(), dims, strides, box, CU_TENSOR_MAP_SWIZZLE_32B)) return false;
  }
  if (dtype == at::kFloat) {
    launch_typed<float>(input, weight, bias, output, p, x_map);
  } else if (dtype == at::kBFloat16) {
    launch_typed<c10::BFloat16>(input, weight, bias, output, p, x_map);
  } else {
    launch_typed<c10::Half>(input, weight, bias, output, p, x_map);
  }
  return true;
}

}  // namespace fwd
}  // namespace convt
