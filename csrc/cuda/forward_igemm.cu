// Phase-decomposed implicit GEMM forward of conv_transpose2d on tensor cores.
//
// Decomposition (geometry.h, axis_phase). Along one axis, the outputs o with
// (o + padding) mod stride == r form phase r: o = j*stride + r - padding. Its taps are
// t_m = t0 + m*step (step = stride/gcd(stride, dilation)), and tap t_m reads input
//     i = j + base - m*dd,   base = (r - t0*dilation)/stride,  dd = dilation/gcd.
// So each (phase_y, phase_x) is a dense stride-1 correlation over the input, and a GEMM
//     M = output pixels of the phase, N = Cout/groups, K = Cin/groups * taps of the phase.
// Phases without taps are written with the bias (or zero).
//
// MMA orientation: D^T = W^T X^T, i.e. the MMA's M dimension is output channels (the
// weights are the A operand) and its N dimension is pixels (the input tile is the B
// operand). That way both operands load straight into MMA register order (see 3.).
//
// Tiles. A thread block (4 or 8 warps) computes BM pixels x BN output channels of one
// (group, phase): the pixels are IMGS images x TY phase rows x TX phase columns (several
// whole images when a phase image is small, as in DCGAN layers; a TY x TX window of one
// image otherwise). Each lane keeps the tile slots of its B columns (pixels), so any pixel
// arrangement costs the same in the inner loop.
//
// K loop over chunks of KC input channels; per chunk:
//   1. cp.async (2 stages, chunk c+1 in flight while c is used): the input tile WITH its
//      halo, [KC][IMGS][TY + halo_y][pitch] in the input dtype (16/8/4-byte copies from an
//      aligned-down origin, zero-fill outside the image), and the chunk's pre-packed
//      weights for all taps of the phase;
//      channels_last input (kClInput, the "channels_last form"): the tile is staged
//      [slot][KCW words] instead, each pixel's run of the chunk's channels in one to a few
//      16/8/4-byte copies along channels (no transpose pass before the kernel);
//   2. one conversion pass writes the input tile (either staging) into the "fragment
//      layout": 32-bit words [KC/8 k-groups][tile slot][8], the 8 words of a k-group permuted (k0 k4 k1 k5 k2 k6
//      k3 k7) so that a lane's two B registers (k = t and t + 4) are adjacent (one 64-bit
//      load); fp32 is rounded to TF32 here once (not per fragment use), 16-bit values are
//      paired (word = channels 2c, 2c+1, what one m16n8k16 register holds);
//   3. every tap is a shifted view of that tile (no re-read): per (tap, k-group) step a
//      warp loads its A fragments (weights packed by pack_weights_kernel in fragment
//      order: one LDS.128 per 16-channel m-tile) and B fragments (one LDS.64 per 8-pixel
//      n-tile); the next step's fragments are loaded while the current MMAs run.
// 8 consecutive words per slot make each 64-bit fragment load of a warp read 256
// contiguous bytes for 8 consecutive pixels (no bank conflicts); A loads are contiguous.
//
// Output: accumulators go straight to global memory through the output's strides, plus
// the bias. Deterministic (fixed reduction order), no atomics.
#include <ATen/ATen.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>

#include <algorithm>
#include <cstdlib>
#include <string>

#include "forward_launch.cuh"
#include "layout.h"
#include "mma.cuh"
#include "phase_tiles.cuh"

namespace convt {
namespace fwd {
namespace {

constexpr int kStages = 2;
constexpr int kMaxTaps = 256;  // taps per phase (tap offset table in shared memory)

struct IgemmParams {
  Geometry g;
  int SH, SW, groups, ddy, ddx;  // 32-bit copies
  PhaseAxis32 phase_y[kMaxStride], phase_x[kMaxStride];
  // The channels_last input form only (kClInput): input elements per cp.async along channels
  // (16, 8 or 4 bytes). In the 4-byte alignment gap before out_s: the struct's size and
  // every other offset stay as they were.
  int cl_vec;
  int64_t out_s[4];   // output strides
  int TX, TY, IMGS;   // pixel tile
  int tiles_x;        // tiles along phase columns
  int vec;            // elements per cp.async (1: 16-bit element-wise fallback)
  int KCW;            // k-words per chunk (multiple of 8)
  int kwords;         // k-words per group (padded to KCW)
  int taps_y, taps_x; // max taps per axis over phases (weight pack layout)
  int kg_log2;        // log2(KCW / 8)
  int pitch;          // elements per input tile row
  int img_stride;     // elements per image of the input tile
  int slots;          // tile slots (IMGS * img_stride): fragment-layout words = KCW * slots
  int plane;          // elements per staged input channel plane (multiple of 8)
  int in_bytes_stage; // bytes of the staged input tile per stage (16-byte multiple)
  int stage_bytes;    // bytes per pipeline stage (staged input + weights)
  int frag_offset;    // byte offset of the fragment-layout input tile
  int smem_bytes;     // dynamic shared memory per block
  int staged_epilogue;  // 1: stores through shared memory (staged_epilogue), 0: from fragments
  int out_vec16;      // channels_last output allowing 16-byte stores of channel runs
  int64_t ph_stride;  // words of packed weights per (group, phase)
  int64_t co_pad;     // Cout_g padded to BN
};

template <typename T>
struct Elem {
  static constexpr int kPerWord = 2;  // c10::Half, c10::BFloat16
};
template <>
struct Elem<float> {
  static constexpr int kPerWord = 1;
};

// ---- weight packing: [group][phase_y][phase_x][kword][tap][co_pad] words -------------

__device__ __forceinline__ uint32_t make_word(const float* p, int64_t, bool lo_ok, bool) {
  return lo_ok ? __float_as_uint(*p) : 0u;
}
template <typename T>
__device__ __forceinline__ uint32_t make_word(const T* p, int64_t next, bool lo_ok, bool hi_ok) {
  const uint16_t lo = lo_ok ? reinterpret_cast<const uint16_t*>(p)[0] : uint16_t(0);
  const uint16_t hi = hi_ok ? reinterpret_cast<const uint16_t*>(p)[next] : uint16_t(0);
  return static_cast<uint32_t>(lo) | (static_cast<uint32_t>(hi) << 16);
}

// Position of k (0..7) inside its 8-word group: k0 k4 k1 k5 k2 k6 k3 k7.
CONVT_HOST_DEVICE int perm8(int k) { return 2 * (k & 3) + (k >> 2); }

template <typename T, bool kRoundTf32>
__global__ void pack_weights_kernel(const T* __restrict__ w, uint32_t* __restrict__ wp,
                                    const IgemmParams p, int64_t total) {
  const Geometry& g = p.g;
  const int ntaps = p.taps_y * p.taps_x;
  const int64_t kgroups = p.kwords / 8;
  for (int64_t idx = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; idx < total;
       idx += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    // [grp][phase][kg][tap][co tile of 16][lane][4]: lane (g, t) holds the m16n8k8 A
    // fragment {(co g, k t), (g+8, t), (g, t+4), (g+8, t+4)} (k = word within the group).
    int64_t rest = idx;
    const int pos = static_cast<int>(rest % 128);
    rest /= 128;
    const int64_t cot = rest % (p.co_pad / 16);
    rest /= (p.co_pad / 16);
    const int lane = pos / 4, e = pos % 4;
    const int64_t co = cot * 16 + lane / 4 + 8 * (e & 1);
    const int tap = static_cast<int>(rest % ntaps);
    rest /= ntaps;
    const int64_t kg = rest % kgroups;
    rest /= kgroups;
    const int64_t rx = rest % g.SW;
    rest /= g.SW;
    const int64_t ry = rest % g.SH;
    const int64_t grp = rest / g.SH;
    const int k8 = lane % 4 + 4 * (e >> 1);
    const int64_t kw = kg * 8 + k8;
    const AxisPhase py = axis_phase(ry, g.SH, g.DH, g.KH);
    const AxisPhase px = axis_phase(rx, g.SW, g.DW, g.KW);
    const int64_t ky = py.first_tap + (tap / p.taps_x) * py.tap_step;
    const int64_t kx = px.first_tap + (tap % p.taps_x) * px.tap_step;
    const bool tap_ok = py.first_tap >= 0 && px.first_tap >= 0 && ky < g.KH && kx < g.KW &&
                        co < g.Cout_g;
    uint32_t word = 0;
    if (tap_ok) {
      // weight [Cin][Cout_g][KH][KW], contiguous (the launcher makes it so).
      const int64_t ci_l = kw * Elem<T>::kPerWord;
      const int64_t ci = grp * g.Cin_g + ci_l;
      const int64_t off = ((ci * g.Cout_g + co) * g.KH + ky) * g.KW + kx;
      const int64_t next = g.Cout_g * g.KH * g.KW;  // one input channel further
      if (ci_l < g.Cin_g) word = make_word(w + off, next, true, ci_l + 1 < g.Cin_g);
      if constexpr (kRoundTf32) word = mma::to_tf32(__uint_as_float(word));
    }
    wp[idx] = word;
  }
}

// ---- fragments ---------------------------------------------------------------------

// A = weights (M = output channels, 16 per m-tile), B = input (N = pixels, 8 per n-tile).
template <int WCO, int WPX>
struct Frags {
  uint32_t a[WCO][4];
  uint32_t b[WPX][2];
};

__device__ __forceinline__ uint2 lds64(const uint32_t* p) {
  return *reinterpret_cast<const uint2*>(p);
}
__device__ __forceinline__ uint4 lds128(const uint32_t* p) {
  return *reinterpret_cast<const uint4*>(p);
}
__device__ __forceinline__ uint32_t ld16(const c10::Half* p) {
  return *reinterpret_cast<const uint16_t*>(p);
}
__device__ __forceinline__ uint32_t ld16(const c10::BFloat16* p) {
  return *reinterpret_cast<const uint16_t*>(p);
}

// ---- the staged epilogue -------------------------------------------------------------

// Why staged: an MMA fragment holds 8 channels x 2 adjacent pixels per lane quad, so a store
// instruction straight from the fragments writes 8 channel rows x 4 pixels. In NCHW the
// pixels of a phase lie SW elements apart, and each of those stores touches 8 x 2 or more
// 32-byte sectors for 64 (16-bit) or 128 (fp32) useful bytes: ncu measured 12.8x the output
// in L2 write sectors on kb1_75 (bf16, stride 3). Through shared memory, a warp instead
// writes 32 consecutive pixels of one channel row (NCHW: the phase row's columns) or
// 32 consecutive channels of pixels (channels_last: whole channel runs per pixel).
//
// Shared layouts (floats): NCHW [BN channels][BM + 8 pixels]: the float2 fragment writes of
// a half-warp (4 channel rows x 8 pixels) land on 32 distinct banks and the row reads are
// contiguous. channels_last [BM pixels][BN + 4 channels]: the scalar fragment writes (8
// channels x 4 pixel pairs) land on distinct banks and the reads run along channels.
template <int BM, int BN>
struct StagedEpilogue {
  static constexpr int kPitchNchw = BM + 8;
  static constexpr int kPitchCl = BN + 4;
  static constexpr int kBytes =
      4 * (BN * kPitchNchw > BM * kPitchCl ? BN * kPitchNchw : BM * kPitchCl);
};

// Output offset (elements, without the channel term) of tile pixel m; false outside the
// phase image or the batch.
__device__ __forceinline__ bool tile_pixel_offset(const IgemmParams& p, const BlockTile& bt,
                                                  int m, int64_t& off) {
  const Geometry& g = p.g;
  const int tile_pixels = p.TY * p.TX;
  const int img = m / tile_pixels, r = m - img * tile_pixels;
  const int py = r / p.TX, px = r - py * p.TX;
  if (img >= bt.nimg || py >= bt.rows_left || px >= bt.cols_left) return false;
  const int64_t oy = (bt.j0y + py) * g.SH + bt.ry - g.PH;
  const int64_t ox = (bt.j0x + px) * g.SW + bt.rx - g.PW;
  off = (bt.nimg0 + img) * p.out_s[0] + oy * p.out_s[2] + ox * p.out_s[3];
  return true;
}

template <typename T, int WARPS_CO, int WARPS_PX, int WCO, int WPX>
__device__ __forceinline__ void staged_epilogue(const float (&acc)[WCO][WPX][4],
                                                const T* __restrict__ bias, T* __restrict__ out,
                                                const IgemmParams& p, const BlockTile& bt,
                                                int n0) {
  constexpr int kThreads = WARPS_CO * WARPS_PX * 32;
  constexpr int BM = WARPS_PX * WPX * 8;
  constexpr int BN = WARPS_CO * WCO * 16;
  using Layout = StagedEpilogue<BM, BN>;
  static_assert(BM % kThreads == 0 && kThreads % BN == 0, "epilogue thread mapping");
  extern __shared__ __align__(16) unsigned char smem_raw[];
  float* s_out = reinterpret_cast<float*>(smem_raw);
  const Geometry& g = p.g;
  // Channels innermost in the output: the [pixel][channel] staging (see above).
  const bool cl = p.out_s[1] == 1 && g.Cout > 1;

  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int gq = lane / 4, tq = lane % 4;
  const int warp_co = warp % WARPS_CO, warp_px = warp / WARPS_CO;
  __syncthreads();  // every warp is done with the main loop's shared memory
#pragma unroll
  for (int mt = 0; mt < WCO; ++mt)
#pragma unroll
    for (int nt = 0; nt < WPX; ++nt)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        // d[2h] = (channel gq + 8h, pixel 2tq), d[2h + 1] = (gq + 8h, 2tq + 1).
        const int co = (warp_co * WCO + mt) * 16 + gq + 8 * h;
        const int m = (warp_px * WPX + nt) * 8 + 2 * tq;
        if (cl) {
          s_out[m * Layout::kPitchCl + co] = acc[mt][nt][2 * h];
          s_out[(m + 1) * Layout::kPitchCl + co] = acc[mt][nt][2 * h + 1];
        } else {
          *reinterpret_cast<float2*>(s_out + co * Layout::kPitchNchw + m) =
              make_float2(acc[mt][nt][2 * h], acc[mt][nt][2 * h + 1]);
        }
      }
  __syncthreads();

  const int64_t co_base = static_cast<int64_t>(bt.grp) * g.Cout_g + n0;  // block's first channel
  const int co_n = g.Cout_g - n0 < BN ? g.Cout_g - n0 : BN;
  T* out_c = out + co_base * p.out_s[1];
  if (cl && p.out_vec16) {
    // 16-byte stores: thread = (pixel, run of kVec channels); a pixel's BN channels are
    // BN / kVec consecutive lanes, so each 32-byte sector is written whole by one store.
    constexpr int kVec = 16 / static_cast<int>(sizeof(T));
    constexpr int kVecsPerPixel = BN / kVec;
    static_assert(BN % kVec == 0 && kThreads % kVecsPerPixel == 0, "channel runs");
    const int v = threadIdx.x % kVecsPerPixel;
    if (v * kVec >= co_n) return;  // co_n is a multiple of kVec (out_vec16)
    float bc[kVec];
#pragma unroll
    for (int j = 0; j < kVec; ++j)
      bc[j] = bias != nullptr ? static_cast<float>(bias[co_base + v * kVec + j]) : 0.f;
    for (int m = threadIdx.x / kVecsPerPixel; m < BM; m += kThreads / kVecsPerPixel) {
      int64_t off;
      if (!tile_pixel_offset(p, bt, m, off)) continue;
      const float* src = s_out + m * Layout::kPitchCl + v * kVec;
      alignas(16) T vals[kVec];
#pragma unroll
      for (int j = 0; j < kVec; j += 4) {
        const float4 f = *reinterpret_cast<const float4*>(src + j);
        vals[j] = static_cast<T>(f.x + bc[j]);
        vals[j + 1] = static_cast<T>(f.y + bc[j + 1]);
        vals[j + 2] = static_cast<T>(f.z + bc[j + 2]);
        vals[j + 3] = static_cast<T>(f.w + bc[j + 3]);
      }
      *reinterpret_cast<uint4*>(out_c + off + v * kVec) = *reinterpret_cast<const uint4*>(vals);
    }
  } else if (cl) {
    // Scalar stores (unaligned output or channel counts): thread = (pixel slot, channel).
    const int co = threadIdx.x % BN;
    if (co >= co_n) return;
    const float bc = bias != nullptr ? static_cast<float>(bias[co_base + co]) : 0.f;
    for (int m = threadIdx.x / BN; m < BM; m += kThreads / BN) {
      int64_t off;
      if (tile_pixel_offset(p, bt, m, off))
        out_c[off + co] = static_cast<T>(s_out[m * Layout::kPitchCl + co] + bc);
    }
  } else {
    // Thread = pixel (BM / kThreads of them): a warp writes 32 consecutive tile pixels of
    // one channel, i.e. runs of a phase row's columns.
    constexpr int kPix = BM / kThreads;
    int64_t off[kPix];
    bool ok[kPix];
#pragma unroll
    for (int i = 0; i < kPix; ++i) ok[i] = tile_pixel_offset(p, bt, threadIdx.x + i * kThreads, off[i]);
    for (int c = 0; c < co_n; ++c) {
      const float bc = bias != nullptr ? static_cast<float>(bias[co_base + c]) : 0.f;
      T* o = out_c + c * p.out_s[1];
#pragma unroll
      for (int i = 0; i < kPix; ++i)
        if (ok[i])
          o[off[i]] = static_cast<T>(s_out[c * Layout::kPitchNchw + threadIdx.x + i * kThreads] + bc);
    }
  }
}

// ---- the GEMM kernel -----------------------------------------------------------------

// The MMA computes D^T = W^T X^T: M = output channels (weights are the A operand,
// packed so that one 128-bit load is a lane's whole A fragment), N = pixels (the input
// tile is the B operand: one 64-bit load per n-tile thanks to the k-permuted words).
template <typename T, int WARPS_CO, int WARPS_PX, int WCO, int WPX, bool kAccurate, bool kClInput>
__global__ void __launch_bounds__(WARPS_CO* WARPS_PX * 32, WARPS_CO * WARPS_PX >= 8 ? 1 : 2)
    igemm_kernel(const T* __restrict__ in, const uint32_t* __restrict__ wp,
                 const T* __restrict__ bias, T* __restrict__ out, const IgemmParams p) {
  constexpr int kThreads = WARPS_CO * WARPS_PX * 32;
  constexpr int BN = WARPS_CO * WCO * 16;  // output channels per block
  constexpr int kPW = Elem<T>::kPerWord;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  __shared__ int s_tap_a[kMaxTaps];  // input-tile offset of each tap (elements)
  __shared__ int s_tap_p[kMaxTaps];  // index of each tap in the packed weight layout
  const Geometry& g = p.g;

  const BlockTile bt = decode_block_tile(p);
  const int rx = bt.rx, ry = bt.ry, grp = bt.grp, nimg = bt.nimg;
  const int64_t nimg0 = bt.nimg0, j0y = bt.j0y, j0x = bt.j0x;
  const PhaseAxis32 ay = bt.ay, ax = bt.ax;
  if (bt.empty) return;  // phase smaller than the grid
  const int rows_left = bt.rows_left, cols_left = bt.cols_left;
  const int n0 = blockIdx.y * BN;  // first output channel within the group

  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int gq = lane / 4, tq = lane % 4;
  const int warp_co = warp % WARPS_CO, warp_px = warp / WARPS_CO;
  const int tile_pixels = p.TY * p.TX;

  float acc[WCO][WPX][4];
#pragma unroll
  for (int i = 0; i < WCO; ++i)
#pragma unroll
    for (int j = 0; j < WPX; ++j)
#pragma unroll
      for (int k = 0; k < 4; ++k) acc[i][j][k] = 0.f;

  const int nty = static_cast<int>(ay.ntaps), ntx = static_cast<int>(ax.ntaps);
  const int ntaps = nty * ntx;
  if (ntaps > 0) {
    const int ddy = p.ddy, ddx = p.ddx;
    const int halo_y = (nty - 1) * ddy, halo_x = (ntx - 1) * ddx;
    const int TYH = p.TY + halo_y, TXH = p.TX + halo_x;
    // Input tile origin; columns start at a multiple of vec so that cp.async chunks are
    // aligned and either fully inside or fully outside a row (W % vec == 0).
    const int64_t iy0 = j0y + ay.base - halo_y;
    const int64_t ix0 = j0x + ax.base - halo_x;
    const int ix0i = static_cast<int>(ix0);  // |ix0| < 2^30
    // channels_last: a slot per pixel from ix0 itself (the copies run along channels).
    const int64_t x_al =
        kClInput ? ix0 : (ix0i >= 0 ? ix0i / p.vec : -((-ix0i + p.vec - 1) / p.vec)) * p.vec;
    const int shift = kClInput ? 0 : static_cast<int>(ix0 - x_al);
    const int vecs_per_row = kClInput ? 0 : (shift + TXH + p.vec - 1) / p.vec;

    for (int t = threadIdx.x; t < ntaps; t += kThreads) {
      const int my = t / ntx, mx = t % ntx;
      s_tap_a[t] = (nty - 1 - my) * ddy * p.pitch + (ntx - 1 - mx) * ddx;
      s_tap_p[t] = my * p.taps_x + mx;
    }
    __syncthreads();  // tables are read by the first load_chunk

    // Per-lane tile slot of its B column (pixel gq of each n-tile).
    int b_slot[WPX];
#pragma unroll
    for (int nt = 0; nt < WPX; ++nt) {
      const int m = (warp_px * WPX + nt) * 8 + gq;
      const int img = m / tile_pixels, r = m % tile_pixels;
      const bool ok = img < nimg;
      b_slot[nt] = ok ? img * p.img_stride + (r / p.TX) * p.pitch + (r % p.TX) + shift : 0;
    }

    const int64_t plane_in = g.H * g.W;
    // NCHW: channel plane of (image nimg0, the group's first channel); channels_last: that
    // channel of image nimg0's pixel (0, 0).
    const T* in_g = kClInput ? in + nimg0 * plane_in * g.Cin + static_cast<int64_t>(grp) * g.Cin_g
                             : in + (nimg0 * g.Cin + static_cast<int64_t>(grp) * g.Cin_g) * plane_in;
    const uint32_t* wp_ph = wp + ((static_cast<int64_t>(grp) * g.SH + ry) * g.SW + rx) * p.ph_stride + static_cast<int64_t>(n0) * 8;
    const int ntaps_pack = p.taps_y * p.taps_x;
    const int nchunks = p.kwords / p.KCW;
    const int KC = p.KCW * kPW;  // channels per chunk

    // channels_last staging: [slot][KCW words], the chunk's channels of a pixel in memory
    // order. A slot's 16-byte units are XOR-swizzled by the slot (cl_unit) so that the 8
    // lanes of each LDS.128 phase in convert_chunk (8 consecutive slots, same unit) hit 8
    // distinct 16-byte bank groups with no padding: unit u of slot s sits at u ^ f(s), f(s) =
    // (s >> (3 - log2 units)) & (units - 1), units = KCW / 4 = 2 << kg_log2.
    const int cl_units_mask = (2 << p.kg_log2) - 1;
    const int cl_swz_shift = 2 - p.kg_log2;
    auto cl_unit = [&](int slot, int unit) {
      return (slot * (cl_units_mask + 1) + (unit ^ ((slot >> cl_swz_shift) & cl_units_mask))) * 4;
    };
    // Input words of chunk c inside the group (the rest of the chunk reads as zeros).
    auto cl_valid_words = [&](int c) {
      const int64_t left = g.Cin_g - static_cast<int64_t>(c) * KC;
      return static_cast<int>(left < KC ? left : KC) / kPW;
    };

    auto load_chunk = [&](int c, int buf) {
      T* s_in = reinterpret_cast<T*>(smem_raw + buf * p.stage_bytes);
      uint32_t* s_w = reinterpret_cast<uint32_t*>(smem_raw + buf * p.stage_bytes + p.in_bytes_stage);
      const int c0 = c * KC;
      if constexpr (kClInput) {
        // channels_last input: per pixel of the tile (with halo), the chunk's channels of the
        // group are one contiguous run (channel stride 1, pixel stride Cin). Copies of cl_vec
        // elements (the launcher checked that base, Cin and Cin_g keep them aligned); only
        // the group's channels are copied, and convert_chunk zeroes the chunk's words past
        // them. Pixels outside the image are zero-filled, as in the NCHW form.
        const int cv = p.cl_vec;
        const int nvec = cl_valid_words(c) * kPW / cv;  // exact: cv divides Cin_g and KC
        const int bytes = cv * static_cast<int>(sizeof(T));
        uint32_t* s_inw = reinterpret_cast<uint32_t*>(s_in);
        auto copy_cl = [&](int img, int sy, int sx, int j) {
          const int64_t iy = iy0 + sy, ix = ix0 + sx;
          const bool ok = iy >= 0 && iy < g.H && ix >= 0 && ix < g.W;
          const int slot = img * p.img_stride + sy * p.pitch + sx;
          const int byte0 = j * bytes;  // within the slot's chunk run
          unsigned char* dst = reinterpret_cast<unsigned char*>(s_inw + cl_unit(slot, byte0 >> 4)) + (byte0 & 15);
          const T* src = ok ? in_g + ((static_cast<int64_t>(img) * g.H + iy) * g.W + ix) * g.Cin + c0 + j * cv : in;
          if (bytes == 16) {
            mma::cp_async16(dst, src, ok);
          } else if (bytes == 8) {
            mma::cp_async8(dst, src, ok);
          } else {
            mma::cp_async4(dst, src, ok);
          }
        };
        const int tile_px = TXH * TYH;  // staged pixels per image
        if (kThreads % nvec == 0) {
          // Thread = copy j of pixels threadIdx.x / nvec + i * pstep (consecutive threads copy
          // a pixel's consecutive runs, then the next pixel's): (sx, sy, img) advance by a
          // fixed step, no division per copy.
          const int j = threadIdx.x % nvec;
          const int pstep = kThreads / nvec, dy = pstep / TXH, dx = pstep - dy * TXH;
          int pix = threadIdx.x / nvec;
          int img = pix / tile_px, sy = (pix - img * tile_px) / TXH, sx = pix - img * tile_px - sy * TXH;
          while (img < nimg) {
            copy_cl(img, sy, sx, j);
            sx += dx;
            sy += dy;
            if (sx >= TXH) {
              sx -= TXH;
              ++sy;
            }
            while (sy >= TYH) {
              sy -= TYH;
              ++img;
            }
          }
        } else {  // copies per pixel not a divisor of the block (channel counts like 24)
          for (int v = threadIdx.x; v < nimg * tile_px * nvec; v += kThreads) {
            const int pix = v / nvec, j = v - pix * nvec;
            const int img = pix / tile_px, r = pix - img * tile_px;
            const int sy = r / TXH;
            copy_cl(img, sy, r - sy * TXH, j);
          }
        }
      } else {
        // Input tile: (channel, image, row) x vectors along the row. Each thread keeps one
        // vector column k and walks rows with a fixed step (no division per vector).
        const int rows = KC * nimg * TYH;
        const int bytes = p.vec * static_cast<int>(sizeof(T));
        auto copy_vec = [&](int ch, int img, int sy, int k) {
          const int64_t iy = iy0 + sy;
          const int64_t ix = x_al + static_cast<int64_t>(k) * p.vec;
          const bool ok = (c0 + ch) < g.Cin_g && iy >= 0 && iy < g.H && ix >= 0 && ix < g.W;
          T* dst = s_in + ch * p.plane + img * p.img_stride + sy * p.pitch + k * p.vec;
          const T* src = in_g + (static_cast<int64_t>(img) * g.Cin + c0 + ch) * plane_in + iy * g.W + ix;
          if (!ok) src = in;
          if (bytes == 16) {
            mma::cp_async16(dst, src, ok);
          } else if (bytes == 8) {
            mma::cp_async8(dst, src, ok);
          } else if (bytes == 4) {
            mma::cp_async4(dst, src, ok);
          } else {  // 16-bit element with an odd row length: plain copy
            *dst = ok ? *src : T(0);
          }
        };
        if (vecs_per_row <= kThreads) {
          const int rstep = kThreads / vecs_per_row;
          const int k = threadIdx.x % vecs_per_row;
          int row = threadIdx.x / vecs_per_row;
          if (row < rstep) {
            int sy = row % TYH, ci_img = row / TYH;
            int img = ci_img % nimg, ch = ci_img / nimg;
            for (; row < rows; row += rstep) {
              copy_vec(ch, img, sy, k);
              sy += rstep;
              while (sy >= TYH) {
                sy -= TYH;
                if (++img == nimg) {
                  img = 0;
                  ++ch;
                }
              }
            }
          }
        } else {
          for (int v = threadIdx.x; v < rows * vecs_per_row; v += kThreads) {
            const int row = v / vecs_per_row, k = v - row * vecs_per_row;
            const int sy = row % TYH, ci_img = row / TYH;
            copy_vec(ci_img / nimg, ci_img % nimg, sy, k);
          }
        }
      }  // NCHW form
      // Weights: for each (tap, k-group) BN x 8 words, contiguous in the packed layout.
      constexpr int kVecPerRow = BN * 8 / 4;
      const int KG = p.KCW / 8;
      const int wrows = ntaps * KG;
      for (int v = threadIdx.x; v < wrows * kVecPerRow; v += kThreads) {
        const int row = v / kVecPerRow, col = (v % kVecPerRow) * 4;
        const int tap = row >> p.kg_log2, kg = row & (KG - 1);
        const int tap_pack = s_tap_p[tap];
        const uint32_t* src =
            wp_ph + ((static_cast<int64_t>(c * KG + kg) * ntaps_pack + tap_pack) * p.co_pad) * 8 + col;
        mma::cp_async16(s_w + row * (BN * 8) + col, src, true);
      }
    };

    // Staged input (chunk in `buf`) -> fragment layout (see the top of the file).
    uint32_t* s_frag = reinterpret_cast<uint32_t*>(smem_raw + p.frag_offset);
    auto convert_chunk = [&](int buf, int c) {
      const T* s_in = reinterpret_cast<const T*>(smem_raw + buf * p.stage_bytes);
      const int KG = p.KCW / 8;
      if constexpr (kClInput) {
        // [slot][KCW words] -> fragment layout: a k-group's 8 words are 2 adjacent (swizzled)
        // 16-byte units of the slot, already paired channels (16-bit) or single channels (fp32).
        const uint32_t* s_inw = reinterpret_cast<const uint32_t*>(s_in);
        const int valid = cl_valid_words(c);
        for (int v = threadIdx.x; v < KG * p.slots; v += kThreads) {
          const int kg = v / p.slots, slot = v - (v / p.slots) * p.slots;
          const int kw0 = kg * 8;
          uint32_t w[8] = {0u, 0u, 0u, 0u, 0u, 0u, 0u, 0u};
          if (kw0 < valid) {
            const uint4 lo = lds128(s_inw + cl_unit(slot, 2 * kg));
            w[0] = lo.x, w[1] = lo.y, w[2] = lo.z, w[3] = lo.w;
            if (kw0 + 4 < valid) {
              const uint4 hi = lds128(s_inw + cl_unit(slot, 2 * kg + 1));
              w[4] = hi.x, w[5] = hi.y, w[6] = hi.z, w[7] = hi.w;
            }
            // Words past the group's channels were not copied (stale or uninitialised
            // shared memory, possibly NaN bit patterns): zeros, as the NCHW form stages them.
#pragma unroll
            for (int k = 0; k < 8; ++k) {
              if (kw0 + k >= valid) w[k] = 0u;
              if constexpr (kPW == 1 && !kAccurate) w[k] = mma::to_tf32(__uint_as_float(w[k]));
            }
          }
          uint32_t w8[8];
#pragma unroll
          for (int k = 0; k < 8; ++k) w8[perm8(k)] = w[k];
          uint4* dst = reinterpret_cast<uint4*>(s_frag + (kg * p.slots + slot) * 8);
          dst[0] = make_uint4(w8[0], w8[1], w8[2], w8[3]);
          dst[1] = make_uint4(w8[4], w8[5], w8[6], w8[7]);
        }
      } else {
        for (int v = threadIdx.x; v < KG * p.slots; v += kThreads) {
          const int kg = v / p.slots, slot = v - (v / p.slots) * p.slots;
          uint32_t w8[8];
          if constexpr (kPW == 1) {
            const float* src = reinterpret_cast<const float*>(s_in) + kg * 8 * p.plane + slot;
#pragma unroll
            for (int k = 0; k < 8; ++k) {
              const float x = src[k * p.plane];
              w8[perm8(k)] = kAccurate ? __float_as_uint(x) : mma::to_tf32(x);
            }
          } else {
            const T* src = s_in + kg * 16 * p.plane + slot;
#pragma unroll
            for (int k = 0; k < 8; ++k)
              w8[perm8(k)] = ld16(src + 2 * k * p.plane) | (ld16(src + (2 * k + 1) * p.plane) << 16);
          }
          uint4* dst = reinterpret_cast<uint4*>(s_frag + (kg * p.slots + slot) * 8);
          dst[0] = make_uint4(w8[0], w8[1], w8[2], w8[3]);
          dst[1] = make_uint4(w8[4], w8[5], w8[6], w8[7]);
        }
      }
    };

    // Per-lane word offsets: B (input) slot * 8 + 2 * tq; A (weights) lane * 4.
    int b_word[WPX];
#pragma unroll
    for (int nt = 0; nt < WPX; ++nt) b_word[nt] = b_slot[nt] * 8 + 2 * tq;
    const int a_word = warp_co * WCO * 128 + lane * 4;

    // Fragments of step `it` = (tap, k-group).
    const int kg_mask = (1 << p.kg_log2) - 1;
    const int nsteps = ntaps << p.kg_log2;
    auto load_frags = [&](int it, const uint32_t* s_w, Frags<WCO, WPX>& f) {
      const int tap = it >> p.kg_log2, kg = it & kg_mask;
      const uint32_t* s_a = s_w + (tap * (kg_mask + 1) + kg) * (BN * 8) + a_word;
#pragma unroll
      for (int mt = 0; mt < WCO; ++mt) {
        const uint4 v = lds128(s_a + mt * 128);
        f.a[mt][0] = v.x;
        f.a[mt][1] = v.y;
        f.a[mt][2] = v.z;
        f.a[mt][3] = v.w;
      }
      const uint32_t* s_b = s_frag + (kg * p.slots + s_tap_a[tap]) * 8;
#pragma unroll
      for (int nt = 0; nt < WPX; ++nt) {
        const uint2 v = lds64(s_b + b_word[nt]);
        f.b[nt][0] = v.x;
        f.b[nt][1] = v.y;
      }
    };
    auto mma_frags = [&](Frags<WCO, WPX>& f) {
#pragma unroll
      for (int mt = 0; mt < WCO; ++mt) {
        if constexpr (kPW == 1) {
          if constexpr (kAccurate) {
            uint32_t ab[4], as[4];
#pragma unroll
            for (int k = 0; k < 4; ++k) mma::split_tf32(__uint_as_float(f.a[mt][k]), ab[k], as[k]);
#pragma unroll
            for (int nt = 0; nt < WPX; ++nt) {
              uint32_t bb[2], bs[2];
              mma::split_tf32(__uint_as_float(f.b[nt][0]), bb[0], bs[0]);
              mma::split_tf32(__uint_as_float(f.b[nt][1]), bb[1], bs[1]);
              mma::mma_3xtf32_m16n8k8(acc[mt][nt], ab, as, bb, bs);
            }
          } else {
#pragma unroll
            for (int nt = 0; nt < WPX; ++nt) mma::mma_tf32_m16n8k8(acc[mt][nt], f.a[mt], f.b[nt]);
          }
        } else if constexpr (std::is_same_v<T, c10::BFloat16>) {
#pragma unroll
          for (int nt = 0; nt < WPX; ++nt) mma::mma_bf16_m16n8k16(acc[mt][nt], f.a[mt], f.b[nt]);
        } else {
#pragma unroll
          for (int nt = 0; nt < WPX; ++nt) mma::mma_f16_m16n8k16(acc[mt][nt], f.a[mt], f.b[nt]);
        }
      }
    };

    // Two stages: chunk c+1 is copied while chunk c is converted and multiplied.
    load_chunk(0, 0);
    mma::cp_async_commit();
    for (int c = 0; c < nchunks; ++c) {
      const int buf = c & 1;
      mma::cp_async_wait<0>();
      __syncthreads();  // chunk c visible; everyone is done with chunk c-1 (stage and frag tile)
      if (c + 1 < nchunks) load_chunk(c + 1, buf ^ 1);
      mma::cp_async_commit();
      convert_chunk(buf, c);
      __syncthreads();  // fragment tile complete

      const uint32_t* s_w =
          reinterpret_cast<const uint32_t*>(smem_raw + buf * p.stage_bytes + p.in_bytes_stage);
      Frags<WCO, WPX> f0, f1;
      load_frags(0, s_w, f0);
      for (int it = 0; it < nsteps; it += 2) {
        if (it + 1 < nsteps) load_frags(it + 1, s_w, f1);
        mma_frags(f0);
        if (it + 1 < nsteps) {
          if (it + 2 < nsteps) load_frags(it + 2, s_w, f0);
          mma_frags(f1);
        }
      }
    }
    mma::cp_async_wait<0>();
  }

  // ---- epilogue: bias, convert, store through the output strides.
  if (p.staged_epilogue) {
    staged_epilogue<T, WARPS_CO, WARPS_PX, WCO, WPX>(acc, bias, out, p, bt, n0);
    return;
  }
  // Direct stores from the fragments (CONVT_IGEMM_EPILOGUE=direct; measurements and tests).
  // d[0] = (co gq, pixel 2tq), d[1] = (gq, 2tq+1), d[2] = (gq+8, 2tq), d[3] = (gq+8, 2tq+1).
  float bv[WCO][2];
  bool co_ok[WCO][2];
  int64_t co_off[WCO][2];
#pragma unroll
  for (int mt = 0; mt < WCO; ++mt)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int co_l = n0 + (warp_co * WCO + mt) * 16 + gq + 8 * h;
      co_ok[mt][h] = co_l < g.Cout_g;
      const int64_t co = static_cast<int64_t>(grp) * g.Cout_g + co_l;
      bv[mt][h] = (bias != nullptr && co_ok[mt][h]) ? static_cast<float>(bias[co]) : 0.f;
      co_off[mt][h] = co * p.out_s[1];
    }
  // Pixel (img, py, px) of m = m0 + 8*nt + e, walked incrementally from m0.
  const int m0 = warp_px * WPX * 8 + 2 * tq;
  int img0 = m0 / tile_pixels, r0 = m0 - img0 * tile_pixels;
  int py0 = r0 / p.TX, px0 = r0 - py0 * p.TX;
#pragma unroll
  for (int nt = 0; nt < WPX; ++nt) {
    int img = img0, py = py0, px = px0;
#pragma unroll
    for (int e = 0; e < 2; ++e) {
      if (e == 1 && ++px == p.TX) {
        px = 0;
        if (++py == p.TY) {
          py = 0;
          ++img;
        }
      }
      if (img >= nimg || py >= rows_left || px >= cols_left) continue;
      const int64_t oy = (j0y + py) * g.SH + ry - g.PH, ox = (j0x + px) * g.SW + rx - g.PW;
      T* o = out + (nimg0 + img) * p.out_s[0] + oy * p.out_s[2] + ox * p.out_s[3];
#pragma unroll
      for (int mt = 0; mt < WCO; ++mt) {
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          if (co_ok[mt][h]) o[co_off[mt][h]] = static_cast<T>(acc[mt][nt][h * 2 + e] + bv[mt][h]);
        }
      }
    }
    // next n-tile: 8 pixels further
    px0 += 8;
    while (px0 >= p.TX) {
      px0 -= p.TX;
      if (++py0 == p.TY) {
        py0 = 0;
        ++img0;
      }
    }
  }
}

// ---- host side ---------------------------------------------------------------------

// Shared-memory budget for choosing the K chunk: 110 KB keeps 2 blocks of 4 warps per SM;
// the 8-warp tiles take one block per SM and up to 200 KB (larger K chunks).
constexpr int kSmemNarrow = 110 * 1024;
constexpr int kSmemWide = 200 * 1024;
constexpr int kSmemMax = 200 * 1024;

// Tile shape, chunk size and shared-memory layout; false when it cannot fit. `cl`: the
// channels_last input form (copies along channels: rows need no alignment overhang, and the
// staged tile is [slot][KCW words]).
bool make_plan(const Geometry& g, int elem_size, int per_word, int BM, int BN, int smem_budget,
               bool cl, IgemmParams& p) {
  const PhaseExtents e = phase_extents(g);
  if (!plan_phases(g, e, kMaxTaps, p)) return false;
  const int ntaps = p.taps_y * p.taps_x;
  // Widest cp.async the rows allow (row starts stay aligned when W % vec == 0).
  p.vec = 1;
  for (int v : {16 / elem_size, 8 / elem_size, 4 / elem_size}) {
    if (cl) break;
    if (v >= 1 && g.W % v == 0) {
      p.vec = v;
      break;
    }
  }
  // Pixel tile. Whole phase images when they fit (several per block); else the window
  // with the least halo + overhang per useful pixel.
  if (e.cy * e.cx <= BM) {
    p.TX = static_cast<int>(e.cx);
    p.TY = static_cast<int>(e.cy);
    p.IMGS = static_cast<int>(std::min<int64_t>(g.N, BM / (e.cy * e.cx)));
  } else {
    double best = 1e300;
    for (int tx : {8, 16, 32, 64, 128, 256}) {
      if (tx > BM) break;
      const int ty = BM / tx;
      const int64_t tiles = ((e.cy + ty - 1) / ty) * ((e.cx + tx - 1) / tx);
      const double staged = double(ty + e.halo_y) * double(tx + e.halo_x + p.vec - 1);
      const double cost = double(tiles) * (BM + 0.5 * staged);
      if (cost < best) {
        best = cost;
        p.TX = tx;
        p.TY = ty;
      }
    }
    p.IMGS = 1;
  }
  p.tiles_x = static_cast<int>((e.cx + p.TX - 1) / p.TX);
  const int64_t TYH = p.TY + e.halo_y, TXH = p.TX + e.halo_x;
  p.pitch = static_cast<int>(round_up(TXH + p.vec - 1, p.vec));
  p.img_stride = static_cast<int>(TYH * p.pitch);
  p.slots = p.IMGS * p.img_stride;
  // Staged planes: a multiple of 8 elements (16-byte rows); +8 mod 32 keeps the
  // conversion pass's column reads of 8 channels on distinct banks.
  p.plane = static_cast<int>(round_up(p.slots, 32) + 8);
  const int64_t kw_needed = round_up((g.Cin_g + per_word - 1) / per_word, 8);
  auto in_bytes = [&](int kcw) {
    if (cl) return static_cast<int64_t>(kcw) * 4 * p.slots;  // [slot][kcw words]: 32-byte multiple
    return round_up(static_cast<int64_t>(kcw) * per_word * p.plane * elem_size, 16);
  };
  auto stage_bytes = [&](int kcw) { return in_bytes(kcw) + static_cast<int64_t>(kcw) * ntaps * BN * 4; };
  auto total_bytes = [&](int kcw) {
    return kStages * stage_bytes(kcw) + static_cast<int64_t>(kcw) * p.slots * 4;
  };
  p.KCW = 0;
  for (int kcw : {32, 16, 8}) {
    if (kcw > kw_needed && kcw != 8) continue;
    if (total_bytes(kcw) <= smem_budget) {
      p.KCW = kcw;
      break;
    }
  }
  if (p.KCW == 0) {
    if (total_bytes(8) > kSmemMax) return false;
    p.KCW = 8;
  }
  p.kg_log2 = p.KCW == 32 ? 2 : (p.KCW == 16 ? 1 : 0);
  p.kwords = static_cast<int>(round_up(kw_needed, p.KCW));
  p.in_bytes_stage = static_cast<int>(in_bytes(p.KCW));
  p.stage_bytes = static_cast<int>(stage_bytes(p.KCW));
  p.frag_offset = kStages * p.stage_bytes;
  p.smem_bytes = static_cast<int>(total_bytes(p.KCW));
  p.co_pad = round_up(g.Cout_g, BN);
  p.ph_stride = static_cast<int64_t>(p.kwords) * ntaps * p.co_pad;  // words (kwords/8 groups x 8)
  // Grid limits.
  const int64_t tiles_y = (e.cy + p.TY - 1) / p.TY;
  return tile_grid(g, tiles_y * p.tiles_x, p.IMGS).fits && p.co_pad / BN < 65536 &&
         g.H * g.W < (int64_t(1) << 31);
}

// Test knob CONVT_IGEMM_EPILOGUE=direct: stores straight from the MMA fragments (the
// epilogue before staged_epilogue; measurements and tests). Read once.
bool staged_epilogue_allowed() {
  static const bool allowed = [] {
    const char* e = std::getenv("CONVT_IGEMM_EPILOGUE");
    return !(e != nullptr && std::string(e) == "direct");
  }();
  return allowed;
}

// cl_vec: 0 for NCHW-contiguous input, else the channels_last form's copy width (elements).
template <typename T, int WARPS_CO, int WARPS_PX, int WCO, int WPX, bool kAccurate, bool kClInput>
bool run_config(const at::Tensor& input, const at::Tensor& weight,
                const std::optional<at::Tensor>& bias, const Geometry& g,
                const at::Tensor& output, int cl_vec) {
  constexpr int kThreads = WARPS_CO * WARPS_PX * 32;
  constexpr int BM = WARPS_PX * WPX * 8;   // pixels per block
  constexpr int BN = WARPS_CO * WCO * 16;  // output channels per block
  IgemmParams p{};
  p.g = g;
  for (int i = 0; i < 4; ++i) p.out_s[i] = output.stride(i);
  const int smem_budget = kThreads >= 256 ? kSmemWide : kSmemNarrow;
  if (!make_plan(g, sizeof(T), Elem<T>::kPerWord, BM, BN, smem_budget, kClInput, p)) return false;
  p.cl_vec = cl_vec;
  p.staged_epilogue = staged_epilogue_allowed() ? 1 : 0;
  if (p.staged_epilogue) p.smem_bytes = std::max(p.smem_bytes, StagedEpilogue<BM, BN>::kBytes);
  {
    // 16-byte channel runs: aligned base, pixel strides and group starts in whole vectors.
    const int64_t vec = 16 / sizeof(T);
    p.out_vec16 = reinterpret_cast<uintptr_t>(output.data_ptr()) % 16 == 0 && p.out_s[1] == 1 &&
                  p.out_s[0] % vec == 0 && p.out_s[2] % vec == 0 && p.out_s[3] % vec == 0 &&
                  g.Cout_g % vec == 0;
  }
  const PhaseExtents e = phase_extents(g);

  auto stream = at::cuda::getCurrentCUDAStream();
  // Pack the weights for this call (small: Cin*Cout_g*taps words).
  const at::Tensor w = weight.contiguous();
  const int64_t total = g.groups * g.SH * g.SW * p.ph_stride;
  at::Tensor wp = at::empty({total}, weight.options().dtype(at::kInt));
  {
    const int threads = 256;
    const int64_t blocks = std::min<int64_t>((total + threads - 1) / threads, 4096);
    if (std::is_same_v<T, float> && !kAccurate) {
      pack_weights_kernel<T, true><<<blocks, threads, 0, stream>>>(
          w.data_ptr<T>(), reinterpret_cast<uint32_t*>(wp.data_ptr<int>()), p, total);
    } else {
      pack_weights_kernel<T, false><<<blocks, threads, 0, stream>>>(
          w.data_ptr<T>(), reinterpret_cast<uint32_t*>(wp.data_ptr<int>()), p, total);
    }
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  }

  auto kernel = igemm_kernel<T, WARPS_CO, WARPS_PX, WCO, WPX, kAccurate, kClInput>;
  const int smem_bytes = p.smem_bytes;
  C10_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem_bytes));
  const TileGrid grid = tile_grid(g, ((e.cy + p.TY - 1) / p.TY) * p.tiles_x, p.IMGS);
  const int64_t grid_y = p.co_pad / BN;
  const T* bias_ptr = (bias.has_value() && bias->defined()) ? bias->data_ptr<T>() : nullptr;
  kernel<<<dim3(static_cast<unsigned>(grid.x), static_cast<unsigned>(grid_y),
                static_cast<unsigned>(grid.z)),
           kThreads, smem_bytes, stream>>>(input.data_ptr<T>(),
                                           reinterpret_cast<const uint32_t*>(wp.data_ptr<int>()),
                                           bias_ptr, output.data_ptr<T>(), p);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return true;
}

// The input form: NCHW (cl_vec == 0) or channels_last.
template <typename T, int WARPS_CO, int WARPS_PX, int WCO, int WPX, bool kAccurate>
bool run_form(const at::Tensor& input, const at::Tensor& weight, const std::optional<at::Tensor>& bias,
              const Geometry& g, const at::Tensor& output, int cl_vec) {
  return cl_vec > 0
             ? run_config<T, WARPS_CO, WARPS_PX, WCO, WPX, kAccurate, true>(input, weight, bias, g, output, cl_vec)
             : run_config<T, WARPS_CO, WARPS_PX, WCO, WPX, kAccurate, false>(input, weight, bias, g, output, 0);
}

template <typename T, bool kAccurate>
bool run_typed(const at::Tensor& input, const at::Tensor& weight,
               const std::optional<at::Tensor>& bias, const Geometry& g,
               const at::Tensor& output, int cl_vec) {
  // 4 warps; warp tile (16*WCO channels) x (8*WPX pixels). Channel tile by Cout/groups.
  if (g.Cout_g > 32) {
    // Many taps on large phase images: 8 warps x 256 pixels halve the weight staging per
    // output and allow larger K chunks (measured: kb1_57 9.3 -> 8.5 ms, kb1_65 6.1 -> 3.8,
    // kb1_69 6.6 -> 6.1, kb2_10 9.2 -> 7.7; worse on 4-tap kb2_5 and on small images).
    const PhaseExtents e = phase_extents(g);
    if (e.ty * e.tx >= 9 && e.cy * e.cx >= 16384)
      return run_form<T, 2, 4, 2, 8, kAccurate>(input, weight, bias, g, output, cl_vec);
    return run_form<T, 2, 2, 2, 8, kAccurate>(input, weight, bias, g, output, cl_vec);
  }
  if (g.Cout_g > 16) return run_form<T, 1, 4, 2, 8, kAccurate>(input, weight, bias, g, output, cl_vec);
  return run_form<T, 1, 4, 1, 8, kAccurate>(input, weight, bias, g, output, cl_vec);
}

// Copy width (elements) of the channels_last form for a dense channels_last `input`: the
// widest of 16, 8 and 4 bytes that the base pointer's alignment, the pixel stride (Cin) and
// the group's channel count (group starts and chunk ends) keep aligned; 0 when none does
// (a 16-bit tensor with an odd channel count or an odd base address). No 2-byte cp.async.
int cl_copy_vec(const at::Tensor& input, const Geometry& g) {
  const int elem = static_cast<int>(input.element_size());
  const auto addr = reinterpret_cast<uintptr_t>(input.data_ptr());
  for (int bytes : {16, 8, 4}) {
    const int v = bytes / elem;
    if (v >= 1 && addr % bytes == 0 && g.Cin % v == 0 && g.Cin_g % v == 0) return v;
  }
  return 0;
}

}  // namespace

bool launch_igemm(const at::Tensor& input, const at::Tensor& weight,
                  const std::optional<at::Tensor>& bias, const Geometry& g,
                  const at::Tensor& output, bool fp32_accurate) {
  // NCHW-contiguous input: the NCHW form. Dense channels_last (and not also NCHW-contiguous):
  // the channels_last form reads it in place, which saves the transpose pass (kb1_75, bf16:
  // ~57 us of a ~800 us forward); where its copies cannot be aligned, one tiled transpose to
  // NCHW first, as before the form existed.
  int cl_vec = 0;
  if (!input.is_contiguous()) {
    if (!channels_last_dense(input)) return false;
    cl_vec = cl_copy_vec(input, g);
    if (cl_vec == 0) return launch_igemm(to_nchw(input), weight, bias, g, output, fp32_accurate);
  }
  std::optional<at::Tensor> b = bias;
  if (b.has_value() && b->defined() && b->stride(0) != 1) b = b->contiguous();
  switch (input.scalar_type()) {
    case at::kFloat:
      return fp32_accurate ? run_typed<float, true>(input, weight, b, g, output, cl_vec)
                           : run_typed<float, false>(input, weight, b, g, output, cl_vec);
    case at::kHalf:
      return run_typed<c10::Half, false>(input, weight, b, g, output, cl_vec);
    case at::kBFloat16:
      return run_typed<c10::BFloat16, false>(input, weight, b, g, output, cl_vec);
    default:
      return false;
  }
}

}  // namespace fwd
}  // namespace convt
