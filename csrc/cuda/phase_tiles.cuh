// Phase decomposition shared by the tensor-core forward kernels (forward_igemm.cu,
// forward_wgmma.cu): per-axis description of one output phase, computed identically on
// host and device, and the largest extents over all phases (tile planning).
//
// Along one axis, the outputs o with (o + padding) mod stride == r form phase r:
// o = j*stride + r - padding. Its taps are t_m = t0 + m*step (step = stride/gcd(stride,
// dilation)), and tap t_m reads input
//     i = j + base - m*dd,   base = (r - t0*dilation)/stride,  dd = dilation/gcd.
// So each (phase_y, phase_x) is a dense stride-1 correlation over the input.
#pragma once

#include <algorithm>
#include <cstdint>

#include "../geometry.h"

namespace convt {
namespace fwd {

constexpr int kMaxStride = 32;  // phase tables; larger strides take the direct kernel

struct PhaseAxis {
  int64_t t0;     // first tap, -1 if the phase gets none
  int64_t ntaps;  // number of taps
  int64_t base;   // input offset of tap 0: i = j + base - m*dd
  int64_t jlo;    // first phase index j with 0 <= o
  int64_t count;  // number of phase outputs (may be 0)
};

CONVT_HOST_DEVICE PhaseAxis phase_axis(int64_t r, int64_t stride, int64_t padding,
                                       int64_t dilation, int64_t kernel, int64_t out) {
  PhaseAxis a;
  const AxisPhase p = axis_phase(r, stride, dilation, kernel);
  a.t0 = p.first_tap;
  a.ntaps = p.first_tap < 0 ? 0 : (kernel - p.first_tap + p.tap_step - 1) / p.tap_step;
  a.base = p.first_tap < 0 ? 0 : (r - p.first_tap * dilation) / stride;  // exact
  // o = j*stride + r - padding in [0, out)
  a.jlo = -floor_div(r - padding, stride);  // ceil((padding - r)/stride)
  const int64_t jhi = floor_div(out - 1 - r + padding, stride);
  a.count = jhi >= a.jlo ? jhi - a.jlo + 1 : 0;
  return a;
}

// Phase of one residue, precomputed on the host (phase_axis) in 32 bits.
struct PhaseAxis32 {
  int ntaps, base, jlo, count;
};

// Largest phase image (cy x cx), most taps (ty x tx) and the input halo they need.
struct PhaseExtents {
  int64_t cy = 0, cx = 0, ty = 0, tx = 0, halo_y = 0, halo_x = 0;
};

inline PhaseExtents phase_extents(const Geometry& g) {
  PhaseExtents e;
  for (int64_t r = 0; r < g.SH; ++r) {
    const PhaseAxis a = phase_axis(r, g.SH, g.PH, g.DH, g.KH, g.Hout);
    e.cy = std::max(e.cy, a.count);
    e.ty = std::max(e.ty, a.ntaps);
  }
  for (int64_t r = 0; r < g.SW; ++r) {
    const PhaseAxis a = phase_axis(r, g.SW, g.PW, g.DW, g.KW, g.Wout);
    e.cx = std::max(e.cx, a.count);
    e.tx = std::max(e.tx, a.ntaps);
  }
  e.halo_y = std::max<int64_t>(0, e.ty - 1) * (g.DH / gcd64(g.SH, g.DH));
  e.halo_x = std::max<int64_t>(0, e.tx - 1) * (g.DW / gcd64(g.SW, g.DW));
  return e;
}

// Host tables of every phase (32-bit; the planners reject sizes that do not fit).
inline void fill_phase_tables(const Geometry& g, PhaseAxis32* ys, PhaseAxis32* xs) {
  for (int64_t r = 0; r < g.SH; ++r) {
    const PhaseAxis a = phase_axis(r, g.SH, g.PH, g.DH, g.KH, g.Hout);
    ys[r] = {static_cast<int>(a.ntaps), static_cast<int>(a.base), static_cast<int>(a.jlo),
             static_cast<int>(a.count)};
  }
  for (int64_t r = 0; r < g.SW; ++r) {
    const PhaseAxis a = phase_axis(r, g.SW, g.PW, g.DW, g.KW, g.Wout);
    xs[r] = {static_cast<int>(a.ntaps), static_cast<int>(a.base), static_cast<int>(a.jlo),
             static_cast<int>(a.count)};
  }
}

// Host: the phase fields every phase-tiled plan shares (strides, groups, dilation steps in
// phase units, phase tables, packed tap grid). False when the problem is outside the 32-bit
// tables or has more than `max_taps` taps per phase.
template <typename Params>
bool plan_phases(const Geometry& g, const PhaseExtents& e, int max_taps, Params& p) {
  if (e.cy == 0 || e.cx == 0) return false;
  if (g.SH > kMaxStride || g.SW > kMaxStride || g.groups >= (int64_t(1) << 30)) return false;
  if (g.H >= (int64_t(1) << 30) || g.W >= (int64_t(1) << 30) || g.Hout >= (int64_t(1) << 30) ||
      g.Wout >= (int64_t(1) << 30))
    return false;
  p.SH = static_cast<int>(g.SH);
  p.SW = static_cast<int>(g.SW);
  p.groups = static_cast<int>(g.groups);
  p.ddy = static_cast<int>(g.DH / gcd64(g.SH, g.DH));
  p.ddx = static_cast<int>(g.DW / gcd64(g.SW, g.DW));
  fill_phase_tables(g, p.phase_y, p.phase_x);
  p.taps_y = static_cast<int>(std::max<int64_t>(1, e.ty));
  p.taps_x = static_cast<int>(std::max<int64_t>(1, e.tx));
  return p.taps_y * p.taps_x <= max_taps;
}

// The grid of the phase-tiled kernels: x = tile * (SH * SW) + phase, y = output-channel
// tile, z = img_block * groups + grp. The phases are the fastest-varying digit on purpose:
// the SH * SW blocks that write the same output rows (each phase every stride-th pixel)
// then run at the same time, so their partial-sector stores meet in L2 and reach DRAM as
// whole sectors. With phases in z (the slowest digit), a phase's partial sectors of a whole
// image were evicted before the other phases wrote the rest of them.
struct TileGrid {
  int64_t x, z;
  bool fits;  // within CUDA's grid limits
};

inline TileGrid tile_grid(const Geometry& g, int64_t tiles, int64_t imgs_per_block) {
  TileGrid t;
  t.x = tiles * g.SH * g.SW;
  t.z = (g.N + imgs_per_block - 1) / imgs_per_block * g.groups;
  t.fits = t.x < (int64_t(1) << 31) && t.z < 65536;
  return t;
}

#ifdef __CUDACC__
// Which tile a block computes (the inverse of tile_grid). 32-bit index math (64-bit
// division is a long software routine on the GPU). `Params`: the kernel's parameter
// struct (phase tables, tile shape). A tile past its phase's extent (j0y or j0x beyond the
// phase: the grid is sized for the largest phase) is empty, and its block returns at once.
struct BlockTile {
  int rx, ry, grp, nimg;         // phase residues, group, images in this block
  int64_t nimg0;                 // first image
  int64_t j0y, j0x;              // first phase row / column of the tile
  PhaseAxis32 ay, ax;
  bool empty;                    // past the phase's extent
  int rows_left, cols_left;      // tile rows / columns inside the phase (if not empty)
};

// Tile `tile` of phase `ph` (ry * SW + rx) in grid z step `z`, the digits of tile_grid.
template <typename Params>
__device__ __forceinline__ BlockTile decode_tile(const Params& p, int tile, int ph, int z) {
  BlockTile t;
  t.rx = ph % p.SW;
  t.ry = ph / p.SW;
  t.grp = z % p.groups;
  t.nimg0 = static_cast<int64_t>(z / p.groups) * p.IMGS;
  t.nimg = static_cast<int>(p.g.N - t.nimg0 < p.IMGS ? p.g.N - t.nimg0 : p.IMGS);
  t.ay = p.phase_y[t.ry];
  t.ax = p.phase_x[t.rx];
  t.j0y = t.ay.jlo + static_cast<int64_t>(tile / p.tiles_x) * p.TY;
  t.j0x = t.ax.jlo + static_cast<int64_t>(tile % p.tiles_x) * p.TX;
  const int64_t rows = t.ay.jlo + t.ay.count - t.j0y, cols = t.ax.jlo + t.ax.count - t.j0x;
  t.empty = rows <= 0 || cols <= 0;
  t.rows_left = static_cast<int>(rows < p.TY ? rows : p.TY);
  t.cols_left = static_cast<int>(cols < p.TX ? cols : p.TX);
  return t;
}

template <typename Params>
__device__ __forceinline__ BlockTile decode_block_tile(const Params& p) {
  const int nph = p.SH * p.SW;
  return decode_tile(p, static_cast<int>(blockIdx.x / nph), static_cast<int>(blockIdx.x % nph),
                     static_cast<int>(blockIdx.z));
}
#endif

}  // namespace fwd
}  // namespace convt
