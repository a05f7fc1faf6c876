// Warp-specialized wgmma forward for channels_last input (sm_90a): bfloat16 / float16, and
// float in TF32; stride 1 with any dilation, or stride up to 4 by phases (dilation 1).
//
// Why a second wgmma kernel: at stride 1 on channels_last input (kb1_57/65/69, kb2_10, and
// grad_input at stride 1, which runs this forward a second time per training step) the
// general kernel (forward_wgmma.cu) reached 314 TFLOP/s on bf16 kb1_57 against cuDNN's 460.
// There every thread stages, issues the MMAs and runs the epilogue, each K chunk ends in a
// wgmma wait and a block barrier, and no MMAs run during a tile's epilogue (ncu run DC:
// barrier and wait stalls 20% each). At kb1_57's K = 9 taps x 64 channels a tile has only
// four chunks, so those costs weigh about as much as the MMAs.
//
// Structure (the warp-specialized "ping-pong" layout of CUTLASS's Hopper kernels):
//  - warpgroup 0 is the producer: one thread fills a ring of stages, each one K chunk (32
//    bytes of input channels: 16 bf16 / fp16, 8 float) of one tile: the input tile by one
//    tensor-map box (32-byte rows, 32-byte swizzle) and, unless the weights are resident,
//    the chunk's packed weights by one bulk copy, all completing on the stage's `full`
//    mbarrier. It waits on the stage's `empty` mbarrier before refilling it. A block keeps one
//    64-channel tile (and one phase); where all its chunks' weights fit and still leave
//    min(4, the streamed count) stages (WsParams::resident), they are loaded once, at the start.
//  - warpgroups 1 and 2 are consumers, each owning whole tiles, alternately (the block's
//    tiles 0, 2, 4, ... and 1, 3, 5, ...): per chunk, wait `full`, issue one m64n256k16 MMA
//    per tap (m64n256k8 in TF32), and release the previous chunk's stage once its MMAs are
//    done. While one consumer runs its epilogue, the other's MMAs keep the tensor cores busy.
//    No block barrier after the start; each consumer's epilogue syncs its own 128 threads
//    (named barriers 1, 2).
//  - setmaxnreg moves registers from the producer (40) to the consumers (232): 128
//    accumulators per consumer thread.
//
// GEMM per tile: D[co][slot] = sum over (tap, ci) W[tap][co][ci] * X[ci][slot + off(tap)],
// 64 output channels (M, operand A = weights) x 256 slots (N, operand B = the input tile),
// as in forward_wgmma.cu (see its header for the slot layout): a tile is TY output rows x TX
// columns of one image, staged as rows = TY + (KH-1)*DH input rows of pitch P = TX + (KW-1)*DW
// slots, [slot][32 B] with the 32-byte swizzle (B K-major: a slot's 32 bytes are one k16 / k8
// step); tap (ky, kx) reads the same tile moved by off = (KH-1-ky)*DH*P + (KW-1-kx)*DW slots.
// One 32-byte row per slot, not two boxes of 16-byte rows: a box of 16-byte rows makes the copy
// engine move 16 bytes per request (grad_weight_ws went 1.417 -> 1.020 ms on kb1_57 when its
// boxes went from 16- to 128-byte rows, run LD). Slots past TX in a row, or past TY rows, are
// computed and discarded (the planner minimises them). The boxes zero-fill outside the
// image, so padding and the tile's halo need no bounds checks.
//
// Phases (stride S > 1, dilation 1): output row oy gets taps ky = r, r + S, ... with
// r = (oy + PH) mod S, from input rows (oy + PH - ky) / S. Writing oy = S m + r - PH, tap
// ky = r + t S reads input row m - t: per phase (ry, rx) a stride-1 convolution in m with
// ceil((K - r) / S) taps per dimension. A block keeps one phase (its own tap table and
// weights); tiles live in m space, staged with the halo of the phase with most taps, and the
// epilogue stores every S-th output row / column. Output rows of one phase, so each pixel's
// channels are still one contiguous run. (NCHW output at SW == 2: two phases per block, below.)
//
// Epilogue: accumulators (+ bias) -> bf16/fp16 -> the consumer's staging tile [slot][64 + 8
// channels] by stmatrix.trans (a fragment's 8 x 8 block stored transposed: rows become pixels,
// 16 bytes of 8 channels each; the 144-byte pitch keeps the 8 rows on distinct banks) -> 16-byte
// stores of whole pixels (8 lanes per 128-byte pixel) into the channels_last output. float
// uses the same staging tile for half a tile at a time ([128 slots][64 + 4 floats]: scalar
// shared stores, then 16-byte pixel stores), where the staging tiles leave as many stages as
// without them (up to 4); else it stores from the registers, in 32-byte runs of 8 channels.
//
// float (TF32): the weights are rounded to TF32 when packed; the input reaches the MMA
// unrounded (truncated by it), as in forward_wgmma.cu's tensor-map path.
//
// NCHW output (kNchwOut; forward.cu's route for NCHW tensors, whose input alone is copied to
// channels_last): the accumulators (+ bias) as float, half a tile at a time, into the staging tile as
// [64 channels][128 slots + 8] (8-byte shared stores, conflict-free: rows 136 words apart start 8
// banks on), then per channel a warp stores 32 consecutive slots, one element per lane: 32
// consecutive outputs of a row at stride 1, every S-th at stride S. Each lane decodes its slots'
// output offsets once per half and reuses them for the 16 channels of its warp. 16-bit at SW ==
// 1 where the widths allow (WsParams::out_vec, plan_ws): runs of up to 8 outputs (16 bytes) per
// store instead, as paired tiles do (run TC: bf16 kb1_57's forward 2.40 -> 2.06 ms). The
// channels_last output's copy back to NCHW (2 x the output's bytes, 4x the input's at stride
// 2) is what made the route lose in float32 (run QH: kb2_2 2.64 ms NCHW kernel, 3.26 route).
// At stride > 1 each warp store fills every SW-th element of its sectors. With one phase per
// block another block writes the rest at another time: on outputs larger than L2 that was 1.5-5x
// slower than the copy back (run QP: kb2_2 float32 6.62 ms). Hence paired phases.
//
// Paired phases (pair_x: NCHW output beyond L2 at SW == 2, ws_pairs_mode): a block keeps a phase
// row ry, and each item (tile) holds both its column phases: kPairSlots (128) slots of each, two
// m64n128 products (acc for rx = 0, acc1 for rx = 1) over one staged input tile whose columns
// cover both phases' (pitch TX + halo + |mlo_x[1] - mlo_x[0]|; a tap of phase rx reads it moved by
// mlo_x[rx] - mx_lo more columns). The two phases' columns interleave into the same 2 TX output
// columns, so the epilogue merges them in the staging tile (a thread's slots s, s + 1 of both
// phases: four consecutive outputs, one 16-byte shared store) and stores runs of up to 16 bytes
// of a row: whole sectors, as at stride 1. The first form (run SB) had the consumers take one
// phase each (the two halves of a sector one item apart in the same block): kb2_2 float32 4.54
// ms against 1.32 with channels_last output; half-written sectors cost even when they meet soon
// after. With one element per lane (run SC) the store instructions bounded the kernel, bf16 as
// slow as float32; 16-byte runs (SE) halved bf16 kb2_2 (1148 -> 690 us).
//
// NCHW input (WsParams::nchw_in, forward.cu's route for NCHW tensors): read in place instead of copied
// to channels_last first. That copy was a whole extra pass over the input: 400 us of kb1_71's 972 us
// float32 NCHW forward (537 MB of input), 1.6 ms on kb1_57's 2.1 GB. The MMAs still need the tile
// K-major ([slot][32 B]: TF32 has no transposed operand, and a tap moves the tile by whole slots), so
// thread 0 loads each chunk's box of NCHW rows ([chunk channels][rows][raw_pitch], from a 16-byte column) into a
// raw buffer of its own, and the producer warpgroup's other three warps, idle otherwise, transpose it
// into the stage with the 32-byte swizzle (transpose_nchw_chunks): per chunk ~20 shared loads and 2
// shared stores per thread, against the ~1400 cycles of one 9-tap chunk's MMAs. The raw boxes have a
// ring of their own (WsParams::raw_stages deep). Where a chunk's MMAs are long (kRawRingMinTaps taps
// or more) the stages run full and thread 0 loads a box just before it waits for that chunk's
// stage: two boxes cover that, and the room of the others goes to stages (a raw box per stage cost
// kb1_69 float32 a stage: ~1900 -> ~2090 us, run ZE). Where they are short the loads must run
// ahead by the whole ring: a box per stage (two boxes cost kb2_2 float32, 4 taps, 13%: AA5).
//
// Input: a channels_last tensor through one tensor map, or (launch_wgmma_ws_residues,
// grad_input at stride > 1) up to four residue subgrids of grad_output, one map each, whose
// channels follow one another, each padded to whole chunks (WsParams::res_*): a chunk loads
// from its residue's map, the pad past the map's channels reading zeros (zero weights too).
//
// Deterministic: a fixed reduction order (chunks, then taps), no atomics.
#include <ATen/ATen.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <type_traits>
#include <unordered_map>

#include "bulk_copy.cuh"
#include "env_knob.h"
#include "forward_launch.cuh"
#include "mma.cuh"
#include "pack.cuh"
#include "small_div.h"
#include "tensor_map.cuh"
#include "tf32_flag.h"
#include "wgmma.cuh"
#include "ws_consumer.cuh"
#include "../host_trace.h"

namespace convt {
namespace fwd {
namespace {

constexpr int kSlots = 256;         // N per consumer tile: one m64n256 MMA per tap
constexpr int kWideExtra = 32;      // wide tiles: one more m64n32 MMA per tap, slots 256 .. 287
// Tile kinds, one kernel instantiation each (a width chosen per MMA at run time made ptxas
// serialize every wgmma, C7520): every tile 256 MMA columns; short tiles (the last tile row's
// MMAs 128 / 64 / 32 columns wide); wide tiles (every tile 256 + kWideExtra columns). See plan_ws.
constexpr int kTilesFull = 0, kTilesShort = 1, kTilesWide = 2, kTilesPaired = 3;
constexpr int kPairSlots = 128;     // paired phases: MMA columns per phase (two m64n128 products)
static_assert(kSlots + kWideExtra <= kSmallDivLimit, "every slot an epilogue decodes is below small_div's limit");
constexpr int kPairPitch = 144;     // paired epilogue: [64 channels][128 merged outputs + 16] floats
constexpr int kNchwStoreCost = 16384;  // NCHW output: the planner's cost of a tile's element-wise epilogue (plan_ws)
constexpr int kCoTile = 64;         // M: output channels per tile
constexpr int kMaxStages = 6;       // ring depth (as many as shared memory allows, >= 2)
constexpr int kWsMaxTaps = 64;      // taps (tap offset table in shared memory)
constexpr int kWsMaxStride = 4;     // stride per dimension (phase tables in WsParams)
constexpr int kWsMaxResidues = kWsMaxResidueMaps;  // residue subgrids read in place (forward_launch.cuh)
constexpr int kWsMaxPhases = kWsMaxStride * kWsMaxStride;

// The input's tensor maps: one for a plain channels_last input; for grad_input's residue planes
// read in place (launch_wgmma_ws_residues) one per residue subgrid of grad_output.
struct WsMaps {
  CUtensorMap m[kWsMaxResidues];
};
constexpr int kStagePitch = 72;     // epilogue staging row: 64 channels + 8 (16-bit elements)
constexpr int kStagingBytes = kSlots * kStagePitch * 2;  // per consumer (wide tiles: WsParams::staging_bytes)
constexpr int kStagePitchF32 = 68;  // float epilogue: half a tile, [128 slots][64 + 4 floats]
static_assert(kSlots / 2 * kStagePitchF32 * 4 <= kStagingBytes, "a float half tile fits the staging tile");
constexpr int kNchwPitch = kSlots / 2 + 8;  // NCHW epilogue: half a tile, [64 channels][128 + 8 slots] floats
static_assert(kCoTile * kNchwPitch * 4 <= kStagingBytes, "an NCHW half tile fits the staging tile");
// float NCHW epilogue staged a quarter tile at a time (WsParams::nchw_quarters): [64 channels][64 + 8 slots]
// floats, half the room (the rows 72 words apart start 8 banks on, as kNchwPitch's).
constexpr int kNchwQuarterPitch = kSlots / 4 + 8;
constexpr int kNchwQuarterBytes = kCoTile * kNchwQuarterPitch * 4;
// 16-bit channels_last epilogue staged half a tile at a time (WsParams::half_staged): [128 slots][64 + 8].
constexpr int kHalfStagingBytes = kSlots / 2 * kStagePitch * 2;
static_assert(kWideExtra <= kSlots / 2, "a wide tile's last slots fit a half staging tile");
static_assert(kCoTile * kPairPitch * 4 <= kStagingBytes, "a paired half tile fits the staging tile");
constexpr int kSmemLimit = 225 * 1024;  // dynamic, leaving room for the static barriers and tap table
static_assert(kSmemLimit + 8 * 1024 < (1 << 18), "descriptor start addresses must fit 14 bits of 16 bytes (wgmma::desc_lo)");
constexpr int kSlotBytes = 32;      // one slot of the input tile: one K chunk, a 32-byte swizzle row
constexpr int kSwizzleRepeat = 256; // the 32-byte swizzle's pattern: 8 rows (smem_bytes adds it for alignment)
constexpr int kThreads = 384;       // producer warpgroup + two consumer warpgroups
// NCHW input (WsParams::nchw_in): warps 1-3 of the producer warpgroup transpose each raw box into
// its stage, meeting at named barrier 3 (the consumers' epilogues use 1 and 2).
constexpr int kTransposers = 96;
constexpr int kRawRingMinTaps = 9;  // NCHW input: two raw boxes from this many taps per chunk (see "NCHW input")
constexpr int kTransposeBarrier = 3;
constexpr int kTileCostTaps = 9;    // a tile's loads and stores, in 256-column MMAs of one tap (launch_typed)

struct WsParams {
  int N, Cin, Cout, H, W, OH, OW;
  int KH, KW, DH, DW, ntaps;
  // Stride: above 1 the output splits into SH x SW phases (see "Phases" above); a block keeps
  // one phase, whose taps are tap_of[ph_tap0[ph] .. ph_tap0[ph + 1]) (kernel taps ky * KW + kx)
  // and whose output rows are SH * m + ry - PH for m >= mlo_y[ry] (columns likewise).
  int SH, SW, PH, PW, nphases;
  int ph_tap0[kWsMaxPhases + 1];
  int tap_of[kWsMaxTaps];
  // Paired column phases (NCHW output at SW == 2, see "Paired phases" above): a block keeps
  // phase row ry, and each item holds both its column phases. Else a block keeps one phase. A
  // block's phases are its group: groups are the phases, or (pair_x) the phase rows; group q's
  // taps are tap_of[grp_tap0[q] .. grp_tap0[q + 1]), its phases' in phase order.
  bool pair_x;
  int ngroups;
  int grp_tap0[kWsMaxPhases + 1];
  int mx_lo;                // paired: min over rx of mlo_x[rx] (the staged tile's first phase column)
  // Blocks per channel tile: group q's are grp_block0[q] .. grp_block0[q + 1] - 1, in
  // proportion to its work (launch_typed), so that groups of unequal work end together.
  int grp_block0[kWsMaxPhases + 1];
  int mlo_y[kWsMaxStride], mlo_x[kWsMaxStride];
  int halo_y, halo_x;       // staged rows / columns beyond the tile: (taps per phase - 1) * dilation
  // Residue planes read in place (res_n > 0): K channel ch is channel ch % res_ch_pad of
  // residue ch / res_ch_pad, whose tensor map is maps.m[residue] (channels res_ch ..
  // res_ch_pad - 1 of a residue: zeros, the chunk's pad); plane pixel (y, x) is that map's
  // (y + res_dy, x + res_dx). res_n == 0: one map, the input itself (K channels = Cin).
  int res_n, res_ch, res_ch_pad;
  int res_dy[kWsMaxResidues], res_dx[kWsMaxResidues];
  int TX, TY, P, rows;      // tile: TY x TX phase outputs; staged rows x pitch P input slots
  uint32_t P_div;           // small_div_multiplier(P): the epilogues' slot -> (row, column) decode
  // channels_last output: elements from one tile row to the next (SH OW Cout) and from one tile column to
  // the next (SW Cout); a slot's offset from the tile's first output fits 32 bits (plan_ws checks).
  int cl_row_step, cl_col_step;
  int tiles_x, tiles_y;     // per image and phase
  int co_tiles, nchunks;    // Cout / 64; K chunks of 32 bytes (Cin / 16 bf16, Cin / 8 float)
  int ptiles;               // pixel tiles per phase: N * tiles_y * tiles_x
  // Resident weights (plan_ws): the block's channel tile's weights, every chunk, loaded once
  // into shared memory at w_area (offset 0) instead of with each stage.
  bool resident;
  bool f32_staged;          // float: the epilogue through the staging tile (else from registers)
  bool nchw_out;            // the output is NCHW (kNchwOut: the staging tile in every dtype)
  // float NCHW output, one phase per block: the epilogue stages a quarter tile (64 slots) at a time
  // instead of half, in half the staging room, where that leaves more pipeline stages (plan_ws).
  bool nchw_quarters;
  // 16-bit channels_last output: the epilogue stages half a tile (128 slots) at a time instead of
  // the whole, in half the staging room, where that leaves more pipeline stages (plan_ws).
  bool half_staged;
  int tile_bytes;           // the input tile, [slot][32 B] (a multiple of the swizzle's 256 bytes)
  int w_bytes;              // one chunk's weights of the group with most taps: taps x 2 quanta x 64 channels x 16 B
  int stage_bytes, stages, stages_offset, staging_offset, smem_bytes;
  // MMA columns of the tiles in the last tile row: 256, or (short tiles, default;
  // off under CONVT_FWD_WS_SHORT=0) 128 / 64 / 32 where that row's valid slots end before them.
  int short_n;
  // NCHW output, paired or at SW == 1: outputs per global store in the epilogue (16 bytes, 8 or
  // 4 bytes, or 1 element), where every tile row's run of outputs starts and ends on such a
  // chunk (plan_ws; 1 elsewhere).
  int out_vec;
  // MMA columns of every tile: kSlots, or kSlots + kWideExtra (wide tiles; never with short ones).
  int tile_slots;
  int staging_bytes;        // one consumer's epilogue staging tile: tile_slots x kStagePitch 16-bit elements
  // NCHW input read in place (see "NCHW input" above): a ring of raw_stages raw boxes at raw_offset,
  // raw_bytes apart, each [chunk channels][rows][raw_pitch] elements (raw_pitch: P + 16 / elem - 1 rounded up
  // to 16 bytes, P columns from any 16-byte start: nchw_box_x).
  bool nchw_in;
  int raw_pitch, raw_bytes, raw_offset, raw_stages;
};

// weights [Cin][Cout][KH][KW] (any strides) -> [co_tile][group][chunk][tap of the group][quantum][co 64][16 B]:
// one chunk of one group (a phase, or paired phases) of one channel tile is one contiguous block
// (one bulk copy), and a tap's A operand is [quantum][co][16 B] (K-major, no swizzle). At stride
// 1 the one phase holds every tap, ky * KW + kx.
template <typename T>
__global__ void pack_weights_ws(const T* __restrict__ w, T* __restrict__ wp, const WsParams p, WeightStrides ws,
                                int64_t total) {
  constexpr int EPQ = 16 / sizeof(T);  // elements per 16-byte quantum
  for (int64_t idx = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; idx < total;
       idx += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const OperandDigits d = operand_digits<EPQ, kCoTile, 2>(idx);
    const int e = d.e, co_l = d.co_l, q = d.q;
    const int64_t r = d.rest;
    // r = (co_tile, group block): group grp spans nchunks x (its taps) of these units.
    const int64_t per_tile = static_cast<int64_t>(p.nchunks) * p.ntaps;
    const int64_t cot = r / per_tile;
    const int u = static_cast<int>(r % per_tile);
    int grp = 0;
    while (u >= p.nchunks * p.grp_tap0[grp + 1]) ++grp;
    const int g_taps = p.grp_tap0[grp + 1] - p.grp_tap0[grp];
    const int local = u - p.nchunks * p.grp_tap0[grp];
    const int64_t chunk = local / g_taps;
    const int tap = p.tap_of[p.grp_tap0[grp] + local % g_taps];
    int64_t ci = (chunk * 2 + q) * EPQ + e;  // K channel
    bool in = true;
    if (p.res_n > 0) {  // residue ci / res_ch_pad; its pad channels multiply as zeros
      const int64_t r = ci / p.res_ch_pad, ch = ci - r * p.res_ch_pad;
      in = ch < p.res_ch;
      ci = r * p.res_ch + ch;
    }
    const int64_t co = cot * kCoTile + co_l;
    // Channels past Cout (a partial last tile) multiply as zeros; the epilogue skips them.
    const int ky = tap / p.KW, kx = tap - ky * p.KW;
    T v = in && co < p.Cout ? w[ci * ws.ci + co * ws.co + ky * ws.ky + kx * ws.kx] : T(0);
    // float: rounded to TF32 here; the input reaches the MMA unrounded (truncated by it), as
    // in forward_wgmma.cu's tensor-map path.
    if constexpr (std::is_same_v<T, float>) v = __uint_as_float(mma::to_tf32(v));
    wp[idx] = v;
  }
}

// A block keeps one channel tile (blockIdx.x % co_tiles) and one phase group (by grp_block0,
// from blockIdx.x / co_tiles), so that resident weights and the tap table serve all its tiles;
// its pixel tiles are every (the group's block count)-th. Neighbouring blocks take the channel
// tiles of one pixel tile (its input shared in L2).
struct BlockRole {
  int co_tile, ry;          // channel tile; phase row
  int rx;                   // column phase (one phase per block; paired: 0, both phases)
  int gtap0, gtaps;         // the group's taps: tap_of[gtap0 .. gtap0 + gtaps)
  int taps0;                // paired: the taps of phase rx = 0 (the group's first ones)
  int pt0, pt_step;         // first pixel tile, step
};
__device__ __forceinline__ BlockRole block_role(const WsParams& p) {
  BlockRole b;
  b.co_tile = blockIdx.x % p.co_tiles;
  const int q = blockIdx.x / p.co_tiles;
  int grp = 0;
  while (q >= p.grp_block0[grp + 1]) ++grp;
  const int ph0 = p.pair_x ? grp * p.SW : grp;
  b.ry = ph0 / p.SW;
  b.rx = ph0 - b.ry * p.SW;
  b.gtap0 = p.grp_tap0[grp];
  b.gtaps = p.grp_tap0[grp + 1] - b.gtap0;
  b.taps0 = p.ph_tap0[ph0 + 1] - p.ph_tap0[ph0];
  b.pt0 = q - p.grp_block0[grp];
  b.pt_step = p.grp_block0[grp + 1] - p.grp_block0[grp];
  return b;
}

// A pixel tile in phase-output coordinates m: output row SH * m + ry - PH, column SW * m + rx -
// PW (at stride 1, m = output row + PH). mx0: the block's phase's first column, or (paired) the
// staged tile's, mx_lo + the tile's; phase rx's first is then mlo_x[rx] - mx_lo columns on, and
// the two phases' columns interleave over the same SW * TX output columns (phase rx's first one
// is SW * mlo_x[rx] + rx - PW, a residue below SW, past the output tile's first).
struct ItemTile {
  int n, my0, mx0;
};
__device__ __forceinline__ ItemTile item_tile(const WsParams& p, const BlockRole& b, int pt) {
  ItemTile t;
  int r = pt;
  const int tx = r % p.tiles_x;
  r /= p.tiles_x;
  const int ty = r % p.tiles_y;
  t.n = r / p.tiles_y;
  t.my0 = p.mlo_y[b.ry] + ty * p.TY;
  t.mx0 = (p.pair_x ? p.mx_lo : p.mlo_x[b.rx]) + tx * p.TX;
  return t;
}

// channels_last output: the element offset of a tile's first output (oy0, ox0) of image t.n, channel 0.
// The epilogues store slot (ty, tx) a 32-bit (ty cl_row_step + tx cl_col_step) further on.
__device__ __forceinline__ int64_t cl_tile_origin(const WsParams& p, const ItemTile& t, int oy0, int ox0) {
  return ((static_cast<int64_t>(t.n) * p.OH + oy0) * p.OW + ox0) * p.Cout;
}

// NCHW input: a tensor-map box's first element along its rows must lie on a 16-byte boundary (a box
// starting anywhere else faulted with an illegal instruction, H100 run ZH), so the raw box of a tile
// whose first staged column is x starts at nchw_box_x(x) <= x, and its columns from x - nchw_box_x(x)
// (below 16 / sizeof(T)) are the tile's (raw_pitch covers P of them from any such start).
template <typename T>
__host__ __device__ __forceinline__ int nchw_box_x(int x) {
  constexpr int A = 16 / static_cast<int>(sizeof(T));
  return x - (((x % A) + A) % A);
}

#ifdef CONVT_SM90A_DEVICE
// NCHW input (p.nchw_in), warps 1-3 of the producer warpgroup (tt = 0 .. kTransposers - 1): per chunk of
// the block's tiles, in the producer's order, the raw box [CH channels][rows][raw_pitch] (as the tensor
// map lays an NCHW box down) into the stage's input tile [slot][CH channels] with the 32-byte swizzle
// that the consumers' B descriptors read (a slot's 16-byte halves swap where bit 2 of the slot is set:
// bit 4 ^= bit 7 of the byte offset, from a 256-byte aligned tile). Then raw_empty (the box may be
// refilled) and the stage's second `full` arrival (the first is the weights' expect_tx, thread 0).
// Order: every transposer writes, fences its writes for the async proxy (the MMAs read the tile
// through it), and meets the others at kTransposeBarrier before thread tt == 0 arrives.
template <typename T>
__device__ __forceinline__ void transpose_nchw_chunks(const WsParams& p, const BlockRole& role, unsigned char* smem,
                                                      uint64_t* full, uint64_t* empty, uint64_t* raw_full,
                                                      uint64_t* raw_empty, int tt) {
  using Bits = std::conditional_t<sizeof(T) == 4, uint32_t, uint16_t>;
  const int slots = p.rows * p.P, plane = p.rows * p.raw_pitch;
  const int w_stage_bytes = p.resident ? 0 : p.w_bytes;
  // This thread's first slot (y0, x0) and its step of kTransposers slots as (dy, dx): the same every chunk.
  const int y0 = tt / p.P, x0 = tt - y0 * p.P, dy = kTransposers / p.P, dx = kTransposers - dy * p.P;
  int k = 0;
  int r = 0, r_round = 0;  // chunk k's raw box and its round, k % / k / p.raw_stages (counted: no divides)
  for (int pt = role.pt0; pt < p.ptiles; pt += role.pt_step) {
    // The tile's first staged column within its raw boxes (see nchw_box_x).
    const int x_tile = item_tile(p, role, pt).mx0 - p.halo_x;
    const int shift = x_tile - nchw_box_x<T>(x_tile);
    for (int c = 0; c < p.nchunks; ++c, ++k) {
      const int s = k % p.stages, round = k / p.stages;
      bulk::mbar_wait(&raw_full[r], r_round & 1);
      if (round > 0) bulk::mbar_wait(&empty[s], (round - 1) & 1);
      const Bits* raw = reinterpret_cast<const Bits*>(smem + p.raw_offset + r * p.raw_bytes);
      unsigned char* tile = smem + p.stages_offset + s * p.stage_bytes + w_stage_bytes;
      int y = y0, x = x0;
      for (int sl = tt; sl < slots; sl += kTransposers) {
        const Bits* src = raw + y * p.raw_pitch + x + shift;
        uint32_t v[8];  // the slot's 32 bytes: CH elements, channel order
        if constexpr (sizeof(T) == 4) {
#pragma unroll
          for (int e = 0; e < 8; ++e) v[e] = src[e * plane];
        } else {
#pragma unroll
          for (int e = 0; e < 8; ++e) v[e] = uint32_t(src[2 * e * plane]) | (uint32_t(src[(2 * e + 1) * plane]) << 16);
        }
        uint4* dst = reinterpret_cast<uint4*>(tile + sl * kSlotBytes);
        const int sw = (sl >> 2) & 1;
        dst[sw] = make_uint4(v[0], v[1], v[2], v[3]);
        dst[sw ^ 1] = make_uint4(v[4], v[5], v[6], v[7]);
        x += dx;
        y += dy;
        if (x >= p.P) {
          x -= p.P;
          ++y;
        }
      }
      wgmma::fence_proxy_async();
      asm volatile("bar.sync %0, %1;\n" ::"r"(kTransposeBarrier), "r"(kTransposers) : "memory");
      if (tt == 0) {
        bulk::mbar_arrive(&raw_empty[r]);
        bulk::mbar_arrive(&full[s]);
      }
      if (++r == p.raw_stages) {
        r = 0;
        ++r_round;
      }
    }
  }
}
#endif

// kTiles: kTilesFull; kTilesShort, tiles of the last tile row may run narrower MMAs
// (p.short_n < 256); kTilesWide, every tile runs one more m64n32 MMA per tap, for slots 256 ..
// 287 (p.tile_slots = 288), into 16 accumulators of its own; kTilesPaired (with kNchwOut only),
// each tile both column phases, kPairSlots slots of each (p.pair_x). kNchwOut: `out` is NCHW
// (else channels_last). kNchwIn (with kNchwOut only; p.nchw_in): the input is NCHW, read in place (a
// template flag so that the other kernels compile as without it: the transposers' code in every
// kernel cost the 16-bit channels_last ones 4-13%, H100 run ZK).
template <typename T, int kTiles, bool kNchwOut, bool kNchwIn>
__global__ void __launch_bounds__(kThreads, 1)
    wgmma_ws_fwd_kernel(const uint4* __restrict__ wp, const T* __restrict__ bias, T* __restrict__ out,
                        const WsParams p, const __grid_constant__ WsMaps in_maps) {
#ifdef CONVT_SM90A_DEVICE
  extern __shared__ __align__(128) unsigned char smem_raw[];  // aligned to kSwizzleRepeat below
  __shared__ uint64_t full[kMaxStages], empty[kMaxStages];
  __shared__ uint64_t raw_full[kNchwIn ? kMaxStages : 1], raw_empty[kNchwIn ? kMaxStages : 1];  // NCHW input's raw boxes
  // turn[c]: every warp of the other consumer has seen every chunk of its latest item land
  // (see below).
  __shared__ uint64_t turn[2];
  __shared__ uint64_t wbar;  // resident weights have landed
  __shared__ int s_off[kWsMaxTaps + 1];  // (+1: the tap loops read one entry ahead)
  const int tid = threadIdx.x;
  if (tid == 0) {
    for (int s = 0; s < p.stages; ++s) {
      // One arrival: the producer's expect_tx; NCHW input, two: and the transposers'.
      bulk::mbar_init(&full[s], kNchwIn ? 2 : 1);
      bulk::mbar_init(&empty[s], 4);  // one arrival per warp of the consuming warpgroup
    }
    if constexpr (kNchwIn) {
      for (int r = 0; r < p.raw_stages; ++r) {
        bulk::mbar_init(&raw_full[r]);   // the raw box's expect_tx
        bulk::mbar_init(&raw_empty[r]);  // the transposers, done with the box
      }
    }
    bulk::mbar_init(&turn[0], 4);  // one arrival per warp of consumer 1
    bulk::mbar_init(&turn[1], 4);  // one arrival per warp of consumer 0
    bulk::mbar_init(&wbar);
    bulk::fence_mbar_init();
  }
  // The input tiles' swizzle pattern repeats every 256 bytes from an aligned address; every
  // region below is a multiple of it.
  unsigned char* smem = smem_raw + ((kSwizzleRepeat - (bulk::smem_addr(smem_raw) & (kSwizzleRepeat - 1))) & (kSwizzleRepeat - 1));
  const BlockRole role = block_role(p);
  // Tap (ky, kx) = (ry + t SH, rx + u SW) of a phase of the block's group reads input row m - t DH
  // for phase output m, i.e. the staged tile moved by (halo_y - t DH) rows, (halo_x - u DW)
  // columns (dilation 1 at stride > 1: t = ky / SH, u = kx / SW, rx = kx mod SW); paired, phase
  // rx's columns start mlo_x[rx] - mx_lo into the staged tile.
  for (int i = tid; i < role.gtaps; i += kThreads) {
    const int tap = p.tap_of[role.gtap0 + i];
    const int ky = tap / p.KW, kx = tap - ky * p.KW;
    const int t = ky / p.SH, u = kx / p.SW;
    const int shift = p.pair_x ? p.mlo_x[kx % p.SW] - p.mx_lo : 0;
    s_off[i] = (p.halo_y - t * p.DH) * p.P + (p.halo_x - u * p.DW) + shift;
  }
  if (tid == 0) s_off[role.gtaps] = 0;  // read ahead past the last tap, never used
  __syncthreads();
  const int wg = tid / 128;

  if (wg == 0) {
    // ---- producer ----
    asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\n" ::: "memory");
    if constexpr (kNchwIn) {
      if (tid >= 32) {
        transpose_nchw_chunks<T>(p, role, smem, full, empty, raw_full, raw_empty, tid - 32);
        return;
      }
    }
    if (tid != 0) return;
    const uint32_t box_bytes = static_cast<uint32_t>(kSlotBytes * p.P * p.rows);
    const int w_bytes = role.gtaps * 2 * kCoTile * 16;  // one chunk of the group
    const unsigned char* wsrc = reinterpret_cast<const unsigned char*>(wp) +
                                (static_cast<int64_t>(role.co_tile) * p.ntaps + role.gtap0) * p.nchunks * 2 * kCoTile * 16;
    if (p.resident) {
      bulk::arrive_expect(&wbar, static_cast<uint32_t>(p.nchunks * w_bytes));
      for (int c = 0; c < p.nchunks; ++c) {
        bulk::copy_g2s_only(smem + c * w_bytes, wsrc + static_cast<int64_t>(c) * w_bytes, w_bytes, &wbar);
      }
    }
    const uint32_t w_stage_bytes = p.resident ? 0u : static_cast<uint32_t>(p.w_bytes);
    int k = 0;  // chunks issued by this block, over its tiles
    int r = 0, r_round = 0;  // NCHW input: chunk k's raw box and its round (counted: no divides)
    for (int pt = role.pt0; pt < p.ptiles; pt += role.pt_step) {
      const ItemTile t = item_tile(p, role, pt);
      for (int c = 0; c < p.nchunks; ++c, ++k) {
        const int s = k % p.stages;
        unsigned char* st = smem + p.stages_offset + s * p.stage_bytes;
        if constexpr (kNchwIn) {
          // The raw box first, into its own ring (it frees before the stage does), from a 16-byte
          // column (nchw_box_x), coordinates (x, y, channel, image); then the stage's weights, or
          // (resident) a plain arrival: `full` also waits for the transposers.
          if (r_round > 0) bulk::mbar_wait(&raw_empty[r], (r_round - 1) & 1);
          bulk::arrive_expect(&raw_full[r], static_cast<uint32_t>(kSlotBytes * p.rows * p.raw_pitch));
          tma::load_4d(smem + p.raw_offset + r * p.raw_bytes, &in_maps.m[0], nchw_box_x<T>(t.mx0 - p.halo_x),
                       t.my0 - p.halo_y, c * (kSlotBytes / int(sizeof(T))), t.n, &raw_full[r]);
          if (k >= p.stages) bulk::mbar_wait(&empty[s], ((k / p.stages) - 1) & 1);
          if (p.resident) {
            bulk::mbar_arrive(&full[s]);
          } else {
            bulk::arrive_expect(&full[s], static_cast<uint32_t>(w_bytes));
            bulk::copy_g2s_only(st, wsrc + static_cast<int64_t>(c) * w_bytes, w_bytes, &full[s]);
          }
          if (++r == p.raw_stages) {
            r = 0;
            ++r_round;
          }
        } else {
          if (k >= p.stages) bulk::mbar_wait(&empty[s], ((k / p.stages) - 1) & 1);
          // The stage's weight area is sized for the group with most taps; this group fills its part.
          bulk::arrive_expect(&full[s], (p.resident ? 0u : static_cast<uint32_t>(w_bytes)) + box_bytes);
          if (!p.resident) bulk::copy_g2s_only(st, wsrc + static_cast<int64_t>(c) * w_bytes, w_bytes, &full[s]);
          // A chunk lies within one residue (res_ch_pad is a multiple of it).
          int ch = c * (kSlotBytes / int(sizeof(T))), res = 0, dx = 0, dy = 0;
          if (p.res_n > 0) {
            res = ch / p.res_ch_pad;
            ch -= res * p.res_ch_pad;
            dx = p.res_dx[res];
            dy = p.res_dy[res];
          }
          tma::load_4d(st + w_stage_bytes, &in_maps.m[res], ch, t.mx0 - p.halo_x + dx, t.my0 - p.halo_y + dy, t.n,
                       &full[s]);
        }
      }
    }
    return;
  }

  // ---- consumers ----
  asm volatile("setmaxnreg.inc.sync.aligned.u32 232;\n" ::: "memory");
  const int cw = wg - 1;          // consumer 0 or 1
  const int ctid = tid - 128 * wg;  // 0..127 within the consumer
  const int warp = ctid / 32, lane = ctid % 32;
  unsigned char* staging = smem + p.staging_offset + cw * p.staging_bytes;
  const uint32_t staging_addr = bulk::smem_addr(staging);
  const int co_tile = role.co_tile;
  const int w_bytes = role.gtaps * 2 * kCoTile * 16;  // one chunk of the group
  if (p.resident) bulk::mbar_wait(&wbar, 0);
  const uint32_t w_stage_bytes = p.resident ? 0u : static_cast<uint32_t>(p.w_bytes);
  // The bias of this thread's two output channels (the block's channel tile is fixed):
  // co = 16 warp + g and co + 8 of the tile, g = lane / 4 (the accumulator layout).
  const int g = lane / 4;
  float b_lo = 0.f, b_hi = 0.f;
  if (bias != nullptr) {
    const int co = co_tile * kCoTile + 16 * warp + g;
    if (co < p.Cout) b_lo = static_cast<float>(bias[co]);
    if (co + 8 < p.Cout) b_hi = static_cast<float>(bias[co + 8]);
  }
  constexpr bool kShort = kTiles == kTilesShort, kWide = kTiles == kTilesWide, kPaired = kTiles == kTilesPaired;
  static_assert(!kPaired || kNchwOut, "paired phases write NCHW output");
  static_assert(!kNchwIn || kNchwOut, "NCHW input is read in place with an NCHW output only");
  constexpr int kTileSlots = kWide ? kSlots + kWideExtra : kSlots;
  // Paired: acc holds phase rx = 0's m64n128 product, acc1 phase 1's (the same layout).
  constexpr int kAcc = kPaired ? kPairSlots / 2 : 128;
  float acc[kAcc];
  float acc1[kPaired ? kPairSlots / 2 : 1];
  float accx[kWide ? kWideExtra / 2 : 1];  // wide tiles: slots 256 .. 287 (the m64n32 layout)
  for (int j = cw;; j += 2) {
    const int pt = role.pt0 + j * role.pt_step;
    if (pt >= p.ptiles) break;
    const ItemTile t = item_tile(p, role, pt);
    // The tile's first output row / column; its phase outputs lie SH rows / SW columns apart.
    // (Paired: ox0 is unused; the epilogue places both phases' outputs from the output tile's
    // first column, SW * (mx0 - mx_lo); see item_tile.)
    const int oy0 = p.SH * t.my0 + role.ry - p.PH, ox0 = p.SW * t.mx0 + role.rx - p.PW;
    // The tile's rows and columns inside the output (not for paired tiles): the epilogues store slot (ty, tx)
    // where ty < ty_end and tx < tx_end, in place of four comparisons and two multiplies per slot
    // (oy0 + SH ty < OH and the like; the consumers' issue bounds this kernel). oy0, ox0 >= 0.
    const int ty_end = min(p.TY, max(0, (p.OH - oy0 + p.SH - 1) / p.SH));
    const int tx_end = min(p.TX, max(0, (p.OW - ox0 + p.SW - 1) / p.SW));
    // A short tile's MMAs cover its first n_mma slots, where its valid outputs lie; the rest of
    // acc stays zero, and the epilogue's bounds skip those slots (rows past every phase's last).
    const int n_mma = kShort && (pt / p.tiles_x) % p.tiles_y == p.tiles_y - 1 ? p.short_n : kSlots;
#pragma unroll
    for (int i = 0; i < kAcc; ++i) acc[i] = 0.f;
    if constexpr (kPaired) {
#pragma unroll
      for (int i = 0; i < kPairSlots / 2; ++i) acc1[i] = 0.f;
    }
    if constexpr (kWide) {
#pragma unroll
      for (int i = 0; i < kWideExtra / 2; ++i) accx[i] = 0.f;
    }
    // Order: a parity wait on `full` is exact only while the stage's previous use (chunk
    // k - stages) has landed; that chunk may be the other consumer's. So a consumer starts
    // item j once the other one has seen all of item j - 1 land (turn: one completion per
    // item, strictly alternating). It is also the ping-pong order: one consumer's MMAs start
    // where the other's loads are done.
    // Every warp arrives, not one thread: a parity wait is exact only while its barrier is at
    // most one phase past it, and the four warps of a consumer pass their waits at different
    // times. With a single arrival (warp 0's), a consumer could finish its next item and
    // complete the waiter's next phase while one of the waiter's warps had not yet polled the
    // previous one; that warp then waits a phase that never comes, and its warpgroup's MMAs
    // and named barrier with it (the kernel == stride forward hung this way, runs MC-MG). Here
    // that needs one chunk per item (16 input channels in 16-bit types, 8 in float): with
    // more, the arrival follows the item's first MMA, which is collective, so the four warps
    // are past their waits by then. Now a phase needs all four warps of the arriving consumer,
    // each past its own wait, which in turn needed all four of the waiter's warps past theirs:
    // no warp falls two phases behind (scripts/turn_protocol_model.py explores both forms).
    const int n = j / 2;
    if (cw == 0 && j > 0) bulk::mbar_wait(&turn[0], (n - 1) & 1);
    if (cw == 1) bulk::mbar_wait(&turn[1], n & 1);
    // The tile's chunks with MMAs NM columns wide: the whole pipeline (fences, MMAs, commits,
    // waits) per width, so that no MMA sits on a divergent path of another's (a width chosen per
    // MMA made ptxas serialize every wgmma: C7520).
    const auto run_chunks = [&](auto nm_tag) {
      constexpr int NM = decltype(nm_tag)::value;
      static_assert(!kPaired || NM == kSlots, "paired tiles have no short form");
      int prev = -1;
      for (int c = 0; c < p.nchunks; ++c) {
        const int k = j * p.nchunks + c, s = k % p.stages;
        bulk::mbar_wait(&full[s], (k / p.stages) & 1);
        if (c == p.nchunks - 1 && lane == 0) bulk::mbar_arrive(&turn[1 - cw]);
        const uint32_t st = bulk::smem_addr(smem + p.stages_offset + s * p.stage_bytes);
        const uint32_t w_addr = p.resident ? bulk::smem_addr(smem + c * w_bytes) : st;
        const uint64_t a0 = wgmma::make_desc(w_addr, 64 * 16, 128);
        // B K-major, 32-byte swizzle: SBO = 8 slots (256 bytes); any slot may start it.
        const uint64_t b0 = wgmma::make_desc_swizzled(st + w_stage_bytes, 16, 8 * kSlotBytes, wgmma::Swizzle::k32);
        // Per tap the operands move: A by 2048 bytes (128 units of 16), B by s_off[tap] slots. Only
        // the low words change, by 32-bit adds (wgmma::desc_lo), and each tap's input offset is read
        // one MMA ahead, so that the shared load's latency is not on the way to the next HGMMA: 15
        // instructions per HGMMA. With 64-bit adds ptxas made 29, a chain of LDS, adds with carry and
        // four R2UR, where ncu found most of the consumers' stalls (kb1_69 bf16, run AC3); the kernel
        // then ran 836 -> 810 us (AD2): its tensor pipe, not the issue, bounds it.
        const uint32_t a_lo = static_cast<uint32_t>(a0), b_lo = static_cast<uint32_t>(b0);
        const auto a_at = [&](int tap) { return wgmma::desc_lo(a0, a_lo + static_cast<uint32_t>(tap * 128)); };
        const auto b_at = [&](int off) {
          return wgmma::desc_lo(b0, b_lo + static_cast<uint32_t>(off * (kSlotBytes / 16)));
        };
        wgmma::fence();
        if constexpr (kPaired) {
          // Phase rx = 0's taps into acc, then phase 1's into acc1: m64n128 each.
          int off = s_off[0];
#pragma unroll 1
          for (int tap = 0; tap < role.taps0; ++tap) {
            const int next = s_off[tap + 1];
            wgmma::mma_lo<T, kPairSlots>(acc, a_at(tap), b_at(off));
            off = next;
          }
#pragma unroll 1
          for (int tap = role.taps0; tap < role.gtaps; ++tap) {
            const int next = s_off[tap + 1];
            wgmma::mma_lo<T, kPairSlots>(acc1, a_at(tap), b_at(off));
            off = next;
          }
        } else {
          int off = s_off[0];
#pragma unroll 1
          for (int tap = 0; tap < role.gtaps; ++tap) {
            const int next = s_off[tap + 1];
            const uint64_t a = a_at(tap), b = b_at(off);
            if constexpr (NM == kSlots) {
              wgmma::mma<T, kSlots>(acc, a, b);
              if constexpr (kWide) {
                // The same A; B 256 slots on (a multiple of the swizzle's 8-slot repeat).
                wgmma::mma_lo<T, kWideExtra>(accx, a, b_at(off + kSlots));
              }
            } else {
              wgmma::mma_lo<T, NM>(acc, a, b);
            }
            off = next;
          }
        }
        wgmma::commit();
        ws::release_previous(empty, prev, s, lane);
      }
      ws::release_last(empty, prev, lane);
    };
    if constexpr (!kShort) {
      run_chunks(std::integral_constant<int, kSlots>{});
    } else {
      // (n_mma is uniform over the warpgroup: one tile.)
      if (n_mma == kSlots) {
        run_chunks(std::integral_constant<int, kSlots>{});
      } else if (n_mma == 128) {
        run_chunks(std::integral_constant<int, 128>{});
      } else if (n_mma == 64) {
        run_chunks(std::integral_constant<int, 64>{});
      } else {
        run_chunks(std::integral_constant<int, 32>{});
      }
    }
#pragma unroll
    for (int i = 0; i < kAcc; ++i) wgmma::fence_operand(acc[i]);
    if constexpr (kPaired) {
#pragma unroll
      for (int i = 0; i < kPairSlots / 2; ++i) wgmma::fence_operand(acc1[i]);
    }
    if constexpr (kWide) {
#pragma unroll
      for (int i = 0; i < kWideExtra / 2; ++i) wgmma::fence_operand(accx[i]);
    }

    // Epilogue. This thread holds D[co][px] for co = 16 warp + g (+8), px = 8j' + 2t (+1).
    if constexpr (kPaired) {
      // Paired (see the header): per half of the tile (slots 64 h .. 64 h + 63 of both phases),
      // the two phases' outputs merged into [channel][128 output columns] floats. A thread's
      // slots s, s + 1 of both phases are 4 consecutive outputs: one 16-byte shared store (pitch
      // 144 floats: the two rows of a store's 8-lane phase start 64 bytes apart, on distinct
      // banks). Then per channel row, consecutive threads store consecutive runs of V outputs
      // (16 bytes where the output's width and the tiles allow, plan_ws): whole sectors, and
      // 16 / V / sizeof(T) times fewer store instructions than element stores, which bounded the
      // first form (run SD: bf16 as slow as float32).
      const int t4 = lane % 4;
      float* const fst = reinterpret_cast<float*>(staging);
      const int64_t plane = static_cast<int64_t>(p.OH) * p.OW;
      T* const out_n = out + static_cast<int64_t>(t.n) * p.Cout * plane;
      // Phase rx's columns sit at the output tile's residue SW * mlo_x[rx] + rx - PW (0 or 1).
      const bool rx0_even = p.SW * p.mlo_x[0] - p.PW == 0;
      const int X0 = p.SW * (t.mx0 - p.mx_lo);  // the output tile's first column
#pragma unroll
      for (int h = 0; h < 2; ++h) {
#pragma unroll  // whole: a runtime index into acc would move it to local memory
        for (int jj = 0; jj < 8; ++jj) {
          const int j = 8 * h + jj;
          const float e0 = acc[4 * j], e1 = acc[4 * j + 1], e2 = acc[4 * j + 2], e3 = acc[4 * j + 3];
          const float o0 = acc1[4 * j], o1 = acc1[4 * j + 1], o2 = acc1[4 * j + 2], o3 = acc1[4 * j + 3];
          float* r = fst + (16 * warp + g) * kPairPitch + 16 * jj + 4 * t4;
          *reinterpret_cast<float4*>(r) = rx0_even ? make_float4(e0 + b_lo, o0 + b_lo, e1 + b_lo, o1 + b_lo)
                                                   : make_float4(o0 + b_lo, e0 + b_lo, o1 + b_lo, e1 + b_lo);
          *reinterpret_cast<float4*>(r + 8 * kPairPitch) = rx0_even ? make_float4(e2 + b_hi, o2 + b_hi, e3 + b_hi, o3 + b_hi)
                                                                    : make_float4(o2 + b_hi, e2 + b_hi, o3 + b_hi, e3 + b_hi);
        }
        ws::consumer_sync(1 + cw);
        // Runs of V merged outputs (p.out_vec): a thread keeps one run k of a channel row (the
        // same for all its channels), whole or outside the output (plan_ws), and stores it for
        // every (128 / (128 / V))-th channel. Its first output: slot 64 h + k V / 2 of the phase
        // at residue k V mod 2 (even for V > 1).
        const auto store_runs = [&](auto v_tag) {
          constexpr int V = decltype(v_tag)::value;
          constexpr int kRuns = kPairSlots / V;  // runs per channel row of the half
          const int k = ctid % kRuns, slot = kPairSlots / 2 * h + k * V / 2;
          const int ty = small_div(slot, p.P_div), cx = slot - ty * p.P;
          const int oy = p.SH * (t.my0 + ty) + role.ry - p.PH, ox = X0 + 2 * cx + ((k * V) & 1);
          if (ty < p.TY && cx < p.TX && oy < p.OH && ox < p.OW) {
            const int64_t off = static_cast<int64_t>(oy) * p.OW + ox;
#pragma unroll 4
            for (int c = ctid / kRuns; c < kCoTile; c += 128 / kRuns) {
              const int co = co_tile * kCoTile + c;
              if (co >= p.Cout) break;  // a partial last channel tile
              ws::store_run<T, V>(out_n + co * plane + off, fst + c * kPairPitch + k * V);
            }
          }
        };
        if constexpr (sizeof(T) == 2) {
          if (p.out_vec == 8) store_runs(std::integral_constant<int, 8>{});
        }
        if (p.out_vec == 4) {
          store_runs(std::integral_constant<int, 4>{});
        } else if (p.out_vec == 2) {
          store_runs(std::integral_constant<int, 2>{});
        } else if (p.out_vec == 1) {
          store_runs(std::integral_constant<int, 1>{});
        }
        ws::consumer_sync(1 + cw);  // the staging tile is free again
      }
    } else if constexpr (kNchwOut) {
      // NCHW (see the header): per 128 slots, [channel][slot] floats in the staging tile, then
      // per channel 32 consecutive slots per warp store.
      const int t4 = lane % 4;
      float* const fst = reinterpret_cast<float*>(staging);
      const int64_t plane = static_cast<int64_t>(p.OH) * p.OW;
      T* const out_n = out + static_cast<int64_t>(t.n) * p.Cout * plane;
      // Staging rows: kNchwPitch floats, or kNchwQuarterPitch where a quarter tile is staged at a time.
      const int npitch = p.nchw_quarters ? kNchwQuarterPitch : kNchwPitch;
      // The staging tile's first NS slots -> slots slot0 .. slot0 + NS - 1 of the output.
      const auto store_nchw = [&](auto ns_tag, int slot0) {
        constexpr int NS = decltype(ns_tag)::value;
        ws::consumer_sync(1 + cw);
        int64_t off[NS / 32];  // this lane's slots slot0 + lane + 32 i: offset in a plane, or -1
#pragma unroll
        for (int i = 0; i < NS / 32; ++i) {
          const int slot = slot0 + lane + 32 * i;
          const int ty = small_div(slot, p.P_div), tx = slot - ty * p.P;
          const int oy = oy0 + p.SH * ty, ox = ox0 + p.SW * tx;
          off[i] = ty < ty_end && tx < tx_end ? static_cast<int64_t>(oy) * p.OW + ox : -1;
        }
#pragma unroll 2
        for (int c = warp; c < kCoTile; c += 4) {
          const int co = co_tile * kCoTile + c;
          if (co >= p.Cout) break;  // a partial last channel tile (uniform over the warp)
          T* const o = out_n + co * plane;
          const float* const row = fst + c * npitch + lane;
#pragma unroll
          for (int i = 0; i < NS / 32; ++i) {
            if (off[i] >= 0) o[off[i]] = static_cast<T>(row[32 * i]);
          }
        }
        ws::consumer_sync(1 + cw);  // the staging tile is free again
      };
      // Accumulators a[4 j + h] (channel 16 warp + g) and a[4 j + 2 + h] (+ 8), slots 8 j + 2 t + h,
      // j = j0 .. j0 + NJ - 1, into staging slots from 0.
      const auto stage_nchw = [&](const auto& a, auto nj_tag, int j0) {
        constexpr int NJ = decltype(nj_tag)::value;
#pragma unroll  // whole: a runtime index into acc would move it to local memory
        for (int jj = 0; jj < NJ; ++jj) {
          float* r = fst + (16 * warp + g) * npitch + 8 * jj + 2 * t4;
          *reinterpret_cast<float2*>(r) = make_float2(a[4 * (j0 + jj)] + b_lo, a[4 * (j0 + jj) + 1] + b_lo);
          *reinterpret_cast<float2*>(r + 8 * npitch) =
              make_float2(a[4 * (j0 + jj) + 2] + b_hi, a[4 * (j0 + jj) + 3] + b_hi);
        }
      };
      // SW == 1 with p.out_vec = V > 1 (plan_ws): runs of V consecutive outputs of a row, one
      // store each (16 bytes where the widths allow). A thread keeps one run k of the staged
      // slots for every (128 / (NS / V))-th channel; the plan makes each run whole (inside the
      // tile row and the output, aligned to V) or wholly outside.
      const auto store_runs = [&](auto ns_tag, auto v_tag, int slot0) {
        constexpr int NS = decltype(ns_tag)::value, V = decltype(v_tag)::value;
        constexpr int kRuns = NS / V;  // runs per channel row
        static_assert(kRuns <= 128 && 128 % kRuns == 0, "whole channel steps");
        ws::consumer_sync(1 + cw);
        const int k = ctid % kRuns, slot = slot0 + k * V;
        const int ty = small_div(slot, p.P_div), tx = slot - ty * p.P;
        const int oy = oy0 + p.SH * ty, ox = ox0 + tx;
        if (ty < ty_end && tx < tx_end) {
          T* const o = out_n + static_cast<int64_t>(oy) * p.OW + ox;
          const float* const src = fst + k * V;
#pragma unroll 4
          for (int c = ctid / kRuns; c < kCoTile; c += 128 / kRuns) {
            const int co = co_tile * kCoTile + c;
            if (co >= p.Cout) break;  // a partial last channel tile
            ws::store_run<T, V>(o + co * plane, src + c * npitch);
          }
        }
        ws::consumer_sync(1 + cw);  // the staging tile is free again
      };
      const auto store_slots = [&](auto ns_tag, int slot0) {
        if constexpr (sizeof(T) == 2) {
          if (p.out_vec == 8) {
            store_runs(ns_tag, std::integral_constant<int, 8>{}, slot0);
            return;
          }
        }
        if (p.out_vec == 4) {
          store_runs(ns_tag, std::integral_constant<int, 4>{}, slot0);
        } else if (p.out_vec == 2) {
          store_runs(ns_tag, std::integral_constant<int, 2>{}, slot0);
        } else {
          store_nchw(ns_tag, slot0);
        }
      };
      bool quarters = false;
      if constexpr (std::is_same_v<T, float>) quarters = p.nchw_quarters;
      if (quarters) {
#pragma unroll
        for (int q = 0; q < 4; ++q) {
          stage_nchw(acc, std::integral_constant<int, 8>{}, 8 * q);
          store_nchw(std::integral_constant<int, kSlots / 4>{}, kSlots / 4 * q);
        }
      } else {
        stage_nchw(acc, std::integral_constant<int, 16>{}, 0);
        store_slots(std::integral_constant<int, kSlots / 2>{}, 0);
        stage_nchw(acc, std::integral_constant<int, 16>{}, 16);
        store_slots(std::integral_constant<int, kSlots / 2>{}, kSlots / 2);
      }
      if constexpr (kWide) {
        stage_nchw(accx, std::integral_constant<int, kWideExtra / 8>{}, 0);
        store_slots(std::integral_constant<int, kWideExtra>{}, kSlots);
      }
    } else if constexpr (std::is_same_v<T, float>) {
      if (p.f32_staged) {
        // float, staged in two halves of 128 slots ([slot][64 + 4 floats], the 16-bit staging
        // tile's room): scalar shared stores (bank = 8 t + g + const: conflict-free), then
        // 16-byte global stores of whole pixels (16 lanes per 256-byte pixel).
        const int t4 = lane % 4;
        float* const fst = reinterpret_cast<float*>(staging);
        const int piece = ctid % 16;
        const bool piece_in = co_tile * kCoTile + piece * 4 < p.Cout;  // Cout % 8 == 0: whole pieces
        T* const out_org = out + cl_tile_origin(p, t, oy0, ox0) + co_tile * kCoTile + piece * 4;
        // Slots slot0 .. slot0 + nslots - 1 from the staging tile's first nslots rows to the output.
        const auto store_staged = [&](int slot0, int nslots) {
          ws::consumer_sync(1 + cw);
#pragma unroll 4
          for (int i = 0; i < nslots / 8; ++i) {
            const int ls = ctid / 16 + 8 * i, slot = slot0 + ls;
            const int ty = small_div(slot, p.P_div), tx = slot - ty * p.P;
            if (piece_in && ty < ty_end && tx < tx_end) {
              const float4 v = *reinterpret_cast<const float4*>(fst + ls * kStagePitchF32 + piece * 4);
              *reinterpret_cast<float4*>(out_org + (ty * p.cl_row_step + tx * p.cl_col_step)) = v;
            }
          }
          ws::consumer_sync(1 + cw);  // the staging tile is free again
        };
#pragma unroll
        for (int half = 0; half < 2; ++half) {
#pragma unroll  // whole: a runtime index into acc would move it to local memory
          for (int jj = 0; jj < 16; ++jj) {
            const int j = 16 * half + jj;
            float* r = fst + (8 * jj + 2 * t4) * kStagePitchF32 + 16 * warp + g;
            r[0] = acc[4 * j] + b_lo;
            r[kStagePitchF32] = acc[4 * j + 1] + b_lo;
            r[8] = acc[4 * j + 2] + b_hi;
            r[kStagePitchF32 + 8] = acc[4 * j + 3] + b_hi;
          }
          store_staged(kSlots / 2 * half, kSlots / 2);
        }
        if constexpr (kWide) {
#pragma unroll
          for (int j = 0; j < kWideExtra / 8; ++j) {
            float* r = fst + (8 * j + 2 * t4) * kStagePitchF32 + 16 * warp + g;
            r[0] = accx[4 * j] + b_lo;
            r[kStagePitchF32] = accx[4 * j + 1] + b_lo;
            r[8] = accx[4 * j + 2] + b_hi;
            r[kStagePitchF32 + 8] = accx[4 * j + 3] + b_hi;
          }
          store_staged(kSlots, kWideExtra);
        }
      } else {
        // float from the registers (knob CONVT_FWD_WS_F32_STORE=registers; stmatrix moves 16-bit
        // elements only). Per store, a warp writes four pixels' 8-channel runs: whole 32-byte sectors.
        const int t4 = lane % 4;
        const int co0 = co_tile * kCoTile + 16 * warp + g;
        const bool lo_in = co0 < p.Cout, hi_in = co0 + 8 < p.Cout;
        T* const out_org = out + cl_tile_origin(p, t, oy0, ox0) + co0;
        // Slots slot0 + 8 j + 2 t + h of accumulators a[4 j + h] (channel co0) and a[4 j + 2 + h] (co0 + 8).
        const auto store_from = [&](const auto& a, auto nj_tag, int slot0) {
          constexpr int NJ = decltype(nj_tag)::value;
#pragma unroll  // whole: a runtime index into acc would move it to local memory
          for (int j = 0; j < NJ; ++j) {
#pragma unroll
            for (int h = 0; h < 2; ++h) {
              const int slot = slot0 + 8 * j + 2 * t4 + h;
              const int ty = small_div(slot, p.P_div), tx = slot - ty * p.P;
              if (ty < ty_end && tx < tx_end) {
                T* o = out_org + (ty * p.cl_row_step + tx * p.cl_col_step);
                if (lo_in) o[0] = a[4 * j + h] + b_lo;
                if (hi_in) o[8] = a[4 * j + 2 + h] + b_hi;
              }
            }
          }
        };
        store_from(acc, std::integral_constant<int, kSlots / 8>{}, 0);
        if constexpr (kWide) store_from(accx, std::integral_constant<int, kWideExtra / 8>{}, kSlots);
      }
    } else {
      // Matrix i of a stmatrix: pixel block 2jj + (i >> 1), channel block 16 warp + 8 (i & 1).
      const int mi = lane / 8, mr = lane % 8;
      const uint32_t row_addr =
          staging_addr + static_cast<uint32_t>(((8 * (mi >> 1) + mr) * kStagePitch + 16 * warp + 8 * (mi & 1)) * 2);
      // Whole pixels: 8 lanes x 16 bytes per pixel's 64 channels, 16 pixels per pass.
      const int piece = ctid % 8;
      // (A partial last channel tile: Cout is a multiple of 8, so a piece is whole or absent.)
      const bool piece_in = co_tile * kCoTile + piece * 8 < p.Cout;
      T* const out_org = out + cl_tile_origin(p, t, oy0, ox0) + co_tile * kCoTile + piece * 8;
      // The staging tile's first NS rows -> slots slot0 .. slot0 + NS - 1 of the output.
      const auto store_staged = [&](auto ns_tag, int slot0) {
        constexpr int NS = decltype(ns_tag)::value;
        ws::consumer_sync(1 + cw);
#pragma unroll 4
        for (int i = 0; i < NS / 16; ++i) {
          const int ls = ctid / 8 + 16 * i, slot = slot0 + ls;
          const int ty = small_div(slot, p.P_div), tx = slot - ty * p.P;
          if (piece_in && ty < ty_end && tx < tx_end) {
            const uint4 v = *reinterpret_cast<const uint4*>(staging + (ls * kStagePitch + piece * 8) * 2);
            *reinterpret_cast<uint4*>(out_org + (ty * p.cl_row_step + tx * p.cl_col_step)) = v;
          }
        }
        ws::consumer_sync(1 + cw);  // the staging tile is free again
      };
      if (p.half_staged) {
        // Half a tile at a time (128 slots; wide tiles' last 32 as a third part), in half the room,
        // where that leaves more pipeline stages (plan_ws): two more barriers per tile.
        ws::stage_transposed_part<T, 0, kSlots / 32>(acc, row_addr, kStagePitch * 2, b_lo, b_hi);
        store_staged(std::integral_constant<int, kSlots / 2>{}, 0);
        ws::stage_transposed_part<T, kSlots / 32, kSlots / 32>(acc, row_addr, kStagePitch * 2, b_lo, b_hi);
        store_staged(std::integral_constant<int, kSlots / 2>{}, kSlots / 2);
        if constexpr (kWide) {
          ws::stage_transposed<T>(accx, row_addr, kStagePitch * 2, b_lo, b_hi);
          store_staged(std::integral_constant<int, kWideExtra>{}, kSlots);
        }
      } else {
        ws::stage_transposed<T>(acc, row_addr, kStagePitch * 2, b_lo, b_hi);
        if constexpr (kWide) {
          ws::stage_transposed<T>(accx, row_addr + static_cast<uint32_t>(kSlots * kStagePitch * 2), kStagePitch * 2,
                                  b_lo, b_hi);
        }
        store_staged(std::integral_constant<int, kTileSlots>{}, 0);
      }
    }
  }
#else
  __trap();  // built without sm_90a code: the host checks wgmma_available first
#endif
}

// Paired column phases for NCHW output at SW == 2: by default above kWsNchwOutL2Bytes of output;
// knob CONVT_FWD_WS_PAIR=0 never (one phase per block at any size: a measurement knob), =all at
// any size (a test knob: small shapes reach the paired kernel). Read once.
KnobMode ws_pairs_mode() {
  static const KnobMode mode = env_mode("CONVT_FWD_WS_PAIR");
  return mode;
}

// NCHW output up to this many bytes is written with one phase per block at any stride: the
// phases' parts of a sector meet in L2 (H100: 50 MB). Run QP (H100, NCHW forward ms, NCHW kernels
// -> the channels_last route with one phase per block): dcgan_g4 (34 MB of float32 output) 0.113
// -> 0.085; kb2_2 (2.1 GB) 2.64 -> 6.62, kb2_93 1.66 -> 2.59, unet_up1 0.81 -> 4.26. Paired phases
// lost on dcgan_g4 (run SC: float32 0.072 -> 0.093 ms, bf16 0.047 -> 0.059), so they serve larger
// outputs only.
constexpr int64_t kWsNchwOutL2Bytes = 40ll << 20;
bool ws_nchw_out_in_l2(const Geometry& g, int64_t elem) {
  return g.N * g.Cout * g.Hout * g.Wout * elem <= kWsNchwOutL2Bytes;
}

// Test / measurement knob CONVT_FWD_WS=0 turns this kernel off (the general wgmma kernel
// then takes these shapes). Read once.
bool ws_allowed() {
  static const bool on = !env_equals("CONVT_FWD_WS", "0");
  return on;
}

// Short tiles (plan_ws): the last tile row's MMAs only as wide as its valid slots. On by
// default since H100 run QB (dcgan_g4 forward, channels_last: bf16 46 -> 41 us, float32 85 ->
// 76; shapes without a short row unchanged). Knob CONVT_FWD_WS_SHORT=0 turns them off. Read once.
bool ws_short_tiles_allowed() {
  static const bool on = !env_equals("CONVT_FWD_WS_SHORT", "0");
  return on;
}

// Wide tiles (plan_ws): 256 + kWideExtra MMA columns per tile. Default: where their cost is at
// most kWideGain of the best plan without them (dcgan_g4: 16 x 16 phase images, 16 rows of
// 17 slots, one wide tile instead of two); knob CONVT_FWD_WS_WIDE=0 never, =all wherever they
// cost less (a measurement knob: 2-10% less on the larger suite images, unmeasured). Read once.
constexpr double kWideGain = 0.8;
// float32 whose channel tile's weights never fit in shared memory, so that every stage streams its
// chunk's weights from L2 (kb1_69: 8 chunks x 30 KB per tile against 11 KB of input): wide tiles
// where they cost at most kWideGainStreamed of the best plan without them, their 288 columns
// spreading the same weight traffic over 12% more outputs. Fitted to H100 run YI (four alternating
// passes, kernel us, rule -> CONVT_FWD_WS_WIDE=all), not a model: kb1_69 (model 0.91) channels_last
// 1789 -> 1684 mean, its NCHW route 1934 -> 1776, its training step's two kernels -2.5%; kb1_65 (model
// 0.966, also streamed) 1140 -> 1192, so not there. Where the weights are resident, wide tiles gained
// nothing beyond the spread (run YH: bf16 -1% to +7% on the suite's channels_last rows).
constexpr double kWideGainStreamed = 0.92;
KnobMode ws_wide_tiles() {
  static const KnobMode mode = env_mode("CONVT_FWD_WS_WIDE");
  return mode;
}

// Measurement knob CONVT_FWD_WS_TX=<n>: the planner considers tiles n phase outputs wide only
// (where such a tile fits; else it plans as usual), to measure tile shapes against its cost model
// (e.g. kb1_69: 38 wide x 6 rows, its choice, against 60 x 4). 0 or unset: every width. Read once.
int ws_forced_tile_width() {
  static const int tx = [] {
    const char* e = std::getenv("CONVT_FWD_WS_TX");
    if (e == nullptr || *e == '\0') return 0;
    char* end = nullptr;
    const long v = std::strtol(e, &end, 10);
    TORCH_CHECK(end != nullptr && *end == '\0' && v >= 0 && v <= kSlots,
                "convt: CONVT_FWD_WS_TX must be a whole number from 0 to ", kSlots, ", got '", e, "'");
    return static_cast<int>(v);
  }();
  return tx;
}

// Measurement knob CONVT_FWD_WS_WEIGHTS=stream: every stage carries its chunk's weights even
// where the whole channel tile's weights would fit in shared memory. Read once.
bool ws_weights_resident_allowed() {
  static const bool on = !env_equals("CONVT_FWD_WS_WEIGHTS", "stream");
  return on;
}

// Measurement knob CONVT_FWD_WS_TF32=0: float32 (TF32) channels_last goes to the general
// kernel instead. Read once.
bool ws_tf32_allowed() {
  static const bool on = !env_equals("CONVT_FWD_WS_TF32", "0");
  return on;
}

// Measurement knob CONVT_FWD_WS_F32_STORE=registers: the float epilogue stores from the
// registers even where the staging tiles fit. Read once.
bool ws_f32_staged_allowed() {
  static const bool on = !env_equals("CONVT_FWD_WS_F32_STORE", "registers");
  return on;
}

// float NCHW output staged a quarter tile at a time (WsParams::nchw_quarters): unset = where that
// leaves more pipeline stages (plan_ws), 0 = never, all = always (tests). Read once.
KnobMode ws_nchw_quarters_mode() {
  static const KnobMode mode = env_mode("CONVT_FWD_WS_NCHW_QUARTERS");
  return mode;
}

// 16-bit channels_last output staged half a tile at a time (WsParams::half_staged): unset = where
// that leaves more pipeline stages and the whole tiles leave only 2 (plan_ws), 0 = never,
// all = always (tests, measurement). Read once.
KnobMode ws_half_staging_mode() {
  static const KnobMode mode = env_mode("CONVT_FWD_WS_HALF_STAGE");
  return mode;
}

// Measurement knob CONVT_FWD_WS_NCHW_VEC=0: the 16-bit NCHW epilogue at SW == 1 stores one element per
// lane, and the planner neither pads tile pitches nor weighs store widths (the plans before runs
// of outputs per store, see plan_ws). Read once.
bool ws_nchw_vec_allowed() {
  static const bool on = !env_equals("CONVT_FWD_WS_NCHW_VEC", "0");
  return on;
}

// NCHW input read in place (WsParams::nchw_in, "NCHW input" above): knob CONVT_FWD_WS_NCHW_IN=0 never
// (forward.cu's route then copies the input to channels_last first, as before). Read once.
bool ws_nchw_in_allowed() {
  static const bool on = !env_equals("CONVT_FWD_WS_NCHW_IN", "0");
  return on;
}

// Tile choice: least modelled cost (MMA columns x taps + a fixed cost per tile), then the fewest
// tiles, then the smaller input stage; see the cost comment below.
// res_n > 0: the input is res_n residue subgrids of res_ch channels each (launch_wgmma_ws_residues),
// each padded to whole K chunks. nchw_out: the output is NCHW (its epilogue needs the staging tile).
bool plan_ws(const Geometry& g, int elem, int res_n, int res_ch, bool nchw_out, bool nchw_in, WsParams& p) {
  p.N = static_cast<int>(g.N);
  p.Cin = static_cast<int>(g.Cin);
  p.Cout = static_cast<int>(g.Cout);
  p.H = static_cast<int>(g.H);
  p.W = static_cast<int>(g.W);
  p.OH = static_cast<int>(g.Hout);
  p.OW = static_cast<int>(g.Wout);
  p.KH = static_cast<int>(g.KH);
  p.KW = static_cast<int>(g.KW);
  p.DH = static_cast<int>(g.DH);
  p.DW = static_cast<int>(g.DW);
  p.ntaps = p.KH * p.KW;
  p.co_tiles = static_cast<int>(ceil_div(p.Cout, kCoTile));
  const int chunk_ch = kSlotBytes / elem;
  p.res_n = res_n;
  p.res_ch = res_ch;
  p.res_ch_pad = res_n > 0 ? static_cast<int>(round_up(res_ch, chunk_ch)) : 0;
  p.nchunks = res_n > 0 ? res_n * p.res_ch_pad / chunk_ch : p.Cin / chunk_ch;
  // Phases (launch_wgmma_ws admits stride > 1 with dilation 1 and K >= S only, so every phase
  // has taps): phase (ry, rx) takes taps ky = ry, ry + SH, ... and kx likewise, in that order.
  p.SH = static_cast<int>(g.SH);
  p.SW = static_cast<int>(g.SW);
  p.PH = static_cast<int>(g.PH);
  p.PW = static_cast<int>(g.PW);
  p.nphases = p.SH * p.SW;
  int n_taps = 0;
  for (int ry = 0; ry < p.SH; ++ry) {
    for (int rx = 0; rx < p.SW; ++rx) {
      p.ph_tap0[ry * p.SW + rx] = n_taps;
      for (int ky = ry; ky < p.KH; ky += p.SH) {
        for (int kx = rx; kx < p.KW; kx += p.SW) p.tap_of[n_taps++] = ky * p.KW + kx;
      }
    }
  }
  p.ph_tap0[p.nphases] = n_taps;
  // Phase outputs: row SH * m + ry - PH for m = mlo_y[ry] .. (the last inside the output).
  int64_t my = 0, mx = 0;  // the most phase outputs of any phase, per dimension
  for (int r = 0; r < p.SH; ++r) {
    p.mlo_y[r] = static_cast<int>(-floor_div<int64_t>(r - g.PH, g.SH));
    my = std::max<int64_t>(my, floor_div<int64_t>(g.Hout - 1 + g.PH - r, g.SH) - p.mlo_y[r] + 1);
  }
  for (int r = 0; r < p.SW; ++r) {
    p.mlo_x[r] = static_cast<int>(-floor_div<int64_t>(r - g.PW, g.SW));
    mx = std::max<int64_t>(mx, floor_div<int64_t>(g.Wout - 1 + g.PW - r, g.SW) - p.mlo_x[r] + 1);
  }
  if (my <= 0 || mx <= 0) return false;
  p.halo_y = static_cast<int>((ceil_div(p.KH, p.SH) - 1) * p.DH);
  p.halo_x = static_cast<int>((ceil_div(p.KW, p.SW) - 1) * p.DW);
  const int halo_x = p.halo_x, halo_y = p.halo_y;
  // Groups: the phases, or (paired column phases: NCHW output at SW == 2 beyond L2, see "Paired
  // phases" and ws_pairs_mode) the phase rows.
  p.pair_x = nchw_out && p.SW == 2 &&
             (ws_pairs_mode() == KnobMode::kAll || (ws_pairs_mode() == KnobMode::kRule && !ws_nchw_out_in_l2(g, elem)));
  p.ngroups = p.pair_x ? p.SH : p.nphases;
  int max_group_taps = 0;
  for (int q = 0; q <= p.ngroups; ++q) {
    p.grp_tap0[q] = p.ph_tap0[p.pair_x ? q * p.SW : q];
    if (q > 0) max_group_taps = std::max(max_group_taps, p.grp_tap0[q] - p.grp_tap0[q - 1]);
  }
  p.w_bytes = max_group_taps * 2 * kCoTile * 16;
  // Paired: the staged tile holds both phases' columns, from the lower of their first ones.
  const int pair_dx = p.pair_x ? std::abs(p.mlo_x[1] - p.mlo_x[0]) : 0;
  p.mx_lo = std::min(p.mlo_x[0], p.pair_x ? p.mlo_x[1] : p.mlo_x[0]);
  // The tile shape of least cost per image and phase, then the fewest tiles, then the smallest
  // staged tile. Cost: the MMA columns times the taps of a phase (on average), plus
  // kTileCostTaps x 256 per tile for its loads and stores. Without short tiles every tile's MMAs
  // are 256 columns wide, so this is the fewest tiles. Short tiles: dcgan_g4's 16 x 16 phase
  // images need 16 rows of 17 slots, 272 > 256: two tiles per image and phase, half their MMA
  // columns empty; with a 32-column last row (one valid row of 16), 256 + 32 (H100 run QB: bf16
  // 46 -> 41 us, where this model predicted 40). Wide tiles take such an image in one tile.
  const bool short_tiles = ws_short_tiles_allowed();
  const KnobMode wide_tiles = ws_wide_tiles();
  const int64_t taps_per_phase = ceil_div(p.ntaps, p.nphases);
  // The best plan of each kind: [0] 256-column tiles (short ones where allowed), [1] wide tiles
  // (every tile kSlots + kWideExtra columns). Wide tiles: dcgan_g4's phase images in one tile of
  // 16 rows x 17 slots (272 <= 288), cost 4 x 288 + 9 x 256 against 4 x (256 + 32) + 2 x 9 x 256.
  struct Choice {
    int64_t cost = -1, tiles = -1;
    int tx = 0, ty = 0, P = 0, rows = 0, short_n = kSlots, tile_slots = kSlots;
  } best[2];
  // 16-bit NCHW output at SW == 1 (one column phase: a tile row's outputs are consecutive in
  // memory): the epilogue stores runs of V outputs per thread where each tile row's run starts
  // and ends on a V-aligned output: the output width, the tile width and the first tile's column
  // (ox0 of tile 0) multiples of V, and the pitch too (padded up to one: the slots past TX +
  // halo_x are loaded and multiplied but never stored), so that both halves of a tile (slots 0
  // and 128) start rows aligned. The cost model then adds kNchwStoreCost / V per tile for its
  // stores, as for paired tiles, whose element stores' instructions bounded the NCHW epilogue
  // (run SD): a tile's store loop runs over all its slots, valid or not, so the count follows
  // the tiles. Measured (H100 run TC, bf16 NCHW forward through forward.cu's route, kernel + copy,
  // us, element stores -> runs): kb1_71 713 -> 599 (V = 2), kb1_78 895 -> 765 (8), kb1_69 1371 ->
  // 1166 (4), kb1_57 2402 -> 2062, kb2_10 2558 -> 2005, kb1_65 897 -> 886. Not float32: there the
  // runs' plans were level or slower (kb1_71 951 -> 964, kb1_78 1704 -> 1728; kb2_93's grad_input
  // kernel 671 -> 752 us on a short-tile plan), and only kb1_69 gained (2327 -> 2214).
  const bool row_runs = nchw_out && p.SW == 1 && elem == 2 && ws_nchw_vec_allowed();
  const int ox_base = p.SW * p.mlo_x[0] - p.PW;  // tile 0's first output column (SW == 1)
  const auto row_vec_for = [&](int tx) {
    if (!row_runs) return 1;
    for (int v = 16 / elem; v > 1; v /= 2) {
      if (p.OW % v == 0 && tx % v == 0 && ox_base % v == 0) return v;
    }
    return 1;
  };
  // Widths only_tx (> 0), or every width (0).
  const auto search = [&](int only_tx) {
    for (int wide = 0; wide < 2; ++wide) {
      if (wide == 1 && wide_tiles == KnobMode::kNever) break;
      const int cols = wide ? kSlots + kWideExtra : kSlots;
      for (int tx = only_tx > 0 ? only_tx : 1; tx + halo_x <= kSlots && (only_tx == 0 || tx == only_tx); ++tx) {
        const int vec = row_vec_for(tx);
        const int P = static_cast<int>(round_up(tx + halo_x, vec)), ty = cols / P;
        const int rows = ty + halo_y;
        if (ty < 1 || rows > 256) continue;
        const int64_t trows = ceil_div(my, ty), tcols = ceil_div(mx, tx);
        const int64_t tiles = trows * tcols;
        int n_last = cols;
        if (short_tiles && !wide) {
          const int64_t last_slots = (my - (trows - 1) * ty - 1) * P + tx;  // through the last valid output
          for (const int n : {128, 64, 32}) {
            if (last_slots <= n) n_last = n;
          }
        }
        const int64_t cost = taps_per_phase * tcols * ((trows - 1) * cols + n_last) + kTileCostTaps * kSlots * tiles +
                             (row_runs ? tiles * (kNchwStoreCost / vec) : 0);
        Choice& b = best[wide];
        if (b.cost < 0 || cost < b.cost || (cost == b.cost && (tiles < b.tiles || (tiles == b.tiles && P * rows < b.P * b.rows)))) {
          b = Choice{cost, tiles, tx, ty, P, rows, wide ? kSlots : n_last, cols};
        }
      }
    }
  };
  // Paired phases: kPairSlots columns per phase, no short or wide tiles. A tile of one row may be
  // up to kPairSlots wide whatever its pitch (an MMA's slots never leave the row); more rows need
  // TY x P <= kPairSlots. The epilogue stores V outputs at once where every run of a tile row
  // starts and ends on a V-aligned output (paired_vec_for). Cost: the MMA columns times the group's
  // taps plus kTileCostTaps x 256 per tile, as above, plus kNchwStoreCost / V per tile for its
  // stores. Run SD (H100, kb2_2 / kb2_5 / kb2_93 forward, element stores, tile widths 16 - 128):
  // the kernel's time followed the tile count within ~5% whatever the tiles' rows (kb2_93 float32:
  // 39 tiles per image and phase row 0.93 ms, 44 1.05, 50 1.18, 65 1.52): the per-tile cost is its
  // 512 store instructions per consumer, not its MMAs (bf16 as slow as float32).
  const auto paired_vec_for = [&](int tx, int P, int ty) {
    for (int v = 16 / elem; v > 1; v /= 2) {
      if (p.OW % v == 0 && (2 * tx) % v == 0 && (ty == 1 || (2 * P) % v == 0)) return v;
    }
    return 1;
  };
  const auto search_paired = [&](int only_tx) {
    for (int tx = only_tx > 0 ? only_tx : 1; tx <= kPairSlots && (only_tx == 0 || tx == only_tx); ++tx) {
      const int P = tx + halo_x + pair_dx;
      const int ty = P <= kPairSlots ? kPairSlots / P : 1, rows = ty + halo_y;
      if (rows > 256 || P > 256) continue;
      const int64_t tiles = ceil_div(my, ty) * ceil_div(mx, tx);
      const int vec = paired_vec_for(tx, P, ty);
      const int64_t cost = tiles * (max_group_taps * kPairSlots + kTileCostTaps * kSlots + kNchwStoreCost / vec);
      Choice& b = best[0];
      if (b.cost < 0 || cost < b.cost || (cost == b.cost && P * rows < b.P * b.rows)) {
        b = Choice{cost, tiles, tx, ty, P, rows, kSlots, kPairSlots};
      }
    }
  };
  // A forced width (measurement knob CONVT_FWD_WS_TX) where it gives a plan, else every width.
  if (p.pair_x) {
    if (ws_forced_tile_width() > 0) search_paired(ws_forced_tile_width());
    if (best[0].cost < 0) search_paired(0);
  } else {
    if (ws_forced_tile_width() > 0) search(ws_forced_tile_width());
    if (best[0].cost < 0 && best[1].cost < 0) search(0);
  }
  // (The resident weights of one channel tile would need nchunks x w_bytes of shared memory.)
  const bool f32_weights_streamed = elem == 4 && static_cast<int64_t>(p.nchunks) * p.w_bytes > kSmemLimit;
  const double wide_gain = f32_weights_streamed ? kWideGainStreamed : kWideGain;
  const bool take_wide =
      best[1].cost >= 0 && (best[0].cost < 0 || (wide_tiles == KnobMode::kAll ? best[1].cost < best[0].cost
                                                                               : best[1].cost <= wide_gain * best[0].cost));
  const Choice& c = best[take_wide ? 1 : 0];
  const int64_t best_tiles = c.tiles;
  p.TX = c.tx;
  p.TY = c.ty;
  p.P = c.P;
  p.rows = c.rows;
  p.short_n = c.short_n;
  p.tile_slots = c.tile_slots;
  p.out_vec = p.pair_x ? paired_vec_for(c.tx, c.P, c.ty) : row_vec_for(c.tx);
  // (Paired: 64 channels x kPairPitch floats, the same room as a 256-slot 16-bit tile.)
  p.staging_bytes = (p.pair_x ? kSlots : p.tile_slots) * kStagePitch * 2;
  if (best_tiles < 0) return false;
  if (p.P < 1 || p.P > kSmallDivLimit) return false;  // (the search keeps P <= 256 + a vector)
  p.P_div = small_div_multiplier(p.P);
  // channels_last epilogues: a slot's output offset from its tile's first output, (SH ty OW + SW tx) Cout
  // elements, in 32 bits (fewer instructions per store than the 64-bit pixel index: the consumers' issue
  // bounds this kernel). Tiles whose extent does not fit are left to the other kernels.
  {
    const int64_t row_step = static_cast<int64_t>(p.SH) * p.OW * p.Cout, col_step = static_cast<int64_t>(p.SW) * p.Cout;
    const bool fits = (p.TY + 1) * row_step + (p.TX + 1) * col_step < (int64_t(1) << 31);
    if (!nchw_out && !fits) return false;
    p.cl_row_step = fits ? static_cast<int>(row_step) : 0;  // (unused by the NCHW epilogues)
    p.cl_col_step = fits ? static_cast<int>(col_step) : 0;
  }
  p.tiles_x = static_cast<int>(ceil_div(mx, p.TX));
  p.tiles_y = static_cast<int>(ceil_div(my, p.TY));
  const int64_t ptiles = static_cast<int64_t>(p.N) * p.tiles_y * p.tiles_x;
  if (ptiles >= (int64_t(1) << 31) / 2) return false;
  p.ptiles = static_cast<int>(ptiles);
  // Every slot an MMA reads (tile_slots + the largest tap offset) lies inside the tile.
  const int max_off = halo_y * p.P + halo_x + pair_dx;
  p.tile_bytes = static_cast<int>(
      round_up(static_cast<int64_t>(std::max(p.P * p.rows, p.tile_slots + max_off)) * kSlotBytes, kSwizzleRepeat));
  // Resident weights: the weights cross L2 once per block instead of once per tile (kb1_57
  // streamed 72 KB of weights per tile against 46 KB of input). Measured (H100, run JI, bf16
  // forward, streamed -> resident): kb1_57 1.355 -> 1.303 ms, kb1_78 0.684 -> 0.608, kb2_10
  // 1.448 -> 1.305, kb1_69 (3 stages) 1.047 -> 1.012. But they take the room of input stages:
  // kb2_2 / kb2_5's grad_input (16 chunks of 4 taps) had 2 stages left instead of 6, and their
  // bf16 channels_last training steps lost 9-10% (run JJ against JF). So resident only where
  // it keeps min(4, the streamed count) stages; else each stage carries its chunk's weights
  // (also where they cannot be resident: kb1_65's 21 taps x 64 x 64 channels are 168 KB).
  const int64_t resident_bytes = static_cast<int64_t>(p.nchunks) * p.w_bytes;
  // NCHW input: a ring of raw boxes (two where a chunk has kRawRingMinTaps taps or more, else one per
  // stage: see "NCHW input"), whose rows start on a 16-byte column up to 16 / elem - 1 before the tile's
  // first (nchw_box_x) and are whole 16-byte pieces (the tensor map's box rows).
  p.nchw_in = nchw_in;
  p.raw_pitch = nchw_in ? static_cast<int>(round_up(p.P + 16 / elem - 1, 16 / elem)) : 0;
  if (nchw_in && p.raw_pitch > 256) return false;  // (a box dimension is at most 256)
  p.raw_bytes = nchw_in ? static_cast<int>(round_up(static_cast<int64_t>(kSlotBytes) * p.rows * p.raw_pitch, kSwizzleRepeat)) : 0;
  const bool two_raw_boxes = nchw_in && max_group_taps >= kRawRingMinTaps;
  const int64_t in_stage = p.tile_bytes + (nchw_in && !two_raw_boxes ? p.raw_bytes : 0);  // (below: the room a stage takes)
  const int64_t raw_ring = two_raw_boxes ? 2 * static_cast<int64_t>(p.raw_bytes) : 0;  // besides the stages
  auto stages_fitting = [&](int64_t fixed, int64_t stage) {
    for (int s = kMaxStages; s >= 2; --s) {
      if (raw_ring + fixed + s * stage <= kSmemLimit) return s;
    }
    return 0;
  };
  // float: staged where the staging tiles leave as many stages as the register stores would
  // (up to 4), else stored from the registers (CONVT_FWD_WS_F32_STORE=registers always).
  p.nchw_out = nchw_out;
  p.f32_staged = elem == 2 || nchw_out;
  if (elem == 4 && !nchw_out && ws_f32_staged_allowed()) {
    const int with = stages_fitting(2 * p.staging_bytes, p.w_bytes + in_stage);
    const int without = stages_fitting(0, p.w_bytes + in_stage);
    p.f32_staged = with >= 2 && with >= std::min(4, without);
  }
  // Stages (and whether the weights are resident) with `staging` bytes of staging tiles.
  const auto ring = [&](int64_t staging, bool& resident_out) {
    const int streamed = stages_fitting(staging, p.w_bytes + in_stage);
    const int resident =
        ws_weights_resident_allowed() ? stages_fitting(resident_bytes + staging, in_stage) : 0;
    resident_out = resident >= 2 && resident >= std::min(4, streamed);
    return resident_out ? resident : streamed;
  };
  // float NCHW output (one phase per block): a quarter tile staged at a time where that leaves more
  // stages. kb1_78 (21 taps, 43 KB of weights per chunk, streamed): two stages with the half-tile
  // staging tiles (2 x 36 KB), three with quarters; its kernel took 1.31 ms against 0.69 with
  // channels_last output and four stages (run TC). Measured (run TI, the NCHW forward through the
  // route, device us, halves -> quarters): kb1_78 1741 -> 1453, kb1_71 1041 -> 983, kb1_65 1796 -> 1589;
  // kb1_69 (3 -> 4 stages) 2312 -> 2372, within the spread between processes.
  p.nchw_quarters = false;
  if (elem == 4 && nchw_out && !p.pair_x && ws_nchw_quarters_mode() != KnobMode::kNever) {
    bool r_half = false, r_quarter = false;
    const int half_stages = ring(2 * p.staging_bytes, r_half);
    const int quarter_stages = ring(2 * static_cast<int64_t>(kNchwQuarterBytes), r_quarter);
    p.nchw_quarters = ws_nchw_quarters_mode() == KnobMode::kAll || quarter_stages > half_stages;
    if (p.nchw_quarters) p.staging_bytes = kNchwQuarterBytes;
  }
  // 16-bit channels_last output: half a tile staged at a time where the whole staging tiles leave only 2
  // stages and halves leave more (two more consumer barriers per tile). Measured (H100 run YC, bf16
  // kernel us, whole -> half): kb1_65 (21 taps, weights streamed, 2 -> 3 stages) 661 -> 538 forward,
  // 712 / 702 -> 599 / 586 its grad_input kernels; kb1_69 (15 taps, resident, 3 -> 6 stages) 836 -> 867
  // (fp16 930 -> 880): more than 3 stages bought nothing, as in run TI. Where the stages stay the same,
  // halves cost up to ~5% (kb1_57 1040 -> 1099) or nothing (kb2_2, kb2_10, kb1_78).
  p.half_staged = false;
  if (elem == 2 && !nchw_out && ws_half_staging_mode() != KnobMode::kNever) {
    bool r_whole = false, r_half = false;
    const int whole_stages = ring(2 * p.staging_bytes, r_whole);
    const int half_stages = ring(2 * static_cast<int64_t>(kHalfStagingBytes), r_half);
    p.half_staged = ws_half_staging_mode() == KnobMode::kAll || (whole_stages < 3 && half_stages > whole_stages);
    if (p.half_staged) p.staging_bytes = kHalfStagingBytes;
  }
  const int64_t staging = p.f32_staged ? 2 * p.staging_bytes : 0;
  p.stages = ring(staging, p.resident);
  if (p.stages == 0) return false;
  p.stage_bytes = static_cast<int>(p.resident ? p.tile_bytes : p.w_bytes + p.tile_bytes);
  p.stages_offset = p.resident ? static_cast<int>(resident_bytes) : 0;
  p.staging_offset = p.stages_offset + p.stages * p.stage_bytes;
  p.raw_offset = static_cast<int>(p.staging_offset + staging);
  p.raw_stages = two_raw_boxes ? 2 : p.stages;
  p.smem_bytes = p.raw_offset + p.raw_stages * p.raw_bytes + kSwizzleRepeat;
  return true;
}

template <typename T>
void launch_typed(const at::Tensor& input, const at::Tensor& weight, const std::optional<at::Tensor>& bias,
                  const at::Tensor& output, WsParams& p, const WsMaps& maps) {
  auto stream = at::cuda::getCurrentCUDAStream();
  const int64_t total = static_cast<int64_t>(p.nchunks) * (kSlotBytes / sizeof(T)) * p.co_tiles * kCoTile * p.ntaps;
  at::Tensor wp = at::empty({total}, weight.options());
  {
    CONVT_TRACE("cuda.forward.wgmma_ws.pack_weights");
    const int threads = 256;
    const int64_t blocks = std::min<int64_t>(ceil_div(total, threads), 4096);
    pack_weights_ws<T><<<static_cast<unsigned>(blocks), threads, 0, stream>>>(
        weight.data_ptr<T>(), wp.data_ptr<T>(), p,
        WeightStrides(weight), total);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  }
  CONVT_TRACE("cuda.forward.wgmma_ws.launch");
  auto kernel = p.nchw_in ? (p.pair_x                 ? wgmma_ws_fwd_kernel<T, kTilesPaired, true, true>
                             : p.tile_slots > kSlots ? wgmma_ws_fwd_kernel<T, kTilesWide, true, true>
                             : p.short_n < kSlots    ? wgmma_ws_fwd_kernel<T, kTilesShort, true, true>
                                                     : wgmma_ws_fwd_kernel<T, kTilesFull, true, true>)
                : p.pair_x ? wgmma_ws_fwd_kernel<T, kTilesPaired, true, false>
                : p.nchw_out ? (p.tile_slots > kSlots ? wgmma_ws_fwd_kernel<T, kTilesWide, true, false>
                              : p.short_n < kSlots  ? wgmma_ws_fwd_kernel<T, kTilesShort, true, false>
                                                    : wgmma_ws_fwd_kernel<T, kTilesFull, true, false>)
                           : (p.tile_slots > kSlots ? wgmma_ws_fwd_kernel<T, kTilesWide, false, false>
                              : p.short_n < kSlots  ? wgmma_ws_fwd_kernel<T, kTilesShort, false, false>
                                                    : wgmma_ws_fwd_kernel<T, kTilesFull, false, false>);
  C10_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, p.smem_bytes));
  const int sms = at::cuda::getCurrentDeviceProperties()->multiProcessorCount;
  // Each block keeps one channel tile and one phase. A channel tile's share of the
  // multiprocessors goes to the phases in proportion to their work per tile, taps + 9 (at least
  // one block each, at most one per pixel tile). The 9 (kTileCostTaps): a tile's input loads and
  // output stores cost about nine taps' MMAs, fitted on kb2_2 (k3 s2: phases of 4, 2, 2 and 1 taps; H100,
  // bf16 forward): equal shares 0.813 ms (run KC), shares in proportion to taps alone 1.469 ms
  // (KD: the 1-tap phase's 14 blocks wrote as much output per tile as the 4-tap phase's 58),
  // taps + 9 0.846 ms (KE; predicted 0.71). The kernel is bound by the output's bandwidth here
  // rather than by any phase's blocks; the weights keep a compute-bound phase from starving.
  // Paired phases: a group is a phase row, its work both column phases'.
  const int per_tile = std::max(1, sms / p.co_tiles);
  const int total_work = p.ntaps + kTileCostTaps * p.nphases;
  const int nph = p.pair_x ? p.SW : 1;
  p.grp_block0[0] = 0;
  for (int q = 0; q < p.ngroups; ++q) {
    const int work = p.grp_tap0[q + 1] - p.grp_tap0[q] + kTileCostTaps * nph;
    const int nb = std::max(1, std::min(p.ptiles, per_tile * work / total_work));
    p.grp_block0[q + 1] = p.grp_block0[q] + nb;
  }
  const int blocks = p.co_tiles * p.grp_block0[p.ngroups];
  const T* bias_ptr = (bias.has_value() && bias->defined()) ? bias->data_ptr<T>() : nullptr;
  kernel<<<blocks, kThreads, p.smem_bytes, stream>>>(reinterpret_cast<const uint4*>(wp.data_ptr<T>()), bias_ptr,
                                                     output.data_ptr<T>(), p, maps);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

// Plans by problem. plan_ws scans every tile width of two tile kinds (a copy of its loop: 1.56 us
// per call on the CI machine's CPU before wide tiles, 2.93 after), and a layer asked for it again on
// every call (twice through forward.cu's channels_last route: wgmma_ws_plans, then the launch).
// A plan depends on these alone: the knobs it reads are read once per process, and it reads no
// device property.
struct WsPlanKey {
  Geometry g;
  int elem, res_n, res_ch;
  bool nchw_out, nchw_in;
  bool operator==(const WsPlanKey& o) const {
    return std::memcmp(&g, &o.g, sizeof(Geometry)) == 0 && elem == o.elem && res_n == o.res_n && res_ch == o.res_ch &&
           nchw_out == o.nchw_out && nchw_in == o.nchw_in;
  }
};
static_assert(std::is_trivially_copyable_v<Geometry> && sizeof(Geometry) % sizeof(int64_t) == 0,
              "Geometry compared by its bytes: int64 fields, no padding");
struct WsPlanKeyHash {
  size_t operator()(const WsPlanKey& k) const {
    int64_t f[sizeof(Geometry) / sizeof(int64_t)];
    std::memcpy(f, &k.g, sizeof(Geometry));
    size_t h = std::hash<int>()(k.elem * 131 + k.res_n * 17 + k.res_ch + (k.nchw_out ? 1 << 20 : 0) +
                                (k.nchw_in ? 1 << 21 : 0));
    for (const int64_t v : f) h = h * 1000003u ^ std::hash<int64_t>()(v);
    return h;
  }
};
constexpr size_t kMaxWsPlans = 1024;  // past this, plans are made per call (no unbounded growth)

bool cached_plan(const Geometry& g, int elem, int res_n, int res_ch, bool nchw_out, bool nchw_in, WsParams& p) {
  struct Entry {
    bool ok;
    WsParams p;
  };
  static std::mutex mutex;
  static std::unordered_map<WsPlanKey, Entry, WsPlanKeyHash> plans;
  const WsPlanKey key{g, elem, res_n, res_ch, nchw_out, nchw_in};
  {
    const std::lock_guard<std::mutex> lock(mutex);
    const auto it = plans.find(key);
    if (it != plans.end()) {
      p = it->second.p;
      return it->second.ok;
    }
  }
  p = WsParams{};
  const bool ok = plan_ws(g, elem, res_n, res_ch, nchw_out, nchw_in, p);  // may throw (a malformed knob): nothing cached
  const std::lock_guard<std::mutex> lock(mutex);
  if (plans.size() < kMaxWsPlans) plans.emplace(key, Entry{ok, p});
  return ok;
}

// The checks both entry points share (the kernel's reach) and the plan.
bool ws_admit(const Geometry& g, at::ScalarType dtype, int res_n, int res_ch, bool nchw_out, bool nchw_in, int& elem,
              WsParams& p) {
  if (!ws_allowed()) return false;
  // float: TF32 (forward_cuda does not come here for strict fp32).
  if (dtype != at::kBFloat16 && dtype != at::kHalf && !(dtype == at::kFloat && ws_tf32_allowed())) return false;
  elem = dtype == at::kFloat ? 4 : 2;
  // Cout: whole 16-byte pieces per pixel (the last 64-channel tile may be partial: at
  // Cout = 32, kb1_71 / kb1_78, half of each MMA multiplies zeros, and still beats the general
  // kernel's tiles, which are 64 channels too).
  if (g.groups != 1 || (res_n == 0 && g.Cin % (kSlotBytes / elem) != 0) || g.Cout % 8 != 0) return false;
  if (g.KH * g.KW > kWsMaxTaps) return false;
  // Stride: phases of dilation-1 kernels with every phase holding taps (K >= S). Dilation with
  // stride (the gcd rule's phases) and K < S (phases of bias only) stay with the general kernel.
  if (g.SH > 1 || g.SW > 1) {
    if (g.SH > kWsMaxStride || g.SW > kWsMaxStride || g.DH != 1 || g.DW != 1 || g.KH < g.SH || g.KW < g.SW)
      return false;
  }
  if (g.H >= (int64_t(1) << 31) || g.W >= (int64_t(1) << 31) || g.Hout >= (int64_t(1) << 30) ||
      g.Wout >= (int64_t(1) << 30) || g.N >= (int64_t(1) << 31))
    return false;
  return cached_plan(g, elem, res_n, res_ch, nchw_out, nchw_in, p);
}

void launch_dispatch(at::ScalarType dtype, const at::Tensor& input, const at::Tensor& weight,
                     const std::optional<at::Tensor>& bias, const at::Tensor& output, WsParams& p, const WsMaps& maps) {
  if (dtype == at::kFloat) {
    launch_typed<float>(input, weight, bias, output, p, maps);
  } else if (dtype == at::kBFloat16) {
    launch_typed<c10::BFloat16>(input, weight, bias, output, p, maps);
  } else {
    launch_typed<c10::Half>(input, weight, bias, output, p, maps);
  }
}

// The output's form: channels_last (16-byte pixel stores: its start 16-byte aligned), or
// NCHW-contiguous (kNchwOut's element stores); false for any other layout.
bool ws_output_form(const at::Tensor& output, bool& nchw_out) {
  nchw_out = !channels_last_dense(output);
  if (nchw_out) return output.dim() == 4 && output.is_contiguous();
  return reinterpret_cast<uintptr_t>(output.data_ptr()) % 16 == 0;
}

// The NCHW epilogue's runs of p.out_vec outputs need an output start aligned to them (a view may
// not be): else one element per store.
void keep_out_vec_aligned(const at::Tensor& output, int elem, WsParams& p) {
  if (reinterpret_cast<uintptr_t>(output.data_ptr()) % (static_cast<uintptr_t>(p.out_vec) * elem) != 0) p.out_vec = 1;
}

// An NCHW input the kernel can read in place through a tensor map: NCHW-contiguous (not also
// channels_last-dense: that one takes the channels_last map), rows of whole 16-byte pieces, 16-byte
// aligned (the map's global strides and address).
bool nchw_input_readable(const at::Tensor& input) {
  return ws_nchw_in_allowed() && input.dim() == 4 && input.is_contiguous() && !channels_last_dense(input) &&
         (input.size(3) * input.element_size()) % 16 == 0 && reinterpret_cast<uintptr_t>(input.data_ptr()) % 16 == 0;
}

}  // namespace

bool wgmma_ws_reads_nchw(const at::Tensor& input, const Geometry& g, bool nchw_out) {
  int elem = 0;
  WsParams p;
  return nchw_out && nchw_input_readable(input) && ws_admit(g, input.scalar_type(), 0, 0, true, true, elem, p);
}

bool wgmma_ws_nchw_out_fast(const Geometry& g, at::ScalarType dtype) {
  return (g.SH == 1 && g.SW == 1) || ws_nchw_out_in_l2(g, c10::elementSize(dtype)) ||
         (g.SW == 2 && ws_pairs_mode() != KnobMode::kNever);
}

bool wgmma_ws_plans(const Geometry& g, at::ScalarType dtype, bool nchw_out) {
  int elem = 0;
  WsParams p;
  return ws_admit(g, dtype, 0, 0, nchw_out, false, elem, p);
}

bool launch_wgmma_ws(const at::Tensor& input, const at::Tensor& weight, const std::optional<at::Tensor>& bias,
                     const Geometry& g, const at::Tensor& output, bool allow_nchw_in) {
  CONVT_TRACE("cuda.forward.wgmma_ws");
  const auto dtype = input.scalar_type();
  if (!wgmma_available(input)) return false;
  // The input channels_last, or (allow_nchw_in) NCHW read in place; the output channels_last, or
  // NCHW (forward.cu's route).
  const bool nchw_in = !channels_last_dense(input);
  if (nchw_in && !(allow_nchw_in && nchw_input_readable(input))) return false;
  bool nchw_out = false;
  if (!ws_output_form(output, nchw_out) || (nchw_in && !nchw_out)) return false;  // (kNchwIn: NCHW out only)
  if (reinterpret_cast<uintptr_t>(input.data_ptr()) % 16 != 0) return false;
  if (bias.has_value() && bias->defined() && bias->stride(0) != 1) return false;
  int elem = 0;
  WsParams p;
  if (!ws_admit(g, dtype, 0, 0, nchw_out, nchw_in, elem, p)) return false;
  WsMaps maps{};
  {
    CONVT_TRACE("cuda.forward.wgmma_ws.tensor_map");
    const uint64_t es = elem, C = g.Cin, W = g.W, H = g.H, N = g.N;
    const uint32_t chunk_ch = static_cast<uint32_t>(kSlotBytes / elem);
    if (nchw_in) {
      // NCHW: a box is one chunk's channels of the tile's rows x raw_pitch columns, unswizzled
      // (the transposers swizzle it into the stage).
      const uint64_t dims[4] = {W, H, C, N};
      const uint64_t strides[3] = {W * es, H * W * es, C * H * W * es};
      const uint32_t box[4] = {static_cast<uint32_t>(p.raw_pitch), static_cast<uint32_t>(p.rows), chunk_ch, 1};
      if (!tma::encode_4d(&maps.m[0], tma::data_type(dtype), input.data_ptr(), dims, strides, box, CU_TENSOR_MAP_SWIZZLE_NONE))
        return false;
    } else {
      const uint64_t dims[4] = {C, W, H, N};
      const uint64_t strides[3] = {C * es, W * C * es, H * W * C * es};
      const uint32_t box[4] = {chunk_ch, static_cast<uint32_t>(p.P), static_cast<uint32_t>(p.rows), 1};
      if (!tma::encode_4d(&maps.m[0], tma::data_type(dtype), input.data_ptr(), dims, strides, box, CU_TENSOR_MAP_SWIZZLE_32B))
        return false;
    }
  }
  keep_out_vec_aligned(output, elem, p);
  launch_dispatch(dtype, input, weight, bias, output, p, maps);
  return true;
}

bool launch_wgmma_ws_residues(const at::Tensor& base, const WsResidueInput& in, const at::Tensor& weight,
                              const Geometry& g, const at::Tensor& output) {
  CONVT_TRACE("cuda.forward.wgmma_ws_residues");
  const auto dtype = base.scalar_type();
  // A forced forward family (test knob CONVT_FWD_PATH, forward.cu): the copied planes go to it.
  static const bool forced_path = std::getenv("CONVT_FWD_PATH") != nullptr;
  if (forced_path) return false;
  if (dtype == at::kFloat && !allow_tf32_conv()) return false;  // strict fp32: mma.sync's 3xTF32
  if (!wgmma_available(base) || in.n < 1 || in.n > kWsMaxResidues) return false;
  // grad_input channels_last, or NCHW (an NCHW layer's grad_input).
  bool nchw_out = false;
  if (!channels_last_dense(base) || g.Cin != in.n * in.C || !ws_output_form(output, nchw_out)) return false;
  const int64_t es = base.element_size();
  if ((in.C * es) % 16 != 0 || reinterpret_cast<uintptr_t>(base.data_ptr()) % 16 != 0) return false;
  int elem = 0;
  WsParams p;
  if (!ws_admit(g, dtype, static_cast<int>(in.n), static_cast<int>(in.C), nchw_out, false, elem, p)) return false;
  WsMaps maps{};
  {
    CONVT_TRACE("cuda.forward.wgmma_ws.tensor_map");
    for (int r = 0; r < in.n; ++r) {
      const WsResidue& rs = in.r[r];
      if (rs.W <= 0 || rs.H <= 0 || std::abs(rs.dx) >= (int64_t(1) << 29) || std::abs(rs.dy) >= (int64_t(1) << 29))
        return false;
      p.res_dx[r] = static_cast<int>(rs.dx);
      p.res_dy[r] = static_cast<int>(rs.dy);
      const uint64_t dims[4] = {static_cast<uint64_t>(in.C), static_cast<uint64_t>(rs.W), static_cast<uint64_t>(rs.H),
                                static_cast<uint64_t>(g.N)};
      const uint64_t strides[3] = {static_cast<uint64_t>(in.stride_x * es), static_cast<uint64_t>(in.stride_y * es),
                                   static_cast<uint64_t>(in.stride_n * es)};
      const uint32_t box[4] = {static_cast<uint32_t>(kSlotBytes / elem), static_cast<uint32_t>(p.P), static_cast<uint32_t>(p.rows), 1};
      const char* ptr = static_cast<const char*>(base.data_ptr()) + rs.offset * es;
      if (!tma::encode_4d(&maps.m[r], tma::data_type(dtype), ptr, dims, strides, box, CU_TENSOR_MAP_SWIZZLE_32B)) return false;
    }
  }
  keep_out_vec_aligned(output, elem, p);
  launch_dispatch(dtype, base, weight, std::nullopt, output, p, maps);
  return true;
}

}  // namespace fwd
}  // namespace convt
