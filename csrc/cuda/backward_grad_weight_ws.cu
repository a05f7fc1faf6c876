// Warp-specialized grad_weight for channels_last bf16 / fp16 at stride 1 (sm_90a).
//
//   gw[ci, co, ky, kx] = sum_{n, iy, ix} x[n, iy, ix, ci] * go[n, iy - PH + ky DH, ix - PW + kx DW, co]
//
// Why: the channels_last ring kernel (backward_grad_weight_wgmma.cu) runs at 1.2-2.2x cuDNN's
// wgrad on the stride-1 suite shapes (run KB, device us, ours / cuDNN: kb1_57 1696 / 1386,
// kb1_65 1418 / 835, kb1_69 1653 / 1182), and grad_weight is what keeps their bf16
// channels_last training steps below PyTorch. This kernel takes the structure of the
// warp-specialized forward (forward_wgmma_ws.cu):
//  - warpgroup 0 is the producer (40 registers): one thread fills a ring of stages, each one
//    pixel tile of TY x kTX input pixels: one tensor-map box of x (the block's 64 input
//    channels of every pixel, a 128-byte row, 128-byte swizzle) and one of grad_output (its
//    64 output channels), the latter with the taps' halo (TY + (KH-1) DH rows of
//    P = kTX + (KW-1) DW columns). One 128-byte row per pixel, not eight 16-byte quanta: a
//    box with 16-byte rows makes the copy engine move 16 bytes per request (the first
//    version, 8 boxes per operand, ran kb1_57 at 46% of the MMA rate with 15.6 GB/s per SM;
//    one box per operand took its bf16 grad_weight from 1.417 to 1.020 ms, kb1_69 from 1.400
//    to 0.762: runs LC, LD);
//  - warpgroups 1 and 2 are consumers (232 registers) of every stage: consumer c owns taps
//    c * TPC .. c * TPC + TPC - 1 of the block's tap group, an m64n64 fp32 accumulator each
//    (D[ci][co]); per 16 pixels of a tile row and per tap, one m64n64k16 MMA with both
//    operands MN-major and 128-byte swizzled (x rows [pixel][64 ci] are A = x^T, 64 ci x 16
//    pixels; grad_output rows are B, 16 pixels x 64 co, started at the tap's shift
//    (ty + ky DH) P + kx DW rows: a tap moves B by whole 128-byte rows, at any swizzle phase);
//  - a stage goes back to the producer once both consumers' MMAs on it are done (8 warp
//    arrivals on `empty`), so every parity wait is exact without turn barriers.
// The pixels are split over blocks (splits): block (split, tap group, ci tile, co tile)
// reduces its split's pixel tiles and writes its partial sums to ws[split][tap][ci][co];
// grad_weight_reduce sums the splits in a fixed order: deterministic, no atomics.
// Pixels outside the image (the last tile of a row, the halo) and channels past Cin / Cout
// (a box is always 64 channels wide) read as zeros from the boxes.
// Padding tap slots (a consumer with fewer taps than TPC) multiply at shift 0 and are not
// stored: a branch around a wgmma would make the compiler fence the accumulators.
#include <ATen/ATen.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <type_traits>

#include "backward_common.cuh"
#include "bulk_copy.cuh"
#include "forward_launch.cuh"
#include "tensor_map.cuh"
#include "wgmma.cuh"
#include "../host_trace.h"

namespace convt {
namespace bwd {
namespace {

constexpr int kThreads = 384;           // producer warpgroup + two consumer warpgroups
constexpr int kCh = 64;                 // input and output channels per tile
constexpr int kTX = 64;                 // input columns per pixel tile: 4 K steps of 16
constexpr int kMaxTpc = 6;              // taps per consumer: 6 x 32 accumulators
constexpr int kMaxStages = 6;
constexpr int kRowBytes = 128;          // one pixel's 64 channels, a swizzle row
constexpr int kSwizzleAlign = 1024;     // the 128-byte swizzle's repeat: box and stage alignment
constexpr int kSmemLimit = 225 * 1024;  // stages; the launch adds kSwizzleAlign for the alignment

struct GwWsParams {
  int N, Cin, Cout, H, W, OH, OW;
  int KH, KW, PH, PW, DH, DW, taps;
  int TY, P, go_rows;               // tile rows; grad_output box pitch and rows
  int tiles_x, tiles_y, ptiles;     // pixel tiles (n, tile row, tile column)
  int ci_tiles, co_tiles;
  int tap_groups, group_taps;       // tap group t holds taps t * group_taps .. (at most taps - 1)
  int splits, tiles_per_split;
  int x_bytes, go_bytes;            // bytes of a stage's x and grad_output boxes (multiples of 1024)
  int stage_bytes, stages, smem_bytes;
};

#ifdef CONVT_SM90A_DEVICE
template <typename T>
__device__ __forceinline__ void mma_tab(float (&d)[32], uint64_t a, uint64_t b) {
  if constexpr (std::is_same_v<T, c10::BFloat16>) {
    wgmma::m64n64k16_bf16_tab(d, a, b);
  } else {
    wgmma::m64n64k16_f16_tab(d, a, b);
  }
}
#endif

template <typename T, int TPC>
__global__ void __launch_bounds__(kThreads, 1)
    grad_weight_ws_kernel(float* __restrict__ ws, const GwWsParams p, const __grid_constant__ CUtensorMap x_map,
                          const __grid_constant__ CUtensorMap go_map) {
#ifdef CONVT_SM90A_DEVICE
  extern __shared__ __align__(128) unsigned char smem_raw[];  // aligned to 1024 below
  __shared__ uint64_t full[kMaxStages], empty[kMaxStages];
  const int tid = threadIdx.x;
  if (tid == 0) {
    for (int s = 0; s < p.stages; ++s) {
      bulk::mbar_init(&full[s]);      // the producer's expect_tx
      bulk::mbar_init(&empty[s], 8);  // one arrival per consumer warp, both consumers
    }
    bulk::fence_mbar_init();
  }
  __syncthreads();
  // The swizzle pattern repeats every 1024 bytes from an aligned address: stages start there.
  unsigned char* smem = smem_raw + ((kSwizzleAlign - (bulk::smem_addr(smem_raw) & (kSwizzleAlign - 1))) & (kSwizzleAlign - 1));
  // Block: co tile fastest (neighbours read the same pixel tiles), then ci tile, tap group, split.
  int r = blockIdx.x;
  const int co_tile = r % p.co_tiles;
  r /= p.co_tiles;
  const int ci_tile = r % p.ci_tiles;
  r /= p.ci_tiles;
  const int tg = r % p.tap_groups;
  const int split = r / p.tap_groups;
  const int pt_begin = split * p.tiles_per_split;
  const int pt_end = min(p.ptiles, pt_begin + p.tiles_per_split);
  const int ci0 = ci_tile * kCh, co0 = co_tile * kCh;
  const int wg = tid / 128;

  if (wg == 0) {
    // ---- producer ----
    asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\n" ::: "memory");
    if (tid != 0) return;
    // Whole boxes, zero-filled past the tensor's edges, count in full.
    const uint32_t bytes = static_cast<uint32_t>(kRowBytes * (kTX * p.TY + p.P * p.go_rows));
    int k = 0;
    for (int pt = pt_begin; pt < pt_end; ++pt, ++k) {
      int q = pt;
      const int tx = q % p.tiles_x;
      q /= p.tiles_x;
      const int ty = q % p.tiles_y;
      const int n = q / p.tiles_y;
      const int iy0 = ty * p.TY, ix0 = tx * kTX;
      const int s = k % p.stages;
      if (k >= p.stages) bulk::mbar_wait(&empty[s], ((k / p.stages) - 1) & 1);
      unsigned char* st = smem + s * p.stage_bytes;
      bulk::arrive_expect(&full[s], bytes);
      tma::load_4d(st, &x_map, ci0, ix0, iy0, n, &full[s]);
      tma::load_4d(st + p.x_bytes, &go_map, co0, ix0 - p.PW, iy0 - p.PH, n, &full[s]);
    }
    return;
  }

  // ---- consumers ----
  asm volatile("setmaxnreg.inc.sync.aligned.u32 232;\n" ::: "memory");
  const int cw = wg - 1;
  const int ctid = tid - 128 * wg;
  const int warp = ctid / 32, lane = ctid % 32;
  // This consumer's taps: slot u is tap tg * group_taps + cw * TPC + u, if it exists (else a
  // padding slot at shift 0). Shift in rows (pixels) of the grad_output box.
  int shift[TPC];
  int tap_of[TPC];
#pragma unroll
  for (int u = 0; u < TPC; ++u) {
    const int local = cw * TPC + u;
    const int tap = tg * p.group_taps + local;
    const bool ok = local < p.group_taps && tap < p.taps;
    tap_of[u] = ok ? tap : -1;
    const int ky = ok ? tap / p.KW : 0, kx = ok ? tap % p.KW : 0;
    shift[u] = ky * p.DH * p.P + kx * p.DW;
  }
  float acc[TPC][32];
#pragma unroll
  for (int u = 0; u < TPC; ++u)
#pragma unroll
    for (int e = 0; e < 32; ++e) acc[u][e] = 0.f;

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
      for (int j = 0; j < kTX / 16; ++j) {
        const uint64_t a = a0 + static_cast<uint64_t>((ty * kTX + 16 * j) * (kRowBytes / 16));
#pragma unroll
        for (int u = 0; u < TPC; ++u) {
          const uint32_t row = static_cast<uint32_t>(ty * p.P + shift[u] + 16 * j);
          mma_tab<T>(acc[u], a, b0 + static_cast<uint64_t>(row * (kRowBytes / 16)));
        }
      }
    }
    wgmma::commit();
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
    for (int e = 0; e < 32; ++e) wgmma::fence_operand(acc[u][e]);

  // Partial sums: D[ci][co] of m64n64, thread (warp w, g = lane / 4, t = lane % 4) holds
  // rows 16w + g (+8), columns 8nb + 2t (+1). Every (ci, co) of the tile is written, zeros
  // for an empty split included, so the reduce reads no stale workspace.
  const int g = lane / 4, t4 = lane % 4;
  float* dst = ws + static_cast<int64_t>(split) * p.taps * p.Cin * p.Cout;
#pragma unroll
  for (int u = 0; u < TPC; ++u) {
    if (tap_of[u] < 0) continue;
    float* dt = dst + static_cast<int64_t>(tap_of[u]) * p.Cin * p.Cout;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int ci = ci0 + 16 * warp + g + 8 * h;
      if (ci >= p.Cin) continue;
#pragma unroll
      for (int nb = 0; nb < 8; ++nb) {
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
  static const bool on = [] {
    const char* e = std::getenv("CONVT_BWD_GW_WS");
    return e == nullptr || std::string(e) != "0";
  }();
  return on;
}

bool channels_last_dense(const at::Tensor& t) {
  return t.dim() == 4 && t.is_contiguous(at::MemoryFormat::ChannelsLast) && t.stride(1) == 1;
}

// Tap groups of at most 2 kMaxTpc taps, as even as they come; TPC = half a group, rounded up.
// Tile rows: the most (up to 8) that keep 3 stages, else 2 stages of 1 row.
bool plan_gw_ws(const Geometry& g, GwWsParams& p, int sms) {
  p.N = static_cast<int>(g.N);
  p.Cin = static_cast<int>(g.Cin);
  p.Cout = static_cast<int>(g.Cout);
  p.H = static_cast<int>(g.H);
  p.W = static_cast<int>(g.W);
  p.OH = static_cast<int>(g.Hout);
  p.OW = static_cast<int>(g.Wout);
  p.KH = static_cast<int>(g.KH);
  p.KW = static_cast<int>(g.KW);
  p.PH = static_cast<int>(g.PH);
  p.PW = static_cast<int>(g.PW);
  p.DH = static_cast<int>(g.DH);
  p.DW = static_cast<int>(g.DW);
  p.taps = p.KH * p.KW;
  p.tap_groups = static_cast<int>(ceil_div(p.taps, 2 * kMaxTpc));
  p.group_taps = static_cast<int>(ceil_div(p.taps, p.tap_groups));
  p.P = kTX + (p.KW - 1) * p.DW;
  if (p.P > 256) return false;
  const int halo_y = (p.KH - 1) * p.DH;
  int best = 0;
  for (int ty = 8; ty >= 1; --ty) {
    const int rows = ty + halo_y;
    if (rows > 256) continue;
    const int xb = static_cast<int>(round_up(kRowBytes * kTX * ty, kSwizzleAlign));
    const int gb = static_cast<int>(round_up(static_cast<int64_t>(kRowBytes) * p.P * rows, kSwizzleAlign));
    const int stage = xb + gb;
    const int stages = std::min(kMaxStages, kSmemLimit / stage);
    if (stages >= 3 || (ty == 1 && stages >= 2)) {
      best = ty;
      p.x_bytes = xb;
      p.go_bytes = gb;
      p.stage_bytes = stage;
      p.stages = stages;
      break;
    }
  }
  if (best == 0) return false;
  p.TY = best;
  p.go_rows = best + halo_y;
  p.smem_bytes = p.stages * p.stage_bytes + kSwizzleAlign;
  p.tiles_x = static_cast<int>(ceil_div(p.W, kTX));
  p.tiles_y = static_cast<int>(ceil_div(p.H, p.TY));
  const int64_t ptiles = static_cast<int64_t>(p.N) * p.tiles_y * p.tiles_x;
  if (ptiles >= (int64_t(1) << 31)) return false;
  p.ptiles = static_cast<int>(ptiles);
  p.ci_tiles = static_cast<int>(ceil_div(p.Cin, kCh));
  p.co_tiles = static_cast<int>(ceil_div(p.Cout, kCh));
  const int64_t combos = static_cast<int64_t>(p.ci_tiles) * p.co_tiles * p.tap_groups;
  // One block per SM in all (a single wave), each split at least 8 pixel tiles, a workspace
  // of at most 256 MiB.
  const int64_t E = static_cast<int64_t>(p.taps) * p.Cin * p.Cout;
  int64_t splits = std::max<int64_t>(1, sms / combos);
  splits = std::min<int64_t>(splits, std::max<int64_t>(1, p.ptiles / 8));
  splits = std::min<int64_t>(splits, std::max<int64_t>(1, (int64_t(256) << 20) / (4 * E)));
  p.tiles_per_split = static_cast<int>(ceil_div(p.ptiles, splits));
  p.splits = static_cast<int>(ceil_div(p.ptiles, p.tiles_per_split));
  return combos * p.splits < (int64_t(1) << 31);
}

template <typename T, int TPC>
void launch_typed(const at::Tensor& x, const at::Tensor& go, const GwWsParams& p, const at::Tensor& ws,
                  const CUtensorMap& x_map, const CUtensorMap& go_map) {
  auto kernel = grad_weight_ws_kernel<T, TPC>;
  C10_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, p.smem_bytes));
  const int64_t blocks = static_cast<int64_t>(p.splits) * p.tap_groups * p.ci_tiles * p.co_tiles;
  kernel<<<static_cast<unsigned>(blocks), kThreads, p.smem_bytes, at::cuda::getCurrentCUDAStream()>>>(
      ws.data_ptr<float>(), p, x_map, go_map);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

template <typename T>
void launch_by_tpc(int tpc, const at::Tensor& x, const at::Tensor& go, const GwWsParams& p, const at::Tensor& ws,
                   const CUtensorMap& x_map, const CUtensorMap& go_map) {
  switch (tpc) {
    case 1: launch_typed<T, 1>(x, go, p, ws, x_map, go_map); break;
    case 2: launch_typed<T, 2>(x, go, p, ws, x_map, go_map); break;
    case 3: launch_typed<T, 3>(x, go, p, ws, x_map, go_map); break;
    case 4: launch_typed<T, 4>(x, go, p, ws, x_map, go_map); break;
    case 5: launch_typed<T, 5>(x, go, p, ws, x_map, go_map); break;
    default: launch_typed<T, 6>(x, go, p, ws, x_map, go_map); break;
  }
}

}  // namespace

bool grad_weight_ws_supported(const at::Tensor& x, const at::Tensor& go, const Geometry& g) {
  if (!gw_ws_allowed()) return false;
  const auto dtype = x.scalar_type();
  if (dtype != at::kBFloat16 && dtype != at::kHalf) return false;
  if (!fwd::wgmma_available(x) || !channels_last_dense(x) || !channels_last_dense(go)) return false;
  if (g.groups != 1 || g.SH != 1 || g.SW != 1 || g.Cin % 8 != 0 || g.Cout % 8 != 0) return false;
  if (reinterpret_cast<uintptr_t>(x.const_data_ptr()) % 16 != 0 || reinterpret_cast<uintptr_t>(go.const_data_ptr()) % 16 != 0)
    return false;
  const int64_t big = int64_t(1) << 30;
  if (g.N >= big || g.H >= big || g.W >= big || g.Hout >= big || g.Wout >= big || g.PH >= big || g.PW >= big) return false;
  GwWsParams p{};
  return plan_gw_ws(g, p, sm_count());
}

int64_t grad_weight_ws_splits(const Geometry& g) {
  GwWsParams p{};
  TORCH_CHECK(plan_gw_ws(g, p, sm_count()), "convt: grad_weight_ws: unsupported problem");
  return p.splits;
}

void grad_weight_ws(const at::Tensor& x, const at::Tensor& go, const Geometry& g, int64_t splits,
                    const at::Tensor& ws) {
  CONVT_TRACE("cuda.backward.grad_weight_ws");
  GwWsParams p{};
  TORCH_CHECK(plan_gw_ws(g, p, sm_count()) && p.splits == splits, "convt: grad_weight_ws: plan mismatch");
  const auto dtype = x.scalar_type();
  const CUtensorMapDataType type =
      dtype == at::kBFloat16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
  CUtensorMap x_map{}, go_map{};
  {
    const uint64_t C = g.Cin, W = g.W, H = g.H, N = g.N;
    const uint64_t dims[4] = {C, W, H, N};
    const uint64_t strides[3] = {C * 2, W * C * 2, H * W * C * 2};
    const uint32_t box[4] = {static_cast<uint32_t>(kCh), static_cast<uint32_t>(kTX), static_cast<uint32_t>(p.TY), 1};
    TORCH_CHECK(tma::encode_4d(&x_map, type, x.const_data_ptr(), dims, strides, box, CU_TENSOR_MAP_SWIZZLE_128B),
                "convt: grad_weight_ws: tensor map of the input");
  }
  {
    const uint64_t C = g.Cout, W = g.Wout, H = g.Hout, N = g.N;
    const uint64_t dims[4] = {C, W, H, N};
    const uint64_t strides[3] = {C * 2, W * C * 2, H * W * C * 2};
    const uint32_t box[4] = {static_cast<uint32_t>(kCh), static_cast<uint32_t>(p.P), static_cast<uint32_t>(p.go_rows), 1};
    TORCH_CHECK(tma::encode_4d(&go_map, type, go.const_data_ptr(), dims, strides, box, CU_TENSOR_MAP_SWIZZLE_128B),
                "convt: grad_weight_ws: tensor map of grad_output");
  }
  const int tpc = static_cast<int>(ceil_div(p.group_taps, 2));
  if (dtype == at::kBFloat16) {
    launch_by_tpc<c10::BFloat16>(tpc, x, go, p, ws, x_map, go_map);
  } else {
    launch_by_tpc<c10::Half>(tpc, x, go, p, ws, x_map, go_map);
  }
}

}  // namespace bwd
}  // namespace convt
