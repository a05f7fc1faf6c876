// grad_weight of conv_transpose2d for narrow channel groups (Cin/groups <= 16, Cout/groups
// <= 32), phase by phase on mma.sync tensor cores.
//
// Why a kernel of its own: the tile kernel (backward_grad_weight.cu) multiplies 32 x 128
// tiles, so 8 x 16 channels per group (kb1_75) fill 1/32 of each MMA, and it gathers
// grad_output per tap through the stride (one 2-byte piece per sector at stride 3). Measured
// on an H100 (perf-notes-backward): 1.96 ms of a 4.1 ms bf16 training step, where the
// reads alone take ~0.15 ms.
//
// Formulation (the phase decomposition of phase_tiles.cuh). Along one axis, tap t belongs to
// the output residue r(t) = t*D mod S and reads input i = j + off(t), off(t) = (r(t) - t*D)/S,
// for the phase's outputs o = j*S + r - P. So, per tap (ty, tx),
//   gw[ci][co][ty][tx] = sum_{n, jy, jx} go[n][co][jy*SH + ry - PH][jx*SW + rx - PW]
//                                        * x[n][ci][jy + offy][jx + offx],
// with grad_output and input outside their images read as zero.
//
// Block tile: TJY x TJX phase indices (jy, jx) of one image, i.e. the output rows
// [J0y*SH - PH, +TJY*SH) x columns [J0x*SW - PW, +TJX*SW): contiguous loads that serve every
// phase at once, each grad_output element read once. Rows of phases without taps are not read
// at all (kb1_75: half its rows).
//   - grad_output rows are copied as they lie in memory (cp.async, two stages; NCHW: one
//     channel's row, channels_last: a row of pixels with the group's channel runs), and the A
//     fragments read a phase's pixels from them every SW-th pixel;
//   - the input rows likewise, then converted to [ci][row][col] MMA words; 16-bit types as
//     32-bit words holding columns c and c + 1, so that a pixel pair at any tap offset is one
//     aligned load (fp32: TF32-rounded floats).
// MMA: M = output channels (16 per m-tile), N = input channels (8 per n-tile), K = 16 (8 for
// TF32) consecutive jx of one jy row. The 8 warps split the tile's (jy, k-step) pairs, and
// each warp accumulates every tap of the block's tap group (grid y). Blocks of grid x loop
// over consecutive tiles (a split of the reduction); at the end the warps' sums are added in
// warp order through shared memory and written to the split's workspace row. No atomics:
// bit-identical run to run; grad_weight_reduce sums the splits in order.
#include "backward_common.cuh"
#include "mma.cuh"
#include "phase_tiles.cuh"

#include <ATen/Dispatch.h>

#include <algorithm>
#include <initializer_list>

namespace convt {
namespace bwd {
namespace {

constexpr int kNarrowThreads = 256;
constexpr int kNarrowWarps = kNarrowThreads / 32;
constexpr int kAccPerLane = 64;  // accumulator floats per lane: taps per block x MT x NT x 4

struct NarrowParams {
  int Cin, Cin_g, Cout, Cout_g, H, W, Hout, Wout;
  int KW, DH, DW, SH, SW, PH, PW;
  int ntaps;                       // KH * KW
  int TJY, TJX;                    // phase indices per tile
  int jy0, jx0;                    // origin of the tile grid (phase index, may be negative)
  int tiles_y, tiles_x;            // tiles per image
  int64_t tiles;                   // N * tiles_y * tiles_x
  int64_t chunk;                   // tiles per split
  int nry, nrx;                    // phases with taps along each axis
  int slot_y[fwd::kMaxStride];     // residue -> phase slot, -1 without taps
  int slot_x[fwd::kMaxStride];
  int offy_min, offx_min;          // smallest input offsets over the taps
  int XR, XC;                      // staged input rows / words per row
  int x_pitch;                     // words per staged input channel
  int ry_of[fwd::kMaxStride];      // phase slot -> residue
  int rx_of[fwd::kMaxStride];
  int vec_go, vec_x;               // elements per copy piece (rows / channel runs of whole pieces)
  int pitch_go_raw, pitch_x_raw;   // elements per raw staged row
  // Operand layouts. NCHW: a raw row is one channel's output (input) row. channels_last: a raw
  // row is one output (input) row with the group's channels of each pixel together, `cp`
  // elements per pixel, copied in pieces of `vec` channels (`ppp` pieces per pixel).
  int go_cl, x_cl;
  int go_cp, x_cp, go_ppp, x_ppp;
  int go_co_stride, go_px_stride;  // raw grad_output: elements per channel / per pixel
  int x_ci_stride, x_row_stride, x_px_stride;  // raw input: per channel / row / pixel
  int64_t go_sn, go_sc, go_sh, go_sw;  // global strides (elements)
  int64_t x_sn, x_sc, x_sh, x_sw;
  int raw_offset;                  // bytes: first raw stage (after the MMA tiles)
  int raw_stage_bytes;             // bytes per raw stage (grad_output rows, then input rows)
  int raw_x_offset;                // bytes: input rows within a raw stage
  int smem_bytes;
};

// Tap t along one axis: its phase residue and input offset (exact division).
__host__ __device__ inline int tap_residue(int t, int D, int S) { return (t * D) % S; }
__host__ __device__ inline int tap_offset(int t, int D, int S) { return (tap_residue(t, D, S) - t * D) / S; }

__device__ __forceinline__ uint32_t bits16(c10::Half v) { return reinterpret_cast<const uint16_t&>(v); }
__device__ __forceinline__ uint32_t bits16(c10::BFloat16 v) { return reinterpret_cast<const uint16_t&>(v); }

// One staged row: `pieces` pieces of `vec` elements from column x_al of `src` (a row of
// `len` valid columns; 0: the whole row is outside the image) into `dst`, lanes along the
// row, zeros outside. 16-, 8- and 4-byte pieces are cp.async copies; 2-byte pieces (odd
// 16-bit rows) plain loads. The width is one switch per row, not per piece. (This is
// copy_cl_pieces below with one piece per "pixel": c0 = x_al / vec, pixel stride and pitch
// vec. It stays separate because it spends fewer instructions per piece, no pixel / piece
// stepping and no 64-bit multiply, and the kernel is instruction-bound: ncu, run HH.)
template <int kBytes, typename T>
__device__ __forceinline__ void copy_pieces(T* dst, const T* src, int x_al, int pieces, int len,
                                            int lane, const T* any) {
  constexpr int kVec = kBytes / static_cast<int>(sizeof(T));
  for (int k = lane; k < pieces; k += 32) {
    const int c = x_al + k * kVec;
    const bool ok = c >= 0 && c < len;
    const T* from = ok ? src + c : any;
    if constexpr (kBytes == 16) {
      mma::cp_async16(dst + k * kVec, from, ok);
    } else if constexpr (kBytes == 8) {
      mma::cp_async8(dst + k * kVec, from, ok);
    } else if constexpr (kBytes == 4) {
      mma::cp_async4(dst + k * kVec, from, ok);
    } else {
      dst[k * kVec] = ok ? *from : T(0);
    }
  }
}

// One staged channels_last row: pixels [c0, c0 + npx) of `src` (pixel stride `sw`, the
// group's first channel at src), ppp pieces of kBytes per pixel, into dst with `cp` elements
// per pixel; zeros for pixels outside [0, len). Lanes run over (pixel, piece), piece fastest,
// so a pixel's channel run is one contiguous request.
template <int kBytes, typename T>
__device__ __forceinline__ void copy_cl_pieces(T* dst, const T* src, int c0, int npx, int ppp,
                                               int cp, int64_t sw, int len, int lane, const T* any) {
  constexpr int kVec = kBytes / static_cast<int>(sizeof(T));
  const int step_px = 32 / ppp, step_part = 32 - step_px * ppp;
  int px = lane / ppp, part = lane - px * ppp;
  for (int k = lane; k < npx * ppp; k += 32) {
    const int c = c0 + px;
    const bool ok = c >= 0 && c < len;
    const T* from = ok ? src + c * sw + part * kVec : any;
    T* to = dst + px * cp + part * kVec;
    if constexpr (kBytes == 16) {
      mma::cp_async16(to, from, ok);
    } else if constexpr (kBytes == 8) {
      mma::cp_async8(to, from, ok);
    } else if constexpr (kBytes == 4) {
      mma::cp_async4(to, from, ok);
    } else {
      *to = ok ? *from : T(0);
    }
    px += step_px;
    part += step_part;
    if (part >= ppp) {
      part -= ppp;
      ++px;
    }
  }
}

template <typename T>
__device__ __forceinline__ void copy_cl_row(T* dst, const T* src, int c0, int npx, int vec, int ppp,
                                            int cp, int64_t sw, int len, int lane, const T* any) {
  switch (vec * static_cast<int>(sizeof(T))) {
    case 16:
      return copy_cl_pieces<16>(dst, src, c0, npx, ppp, cp, sw, len, lane, any);
    case 8:
      return copy_cl_pieces<8>(dst, src, c0, npx, ppp, cp, sw, len, lane, any);
    case 4:
      if constexpr (sizeof(T) <= 4) return copy_cl_pieces<4>(dst, src, c0, npx, ppp, cp, sw, len, lane, any);
      return;
    default:
      if constexpr (sizeof(T) == 2) copy_cl_pieces<2>(dst, src, c0, npx, ppp, cp, sw, len, lane, any);
      return;
  }
}

template <typename T>
__device__ __forceinline__ void copy_row(T* dst, const T* src, int x_al, int vec, int pieces,
                                         int len, int lane, const T* any) {
  switch (vec * static_cast<int>(sizeof(T))) {
    case 16:
      return copy_pieces<16>(dst, src, x_al, pieces, len, lane, any);
    case 8:
      return copy_pieces<8>(dst, src, x_al, pieces, len, lane, any);
    case 4:
      if constexpr (sizeof(T) <= 4) return copy_pieces<4>(dst, src, x_al, pieces, len, lane, any);
      return;
    default:
      if constexpr (sizeof(T) == 2) copy_pieces<2>(dst, src, x_al, pieces, len, lane, any);
      return;
  }
}

// The digits of a row index that a warp walks in steps of kNarrowWarps: lo (fastest, lo_n
// values), mid (mid_n values), hi. Stepped, so the row loops divide nothing.
struct RowDigits {
  int lo = 0, mid = 0, hi = 0;
  __device__ RowDigits(int start, int lo_n, int mid_n) { step(start, lo_n, mid_n); }
  __device__ void step(int by, int lo_n, int mid_n) {
    lo += by;
    while (lo >= lo_n) {
      lo -= lo_n;
      if (++mid == mid_n) {
        mid = 0;
        ++hi;
      }
    }
  }
};

__device__ __forceinline__ int floor_to(int a, int v) { return (a >= 0 ? a / v : -((-a + v - 1) / v)) * v; }

template <typename T, int MT, int NT>
__global__ void __launch_bounds__(kNarrowThreads, 2)
    grad_weight_narrow_kernel(const T* __restrict__ x, const T* __restrict__ go,
                              float* __restrict__ ws, const NarrowParams p) {
  constexpr bool kF32 = sizeof(T) == 4;
  constexpr int kK = kF32 ? 8 : 16;  // pixels per k-step
  constexpr int kSlots = kAccPerLane / (MT * NT * 4);
  extern __shared__ __align__(16) unsigned char smem_raw[];
  uint32_t* s_x = reinterpret_cast<uint32_t*>(smem_raw);  // input tile as MMA words
  __shared__ int s_tap_ph[kSlots];  // phase (row slot * nrx + column slot) of each tap
  __shared__ int s_tap_x[kSlots];   // word offset of the tap's input shift in s_x

  const int grp = blockIdx.z;
  const int tap0 = blockIdx.y * kSlots;
  const int ntap = min(kSlots, p.ntaps - tap0);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int gq = lane / 4, tq = lane % 4;
  if (threadIdx.x < kSlots) {
    // Slots past the group's taps get phase -1: never multiplied.
    const int t = tap0 + threadIdx.x, ty = t / p.KW, tx = t - ty * p.KW;
    const bool ok = threadIdx.x < ntap;
    s_tap_ph[threadIdx.x] =
        ok ? p.slot_y[tap_residue(ty, p.DH, p.SH)] * p.nrx + p.slot_x[tap_residue(tx, p.DW, p.SW)] : -1;
    s_tap_x[threadIdx.x] =
        ok ? (tap_offset(ty, p.DH, p.SH) - p.offy_min) * p.XC + (tap_offset(tx, p.DW, p.SW) - p.offx_min) : 0;
  }

  float acc[kSlots][MT][NT][4] = {};

  const int wt = p.TJX * p.SW;  // staged output columns
  const int xce = p.XC + (kF32 ? 0 : 1);  // staged input columns (16-bit: one more for the pairs)
  const int go_rows = p.Cout_g * p.nry * p.TJY, x_rows = p.Cin_g * p.XR;
  const int nph = p.nry * p.nrx;
  const int64_t tiles_img = static_cast<int64_t>(p.tiles_y) * p.tiles_x;
  const int64_t t_begin = static_cast<int64_t>(blockIdx.x) * p.chunk;
  const int64_t t_end = min(p.tiles, t_begin + p.chunk);
  const int ksteps = p.TJX / kK;
  const int pairs = p.TJY * ksteps;
  // A rows of the lane (output channels gq, gq + 8 of each m-tile; channels past Cout/groups
  // read channel 0's row: they only feed accumulator rows that are never stored).
  int a_row[MT][2];
#pragma unroll
  for (int mt = 0; mt < MT; ++mt)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int co = mt * 16 + gq + 8 * h;
      a_row[mt][h] = (co < p.Cout_g ? co : 0) * p.go_co_stride;
    }

  // A tile's image and first phase indices; the tile loop steps it (no divisions).
  struct Origin {
    int64_t n;
    int ty, tx;
    int J0y, J0x;
  };
  auto set_xy = [&](Origin& o) {
    o.J0y = p.jy0 + o.ty * p.TJY;
    o.J0x = p.jx0 + o.tx * p.TJX;
  };
  auto advance = [&](Origin& o) {
    if (++o.tx == p.tiles_x) {
      o.tx = 0;
      if (++o.ty == p.tiles_y) {
        o.ty = 0;
        ++o.n;
      }
    }
    set_xy(o);
  };
  auto raw_go = [&](int buf) { return reinterpret_cast<T*>(smem_raw + p.raw_offset + buf * p.raw_stage_bytes); };
  auto raw_x = [&](int buf) {
    return reinterpret_cast<T*>(smem_raw + p.raw_offset + buf * p.raw_stage_bytes + p.raw_x_offset);
  };

  // Stage 1 (asynchronous): the tile's grad_output rows (of phases with taps) and input rows
  // as they are in memory, from origins aligned down to the copy width (pieces wholly inside
  // or outside a row; outside: zeros). Warp w copies rows w, w + 8, ...; their (channel,
  // slot, row) digits are stepped, not divided.
  auto issue = [&](const Origin& o, int buf) {
    {
      const T* go_n = go + o.n * p.go_sn + static_cast<int64_t>(grp) * p.Cout_g * p.go_sc;
      const int vec = p.vec_go;
      const int ox0 = o.J0x * p.SW - p.PW;
      T* raw = raw_go(buf);
      if (p.go_cl) {
        RowDigits d(warp, p.TJY, p.nry);  // (jy, row slot, -)
        for (int row = warp; row < p.nry * p.TJY; row += kNarrowWarps, d.step(kNarrowWarps, p.TJY, p.nry)) {
          const int oy = (o.J0y + d.lo) * p.SH + p.ry_of[d.mid] - p.PH;
          const bool row_ok = oy >= 0 && oy < p.Hout;
          copy_cl_row(raw + row * p.pitch_go_raw, go_n + (row_ok ? oy : 0) * p.go_sh, ox0, wt, vec,
                      p.go_ppp, p.go_cp, p.go_sw, row_ok ? p.Wout : 0, lane, go);
        }
      } else {
        const int x_al = floor_to(ox0, vec);
        const int pieces = (ox0 - x_al + wt + vec - 1) / vec;
        RowDigits d(warp, p.TJY, p.nry);  // (jy, row slot, channel)
        for (int row = warp; row < go_rows; row += kNarrowWarps, d.step(kNarrowWarps, p.TJY, p.nry)) {
          const int oy = (o.J0y + d.lo) * p.SH + p.ry_of[d.mid] - p.PH;
          const bool row_ok = oy >= 0 && oy < p.Hout;
          const T* src = go_n + d.hi * p.go_sc + (row_ok ? oy : 0) * p.go_sh;
          copy_row(raw + row * p.pitch_go_raw, src, x_al, vec, pieces, row_ok ? p.Wout : 0, lane, go);
        }
      }
    }
    {
      const T* x_n = x + o.n * p.x_sn + static_cast<int64_t>(grp) * p.Cin_g * p.x_sc;
      const int vec = p.vec_x;
      const int ix0 = o.J0x + p.offx_min;
      T* raw = raw_x(buf);
      if (p.x_cl) {
        for (int xr = warp; xr < p.XR; xr += kNarrowWarps) {
          const int iy = o.J0y + p.offy_min + xr;
          const bool row_ok = iy >= 0 && iy < p.H;
          copy_cl_row(raw + xr * p.pitch_x_raw, x_n + (row_ok ? iy : 0) * p.x_sh, ix0, xce, vec,
                      p.x_ppp, p.x_cp, p.x_sw, row_ok ? p.W : 0, lane, x);
        }
      } else {
        const int x_al = floor_to(ix0, vec);
        const int pieces = (ix0 - x_al + xce + vec - 1) / vec;
        RowDigits d(warp, p.XR, 1);  // (row, -, channel)
        for (int row = warp; row < x_rows; row += kNarrowWarps, d.step(kNarrowWarps, p.XR, 1)) {
          const int iy = o.J0y + p.offy_min + d.lo;
          const bool row_ok = iy >= 0 && iy < p.H;
          const T* src = x_n + d.hi * p.x_sc + (row_ok ? iy : 0) * p.x_sh;
          copy_row(raw + row * p.pitch_x_raw, src, x_al, vec, pieces, row_ok ? p.W : 0, lane, x);
        }
      }
    }
  };

  // Stage 2: the input as MMA words (16-bit: columns c and c + 1; fp32: TF32-rounded).
  auto convert_x = [&](const Origin& o, int buf) {
    const int ix0 = o.J0x + p.offx_min;
    const int shift = p.x_cl ? 0 : ix0 - floor_to(ix0, p.vec_x);
    const T* raw = raw_x(buf);
    const int px = p.x_px_stride;
    RowDigits d(warp, p.XR, 1);  // (row, -, channel)
    for (int row = warp; row < x_rows; row += kNarrowWarps, d.step(kNarrowWarps, p.XR, 1)) {
      const T* src = raw + d.hi * p.x_ci_stride + d.lo * p.x_row_stride + shift;
      uint32_t* dst = s_x + d.hi * p.x_pitch + d.lo * p.XC;
      for (int c = lane; c < p.XC; c += 32) {
        if constexpr (kF32) {
          dst[c] = mma::to_tf32(src[c * px]);
        } else {
          dst[c] = bits16(src[c * px]) | (bits16(src[(c + 1) * px]) << 16);
        }
      }
    }
  };

  // Two stages: tile t + 1 is copied while tile t is converted and multiplied.
  Origin cur;
  {
    cur.n = t_begin / tiles_img;
    const int rem = static_cast<int>(t_begin - cur.n * tiles_img);
    cur.ty = rem / p.tiles_x;
    cur.tx = rem - cur.ty * p.tiles_x;
    set_xy(cur);
  }
  if (t_begin < t_end) issue(cur, 0);
  mma::cp_async_commit();
  for (int64_t tile = t_begin; tile < t_end; ++tile) {
    const int buf = static_cast<int>((tile - t_begin) & 1);
    Origin next = cur;
    advance(next);
    mma::cp_async_wait<0>();
    __syncthreads();  // tile's copies visible; the previous tile's MMAs are done
    if (tile + 1 < t_end) issue(next, buf ^ 1);
    mma::cp_async_commit();
    convert_x(cur, buf);
    __syncthreads();

    // MMAs: warp per (jy, k-step) pair. Per phase, the A fragments (grad_output) come
    // straight from the raw rows, phase column rx every SW elements, and serve all of the
    // phase's taps; per tap, the B fragments are the input words at the tap's shift.
    const int ox0 = cur.J0x * p.SW - p.PW;
    const T* go_tile = raw_go(buf) + (p.go_cl ? 0 : ox0 - floor_to(ox0, p.vec_go));
    const int ps = p.SW * p.go_px_stride;  // elements between a phase's consecutive pixels
    for (int pr = warp; pr < pairs; pr += kNarrowWarps) {
      const int jy = pr / ksteps, j0 = (pr - jy * ksteps) * kK;
      for (int ph = 0, sy = 0, sx = 0; ph < nph; ++ph) {
        const int rx = p.rx_of[sx];
        // Element offset of pixel j0 of this phase row within a channel's rows.
        const T* a_base = go_tile + (sy * p.TJY + jy) * p.pitch_go_raw + (j0 * p.SW + rx) * p.go_px_stride;
        uint32_t a[MT][4];
#pragma unroll
        for (int mt = 0; mt < MT; ++mt)
#pragma unroll
          for (int h = 0; h < 2; ++h) {
            const T* r = a_base + a_row[mt][h];
            if constexpr (kF32) {
              // m16n8k8: {(gq, tq), (gq + 8, tq), (gq, tq + 4), (gq + 8, tq + 4)}
              a[mt][h] = mma::to_tf32(r[tq * ps]);
              a[mt][h + 2] = mma::to_tf32(r[(tq + 4) * ps]);
            } else {
              // m16n8k16: pixel pairs {2tq, 2tq + 1} and {2tq + 8, 2tq + 9}
              a[mt][h] = bits16(r[2 * tq * ps]) | (bits16(r[(2 * tq + 1) * ps]) << 16);
              a[mt][h + 2] = bits16(r[(2 * tq + 8) * ps]) | (bits16(r[(2 * tq + 9) * ps]) << 16);
            }
          }
        const uint32_t* b_row = s_x + jy * p.XC + j0;
#pragma unroll
        for (int s = 0; s < kSlots; ++s) {
          if (s_tap_ph[s] != ph) continue;
          uint32_t b[NT][2];
#pragma unroll
          for (int nt = 0; nt < NT; ++nt) {
            const uint32_t* c0 = b_row + s_tap_x[s] + (nt * 8 + gq) * p.x_pitch;
            if constexpr (kF32) {
              b[nt][0] = c0[tq];
              b[nt][1] = c0[tq + 4];
            } else {
              b[nt][0] = c0[2 * tq];
              b[nt][1] = c0[2 * tq + 8];
            }
          }
#pragma unroll
          for (int mt = 0; mt < MT; ++mt)
#pragma unroll
            for (int nt = 0; nt < NT; ++nt) {
              if constexpr (kF32) {
                mma::mma_tf32_m16n8k8(acc[s][mt][nt], a[mt], b[nt]);
              } else if constexpr (std::is_same_v<T, c10::BFloat16>) {
                mma::mma_bf16_m16n8k16(acc[s][mt][nt], a[mt], b[nt]);
              } else {
                mma::mma_f16_m16n8k16(acc[s][mt][nt], a[mt], b[nt]);
              }
            }
        }
        if (++sx == p.nrx) {
          sx = 0;
          ++sy;
        }
      }
    }
    cur = next;
  }
  mma::cp_async_wait<0>();

  // The warps' sums, added in warp order: [warp][slot][mt][nt][r][lane] floats.
  constexpr int kPerWarp = kSlots * MT * NT * 4 * 32;
  float* red = reinterpret_cast<float*>(smem_raw);
  __syncthreads();  // every warp is done with the tiles
#pragma unroll
  for (int s = 0; s < kSlots; ++s)
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
      for (int nt = 0; nt < NT; ++nt)
#pragma unroll
        for (int r = 0; r < 4; ++r)
          red[warp * kPerWarp + (((s * MT + mt) * NT + nt) * 4 + r) * 32 + lane] = acc[s][mt][nt][r];
  __syncthreads();
  const int64_t split_base = static_cast<int64_t>(blockIdx.x) * p.ntaps;  // ws[split][tap][ci][co]
  for (int e = threadIdx.x; e < kPerWarp; e += kNarrowThreads) {
    const int l = e % 32, r = (e / 32) % 4, rest = e / 128;
    const int nt = rest % NT, mt = (rest / NT) % MT, s = rest / (NT * MT);
    if (s >= ntap) continue;
    // D fragment: r = 0 (co gq, ci 2tq), 1 (gq, 2tq + 1), 2 (gq + 8, 2tq), 3 (gq + 8, 2tq + 1).
    const int co = mt * 16 + l / 4 + 8 * (r >> 1), ci = nt * 8 + 2 * (l % 4) + (r & 1);
    if (co >= p.Cout_g || ci >= p.Cin_g) continue;
    float sum = 0.f;
    for (int w = 0; w < kNarrowWarps; ++w) sum += red[w * kPerWarp + e];
    ws[((split_base + tap0 + s) * p.Cin + static_cast<int64_t>(grp) * p.Cin_g + ci) * p.Cout_g + co] = sum;
  }
}

// ---- host side ---------------------------------------------------------------------

struct NarrowPlan {
  NarrowParams p{};
  int mt = 1, nt = 1, slots = 16;
  int64_t tap_groups = 1, splits = 1;
  bool ok = false;
};

// How an operand lies in memory: NCHW or channels_last, its strides (elements) and the
// byte alignment of its data pointer (copy pieces never straddle it).
struct OperandLayout {
  bool cl = false;
  int64_t sn = 0, sc = 0, sh = 0, sw = 0;
  int64_t align = 16;
};

OperandLayout layout_of(const at::Tensor& t) {
  OperandLayout l;
  l.cl = !t.is_contiguous();  // the launcher accepts NCHW- or channels_last-contiguous only
  l.sn = t.stride(0);
  l.sc = t.stride(1);
  l.sh = t.stride(2);
  l.sw = t.stride(3);
  const auto p = reinterpret_cast<uintptr_t>(t.const_data_ptr());
  l.align = p % 16 == 0 ? 16 : p % 8 == 0 ? 8 : p % 4 == 0 ? 4 : 2;
  return l;
}

constexpr int64_t kNarrowSmemMax = 200 * 1024;

// Copy pieces: the widest that divides the pointer's alignment and, NCHW, the row length
// (rows from an origin aligned down to the piece), channels_last, the group's channels and
// every pixel stride (16-bit rows or runs of odd length: element by element).
int piece_elems(int elem_size, std::initializer_list<int64_t> lengths, int64_t align) {
  for (int v : {16 / elem_size, 8 / elem_size, 4 / elem_size}) {
    bool ok = v >= 1 && align % (int64_t(v) * elem_size) == 0;
    for (int64_t len : lengths) ok = ok && len % v == 0;
    if (ok) return v;
  }
  return 1;
}

// The shared memory of a staging: the input tile as MMA words and two raw stages, or the
// warps' reduction buffer where that is larger.
int64_t staging_smem(const NarrowParams& p, int64_t raw_go_bytes, int64_t raw_x_bytes) {
  const int64_t red_bytes = int64_t(kNarrowWarps) * kAccPerLane * 32 * 4;
  return std::max<int64_t>(p.raw_offset + 2 * (raw_go_bytes + raw_x_bytes), red_bytes);
}

// Raw input rows of a layout (no choice to make: channels_last rows hold the group's channels
// per pixel unpadded, NCHW rows are padded to whole pieces).
int64_t stage_x_layout(NarrowParams& p, int elem_size, bool cl) {
  const int xce = p.XC + (elem_size == 4 ? 0 : 1);
  if (cl) {
    p.x_ppp = p.Cin_g / p.vec_x;
    p.x_cp = p.Cin_g;
    p.pitch_x_raw = static_cast<int>(round_up(int64_t(xce) * p.x_cp, 8));
    p.x_ci_stride = 1;
    p.x_row_stride = p.pitch_x_raw;
    p.x_px_stride = p.x_cp;
  } else {
    p.pitch_x_raw = static_cast<int>(round_up(xce + p.vec_x - 1, p.vec_x));
    p.x_ci_stride = p.XR * p.pitch_x_raw;
    p.x_row_stride = p.pitch_x_raw;
    p.x_px_stride = 1;
  }
  return round_up((cl ? int64_t(1) : p.Cin_g) * p.XR * p.pitch_x_raw * elem_size, 16);
}

// Raw grad_output rows of a layout. channels_last: wt pixels x go_cp channels, the group's
// channels padded by `pad` pieces; NCHW: rows of `pitch` elements (at least the minimum).
int64_t go_raw_bytes(const NarrowParams& p, int elem_size, bool cl, int pad_or_pitch) {
  const int wt = p.TJX * p.SW;
  const int64_t pitch = cl ? round_up(int64_t(wt) * (p.Cout_g + pad_or_pitch * p.vec_go), 8) : pad_or_pitch;
  return round_up((cl ? int64_t(1) : p.Cout_g) * p.nry * p.TJY * pitch * elem_size, 16);
}

int min_go_pitch(const NarrowParams& p) {
  return static_cast<int>(round_up(p.TJX * p.SW + p.vec_go - 1, p.vec_go));
}

// Tile and split of a problem: a function of the geometry and the element size alone
// (grad_weight_narrow_supported, grad_weight_narrow_splits and the launch agree on them). ok
// where the kernel takes the problem: its shared memory then fits for any operand layout and
// alignment (the least padded staging of NCHW and of channels_last operands with the widest
// pieces both fit; stage_operands only pads further where that still fits).
NarrowPlan plan_narrow(const Geometry& g, int elem_size) {
  NarrowPlan plan;
  NarrowParams& p = plan.p;
  if (g.Cin_g > 16 || g.Cout_g > 32 || g.SH > fwd::kMaxStride || g.SW > fwd::kMaxStride) return plan;
  if (g.groups >= 65536 || g.H >= (int64_t(1) << 30) || g.W >= (int64_t(1) << 30) ||
      g.Hout >= (int64_t(1) << 30) || g.Wout >= (int64_t(1) << 30) || g.KH * g.KW > 4096 ||
      g.Cin >= (int64_t(1) << 30) || g.Cout >= (int64_t(1) << 30))
    return plan;
  plan.mt = g.Cout_g <= 16 ? 1 : 2;
  plan.nt = g.Cin_g <= 8 ? 1 : 2;
  plan.slots = kAccPerLane / (plan.mt * plan.nt * 4);
  p.Cin = static_cast<int>(g.Cin);
  p.Cin_g = static_cast<int>(g.Cin_g);
  p.Cout = static_cast<int>(g.Cout);
  p.Cout_g = static_cast<int>(g.Cout_g);
  p.H = static_cast<int>(g.H);
  p.W = static_cast<int>(g.W);
  p.Hout = static_cast<int>(g.Hout);
  p.Wout = static_cast<int>(g.Wout);
  p.KW = static_cast<int>(g.KW);
  p.DH = static_cast<int>(g.DH);
  p.DW = static_cast<int>(g.DW);
  p.SH = static_cast<int>(g.SH);
  p.SW = static_cast<int>(g.SW);
  p.PH = static_cast<int>(g.PH);
  p.PW = static_cast<int>(g.PW);
  p.ntaps = static_cast<int>(g.KH * g.KW);
  if (int64_t(p.KW) * p.DW >= (int64_t(1) << 30) || g.KH * g.DH >= (int64_t(1) << 30)) return plan;

  // Phases with taps (slots), the j range their outputs cover, and the taps' input offsets.
  auto axis = [](int S, int D, int K, int P, int out, int* slot, int& nslots, int& jlo, int& jhi,
                 int& off_min, int& off_max) {
    for (int r = 0; r < S; ++r) slot[r] = -1;
    off_min = 1 << 30;
    off_max = -(1 << 30);
    for (int t = 0; t < K; ++t) {
      slot[tap_residue(t, D, S)] = 0;
      off_min = std::min(off_min, tap_offset(t, D, S));
      off_max = std::max(off_max, tap_offset(t, D, S));
    }
    nslots = 0;
    jlo = 1 << 30;
    jhi = -(1 << 30);
    for (int r = 0; r < S; ++r) {
      if (slot[r] < 0) continue;
      slot[r] = nslots++;
      const fwd::PhaseAxis a = fwd::phase_axis(r, S, P, D, K, out);
      if (a.count > 0) {
        jlo = std::min<int>(jlo, static_cast<int>(a.jlo));
        jhi = std::max<int>(jhi, static_cast<int>(a.jlo + a.count));
      }
    }
  };
  int jy_lo, jy_hi, jx_lo, jx_hi, offy_max, offx_max;
  axis(p.SH, p.DH, static_cast<int>(g.KH), p.PH, p.Hout, p.slot_y, p.nry, jy_lo, jy_hi, p.offy_min, offy_max);
  axis(p.SW, p.DW, p.KW, p.PW, p.Wout, p.slot_x, p.nrx, jx_lo, jx_hi, p.offx_min, offx_max);
  if (jy_hi <= jy_lo || jx_hi <= jx_lo) return plan;  // no output pixel receives a tap
  for (int r = 0, k = 0; r < p.SH; ++r)
    if (p.slot_y[r] >= 0) p.ry_of[k++] = r;
  for (int r = 0, k = 0; r < p.SW; ++r)
    if (p.slot_x[r] >= 0) p.rx_of[k++] = r;

  // Tile: up to 256 phase columns (long rows: the per-row work of the copies is paid once per
  // row; measured, kb1_75 bf16: 64 columns x 4 rows 0.39 ms), rows up to 256 pixels per phase,
  // then halved until a stage of grad_output rows fits 24 KB (two stages keep two blocks per
  // multiprocessor).
  const int kk = elem_size == 4 ? 8 : 16;
  p.TJX = static_cast<int>(std::min<int64_t>(256, round_up(jx_hi - jx_lo, kk)));
  p.TJY = std::max(1, std::min(256 / p.TJX, jy_hi - jy_lo));
  auto go_tile_bytes = [&] {
    return int64_t(p.Cout_g) * p.nry * p.TJY * p.TJX * p.SW * elem_size;
  };
  while (go_tile_bytes() > 24 * 1024 && p.TJY > 1) p.TJY = (p.TJY + 1) / 2;
  while (go_tile_bytes() > 24 * 1024 && p.TJX > kk) p.TJX = std::max(kk, p.TJX / 2 / kk * kk);  // whole k-steps
  p.jy0 = jy_lo;
  p.jx0 = jx_lo;
  p.tiles_y = (jy_hi - jy_lo + p.TJY - 1) / p.TJY;
  p.tiles_x = (jx_hi - jx_lo + p.TJX - 1) / p.TJX;
  p.tiles = g.N * p.tiles_y * p.tiles_x;

  // Shared memory: the input tile as MMA words, then two raw stages (grad_output rows of
  // phases with taps, input rows). Input channel pitch = 8 mod 32 words (B loads: 2-way bank
  // conflicts at most).
  p.XR = p.TJY + offy_max - p.offy_min;
  p.XC = p.TJX + offx_max - p.offx_min + 1;
  p.x_pitch = static_cast<int>(round_up(int64_t(p.XR) * p.XC, 32) + 8);
  p.raw_offset = static_cast<int>(round_up(int64_t(8 * plan.nt) * p.x_pitch * 4, 16));
  // The least padded staging of either layout, with the widest pieces (the NCHW minimum pitch
  // grows with the piece).
  for (const bool cl : {false, true}) {
    NarrowParams q = p;
    q.vec_go = q.vec_x = 16 / elem_size;
    const int64_t go_bytes = go_raw_bytes(q, elem_size, cl, cl ? 0 : min_go_pitch(q));
    if (staging_smem(q, go_bytes, stage_x_layout(q, elem_size, cl)) > kNarrowSmemMax) return plan;
  }

  // Splits: about two blocks per multiprocessor in all, at least 2 tiles per split.
  plan.tap_groups = ceil_div(p.ntaps, plan.slots);
  const int64_t others = plan.tap_groups * g.groups;
  const int64_t want = std::max<int64_t>(1, ceil_div(2 * int64_t(sm_count()), others));
  p.chunk = std::max<int64_t>(2, ceil_div(p.tiles, want));
  plan.splits = ceil_div(p.tiles, p.chunk);
  if (plan.splits >= (int64_t(1) << 31) || plan.tap_groups >= 65536) return plan;
  plan.ok = true;
  return plan;
}

// The staging of these operands (plan_narrow's tile): copy pieces, strides, raw row pitches
// and shared memory. The raw grad_output rows are padded (by whole pieces) to spread each A
// load over the most banks, among paddings whose shared memory still fits (the unpadded one
// always does: plan_narrow). Run once per launch: the padding search is some 30k integer
// operations.
void stage_operands(NarrowPlan& plan, int elem_size, OperandLayout go_l, OperandLayout x_l) {
  NarrowParams& p = plan.p;
  p.go_cl = go_l.cl;
  p.x_cl = x_l.cl;
  p.go_sn = go_l.sn;
  p.go_sc = go_l.sc;
  p.go_sh = go_l.sh;
  p.go_sw = go_l.sw;
  p.x_sn = x_l.sn;
  p.x_sc = x_l.sc;
  p.x_sh = x_l.sh;
  p.x_sw = x_l.sw;
  p.vec_go = go_l.cl ? piece_elems(elem_size, {p.Cout_g, go_l.sn, go_l.sh, go_l.sw}, go_l.align)
                     : piece_elems(elem_size, {go_l.sn, go_l.sc, go_l.sh}, go_l.align);
  p.vec_x = x_l.cl ? piece_elems(elem_size, {p.Cin_g, x_l.sn, x_l.sh, x_l.sw}, x_l.align)
                   : piece_elems(elem_size, {x_l.sn, x_l.sc, x_l.sh}, x_l.align);
  const int64_t raw_x_bytes = stage_x_layout(p, elem_size, x_l.cl);
  auto fits = [&](int pad_or_pitch) {
    return staging_smem(p, go_raw_bytes(p, elem_size, go_l.cl, pad_or_pitch), raw_x_bytes) <= kNarrowSmemMax;
  };
  // The A loads of one instruction: 8 channels (co_step apart) x 4 lanes (pixel pairs, px_step
  // apart). The padding (in pieces) of the raw layout that spreads them over the most banks.
  auto worst_conflict = [&](int64_t co_step, int64_t px_step) {
    int per_bank[32] = {0};
    int64_t words[32];
    int worst = 0;
    for (int l = 0; l < 32; ++l) {
      const int64_t e = (l / 4) * co_step + (l % 4) * px_step * (elem_size == 4 ? 1 : 2);
      words[l] = e * elem_size / 4;
      bool seen = false;  // same word: a broadcast, not a conflict
      for (int m = 0; m < l; ++m) seen = seen || words[m] == words[l];
      if (!seen) worst = std::max(worst, ++per_bank[words[l] % 32]);
    }
    return worst;
  };
  const int wt = p.TJX * p.SW;
  int best = 1 << 30;
  if (go_l.cl) {
    p.go_ppp = p.Cout_g / p.vec_go;
    for (int k = 0; k < 8; ++k) {
      const int cp = p.Cout_g + k * p.vec_go;
      if (k > 0 && !fits(k)) break;
      const int w = worst_conflict(1, int64_t(p.SW) * cp);
      if (w < best) {
        best = w;
        p.go_cp = cp;
      }
    }
    p.pitch_go_raw = static_cast<int>(round_up(int64_t(wt) * p.go_cp, 8));
    p.go_co_stride = 1;
    p.go_px_stride = p.go_cp;
  } else {
    const int min_pitch = min_go_pitch(p);
    for (int k = 0; k < 32; ++k) {
      const int pitch = min_pitch + k * p.vec_go;
      if (k > 0 && !fits(pitch)) break;
      const int w = worst_conflict(int64_t(p.nry) * p.TJY * pitch, p.SW);
      if (w < best) {
        best = w;
        p.pitch_go_raw = pitch;
      }
    }
    p.go_co_stride = p.nry * p.TJY * p.pitch_go_raw;
    p.go_px_stride = 1;
  }
  const int64_t raw_go_bytes =
      go_raw_bytes(p, elem_size, go_l.cl, go_l.cl ? (p.go_cp - p.Cout_g) / p.vec_go : p.pitch_go_raw);
  p.raw_x_offset = static_cast<int>(raw_go_bytes);
  p.raw_stage_bytes = static_cast<int>(raw_go_bytes + raw_x_bytes);
  p.smem_bytes = static_cast<int>(staging_smem(p, raw_go_bytes, raw_x_bytes));
}

template <typename T, int MT, int NT>
void launch(const at::Tensor& x, const at::Tensor& go, const NarrowPlan& plan, int64_t groups,
            const at::Tensor& ws) {
  auto kernel = grad_weight_narrow_kernel<T, MT, NT>;
  C10_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, plan.p.smem_bytes));
  const dim3 grid(static_cast<unsigned>(plan.splits), static_cast<unsigned>(plan.tap_groups),
                  static_cast<unsigned>(groups));
  kernel<<<grid, kNarrowThreads, plan.p.smem_bytes, at::cuda::getCurrentCUDAStream()>>>(
      x.const_data_ptr<T>(), go.const_data_ptr<T>(), ws.mutable_data_ptr<float>(), plan.p);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

template <typename T>
void launch_typed(const at::Tensor& x, const at::Tensor& go, const NarrowPlan& plan, int64_t groups,
                  const at::Tensor& ws) {
  if (plan.mt == 1 && plan.nt == 1) return launch<T, 1, 1>(x, go, plan, groups, ws);
  if (plan.mt == 1) return launch<T, 1, 2>(x, go, plan, groups, ws);
  if (plan.nt == 1) return launch<T, 2, 1>(x, go, plan, groups, ws);
  return launch<T, 2, 2>(x, go, plan, groups, ws);
}

int elem_size_of(at::ScalarType dtype) { return dtype == at::kFloat ? 4 : 2; }

}  // namespace

bool grad_weight_narrow_supported(const Geometry& g, at::ScalarType dtype) {
  if (dtype != at::kFloat && dtype != at::kHalf && dtype != at::kBFloat16) return false;
  return plan_narrow(g, elem_size_of(dtype)).ok;
}

int64_t grad_weight_narrow_splits(const Geometry& g, at::ScalarType dtype) {
  return plan_narrow(g, elem_size_of(dtype)).splits;
}

void grad_weight_narrow(const at::Tensor& x, const at::Tensor& go, const Geometry& g,
                        int64_t splits, const at::Tensor& ws) {
  auto readable = [](const at::Tensor& t) {
    return t.dim() == 4 && (t.is_contiguous() || t.is_contiguous(at::MemoryFormat::ChannelsLast));
  };
  TORCH_CHECK(readable(x) && readable(go), "convt: grad_weight_narrow reads NCHW or channels_last operands");
  NarrowPlan plan = plan_narrow(g, elem_size_of(x.scalar_type()));
  TORCH_CHECK(plan.ok && plan.splits == splits, "convt: grad_weight_narrow plan mismatch");
  stage_operands(plan, elem_size_of(x.scalar_type()), layout_of(go), layout_of(x));
  switch (x.scalar_type()) {
    case at::kFloat:
      return launch_typed<float>(x, go, plan, g.groups, ws);
    case at::kHalf:
      return launch_typed<c10::Half>(x, go, plan, g.groups, ws);
    case at::kBFloat16:
      return launch_typed<c10::BFloat16>(x, go, plan, g.groups, ws);
    default:
      TORCH_CHECK(false, "convt: grad_weight_narrow: unsupported dtype");
  }
}

}  // namespace bwd
}  // namespace convt
