// Shared pieces of the backward kernel families (backward_grad_input.cu,
// backward_grad_weight.cu, backward_grad_bias.cu), and the launchers they
// export to backward.cu.
//
// Conventions of every backward launcher:
//  - grad_output, input and the weight operand arrive NCHW-contiguous
//    (backward.cu makes contiguous copies where needed); the outputs they fill
//    (grad_input, grad_weight) may have any strides and are written through them.
//  - Accumulation is in acc_t<T>: float for float/half/bfloat16, double for double.
//  - Every reduction has a fixed order (no atomics): the same inputs give
//    bit-identical outputs on the same device.
//  - Launches go to the current stream, each followed by C10_CUDA_KERNEL_LAUNCH_CHECK.
#pragma once

#include <ATen/ATen.h>
#include <ATen/OpMathType.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>

#include <cstdint>
#include <limits>

#include "../geometry.h"
#include "../host_trace.h"
#include "layout.h"

namespace convt {
namespace bwd {

template <typename T>
using acc_t = at::opmath_type<T>;

// The four strides of a 4-D output written by a kernel epilogue.
struct Strides4 {
  int64_t s0, s1, s2, s3;
};

inline Strides4 strides_of(const at::Tensor& t) {
  return Strides4{t.stride(0), t.stride(1), t.stride(2), t.stride(3)};
}

// True when every index of a problem with `count` elements fits in int32
// (kernels then decompose flat indices with 32-bit divisions, which are ~3x cheaper).
inline bool fits_int32(int64_t count) {
  return count < static_cast<int64_t>(std::numeric_limits<int32_t>::max());
}

inline int sm_count() {
  return at::cuda::getCurrentDeviceProperties()->multiProcessorCount;
}

// Which kernel family a gradient uses. kAuto picks by shape (backward.cu);
// the environment variable CONVT_BWD_PATH=direct|gemm forces one (tests use it
// to run both families on every case).
enum class Path { kDirect, kGemm, kAsForward };

// How the GEMM kernels multiply (backward_tile.cuh): CUDA-core FMA (float64, or any
// dtype when forced), TF32 tensor cores (float with allow_tf32, bf16, fp16), or
// 3xTF32 tensor cores (fp32-accurate float).
enum class Mma { kSimt, kTf32, k3xTf32 };

// ---- layouts (layout.h) -------------------------------------------------------------
using convt::to_nchw;

using convt::channels_last_only;

// ---- grad_input (backward_grad_input.cu) --------------------------------------------
// grad_input = conv2d(grad_output, weight, stride, padding, dilation, groups).
// `wt` is the weight permuted to [groups, KH*KW, Cout_g, Cin_g] (contiguous) for the
// GEMM path; `w` is the weight [Cin, Cout_g, KH, KW] contiguous for the direct path.
void grad_input_gemm(const at::Tensor& go, const at::Tensor& wt, const Geometry& g,
                     const at::Tensor& grad_input, Mma mode);
void grad_input_direct(const at::Tensor& go, const at::Tensor& w, const Geometry& g,
                       const at::Tensor& grad_input);

// ---- grad_input through the forward kernels (backward_grad_input_as_forward.cu) -------
// grad_input as a stride-1 transposed convolution of grad_output's residue planes (see
// AsForwardAxis in geometry.h), run by forward_cuda. grad_output may have any strides.
// `grad_input_as_forward_shape`: the flattened kernel's taps (KH' x KW') and the share of
// its slots that hold a real tap (density: 1 at stride 1 and whenever every residue has as
// many taps; 0 when the stride is too large for the plan).
struct AsForwardShape {
  int64_t taps;
  double density;
  bool copies_planes;  // grad_output goes through the plane copy
};
AsForwardShape grad_input_as_forward_shape(const Geometry& g);
// Whether the plane copy reads grad_output channels_last in place and writes channels_last
// planes (both gradients' tensors channels_last, the planes' channel groups whole 16-byte
// quanta: then the forward reads them in place too); else it reads grad_output as NCHW.
bool grad_input_as_forward_planes_cl(const at::Tensor& grad_output, const at::Tensor& grad_input,
                                     const Geometry& g);
// Whether grad_input_as_forward reads channels_last grad_output's residues in place (no plane
// copy): channels_last planes (above), one group, at most four residues, none empty, 16-byte
// pixels. The forward's own plan can still decline at launch (then the planes are copied).
bool grad_input_residues_read_in_place(const at::Tensor& grad_output, const at::Tensor& grad_input,
                                       const Geometry& g);
// grad_output_cl: a channels_last copy of an NCHW grad_output that the caller made already (for
// grad_weight or grad_bias, backward.cu); used where grad_input reads the residues of such a copy
// or, at stride 1, where the forward would copy grad_output itself; else ignored.
void grad_input_as_forward(const at::Tensor& grad_output, const at::Tensor& weight,
                           const Geometry& g, const at::Tensor& grad_input,
                           const at::Tensor& grad_output_cl = at::Tensor());
// Whether grad_input_as_forward takes NCHW grad_output and grad_input through one channels_last
// copy of grad_output read in place as residues (16-bit; float32 in TF32 where every slot is a
// tap). backward.cu sends such float32 layers here although its shape rule keeps them native.
bool grad_input_nchw_via_channels_last(const at::Tensor& grad_output, const at::Tensor& grad_input,
                                       const Geometry& g);
// Whether grad_input_as_forward, at stride 1 (no planes), runs a forward that copies the NCHW
// grad_output to channels_last once (forward_copies_input_to_channels_last_once): a copy the
// caller can make instead, summing grad_bias on the way.
bool grad_input_forward_copies_grad_output(const at::Tensor& grad_output, const at::Tensor& grad_input,
                                           const Geometry& g);

// ---- grad_weight (backward_grad_weight.cu) ------------------------------------------
// Both paths write per-split partial sums into `ws` laid out [S][KH*KW][Cin][Cout_g]
// (acc dtype), then grad_weight_reduce sums the S splits in order into grad_weight.
int64_t grad_weight_gemm_splits(const Geometry& g);
int64_t grad_weight_direct_splits(const Geometry& g);
void grad_weight_gemm(const at::Tensor& x, const at::Tensor& go, const Geometry& g,
                      int64_t splits, const at::Tensor& ws, Mma mode);
void grad_weight_direct(const at::Tensor& x, const at::Tensor& go, const Geometry& g,
                        int64_t splits, const at::Tensor& ws);
// The rows kernel (backward_grad_weight_rows.cu): TF32 for float, 16-bit MMAs for bf16 /
// fp16; the same workspace layout and reduce. Supported when each group of a kernel row's
// taps reads at most two column residues with a halo the kernel stages. `allow_async`:
// false keeps it on the element-load variant (test knob CONVT_BWD_GW=rows_element). With
// grad_bias defined, the float kernel at stride > 1 along the width sums it from its staged
// grad_output rows where every output row and column has an owning tap (one group); returns
// whether it did (else the caller sums it).
bool grad_weight_rows_supported(const Geometry& g);
int64_t grad_weight_rows_splits(const Geometry& g);
bool grad_weight_rows(const at::Tensor& x, const at::Tensor& go, const Geometry& g,
                      int64_t splits, const at::Tensor& ws, bool allow_async, const at::Tensor& grad_bias);
// The float32 (TF32) channels_last rows kernel (backward_grad_weight_rows_cl.cu): x and
// grad_output dense channels_last, read in place; channel groups of whole 16-byte units; the
// rows kernels' tap groups with at most two column residue planes and a small halo; the same
// workspace layout, splits (grad_weight_rows_splits) and reduce. With grad_bias defined it sums
// grad_bias from its staged grad_output where every output row and column has an owning tap
// (one group) and returns whether it did (else the caller sums it). Knob CONVT_BWD_GW_ROWS_CL=0:
// never supported.
bool grad_weight_rows_cl_supported(const at::Tensor& x, const at::Tensor& go, const Geometry& g);
bool grad_weight_rows_cl(const at::Tensor& x, const at::Tensor& go, const Geometry& g, int64_t splits,
                         const at::Tensor& ws, const at::Tensor& grad_bias);
// The wgmma kernels (backward_grad_weight_wgmma.cu): bf16 / fp16 on sm_90a, stride 1 or 2
// along the width; NCHW operands with x rows of whole 16-byte pieces and grad_output rows of
// whole 4-byte pieces, or channels_last operands (read in place) with channel groups of
// whole 16-byte pieces; the same workspace layout and reduce.
bool grad_weight_wgmma_supported(const at::Tensor& x, const at::Tensor& go, const Geometry& g);
int64_t grad_weight_wgmma_splits(const at::Tensor& x, const at::Tensor& go, const Geometry& g);
// With grad_bias defined, the float (TF32) ring kernel sums it from its staged grad_output rows
// where they partition grad_output (one kernel-row group, one tap group); returns whether it did
// (else the caller sums it).
bool grad_weight_wgmma(const at::Tensor& x, const at::Tensor& go, const Geometry& g,
                       int64_t splits, const at::Tensor& ws, const at::Tensor& grad_bias);
// The warp-specialized kernel (backward_grad_weight_ws.cu): bf16 / fp16 channels_last x and
// grad_output (dense), one group, channels multiples of 8, at most 4 residue subgrids of
// grad_output holding taps (stride 1, or up to 2 per dimension); the same workspace layout and
// reduce.
bool grad_weight_ws_supported(const at::Tensor& x, const at::Tensor& go, const Geometry& g);
// Its checks that do not depend on the operands' layout (dtype and device of `like`, geometry,
// plan): whether channels_last copies of NCHW operands would run on it.
bool grad_weight_ws_plans(const Geometry& g, const at::Tensor& like);
int64_t grad_weight_ws_splits(const Geometry& g);
// With grad_bias defined, it also sums grad_bias from its grad_output stages where its tiles
// cover grad_output, and returns whether it did (else the caller sums it).
bool grad_weight_ws(const at::Tensor& x, const at::Tensor& go, const Geometry& g, int64_t splits,
                    const at::Tensor& ws, const at::Tensor& grad_bias);
// Narrow channel groups (Cin/groups <= 16, Cout/groups <= 32; backward_grad_weight_narrow.cu):
// phase-decomposed mma.sync tiles (TF32 for float, 16-bit MMAs for bf16 / fp16) over NCHW or
// channels_last operands (read in place); the same workspace layout and reduce.
bool grad_weight_narrow_supported(const Geometry& g, at::ScalarType dtype);
int64_t grad_weight_narrow_splits(const Geometry& g, at::ScalarType dtype);
void grad_weight_narrow(const at::Tensor& x, const at::Tensor& go, const Geometry& g,
                        int64_t splits, const at::Tensor& ws);
void grad_weight_reduce(const at::Tensor& ws, const Geometry& g, int64_t splits,
                        const at::Tensor& grad_weight);

// ---- depthwise (backward_depthwise.cu) ------------------------------------------------
// One input and one output channel per group, kernels up to 5 x 5: grad_input and
// grad_weight (either may be undefined: not requested) in one pass over grad_output, every
// operand read in place through its strides; grad_weight through a per-split workspace and
// grad_weight_reduce. grad_bias (may be undefined) rides along in either kernel where
// every grad_output element is reached by a tap (depthwise_bias_fused); returns whether it
// computed grad_bias (else the caller runs grad_bias_sum). Test knob CONVT_BWD_DW=off (never)
// | plane (never the channels_last kernels) | walk (never the staged one), read once.
bool depthwise_backward_supported(const at::Tensor& grad_output, const at::Tensor& input,
                                  const at::Tensor& grad_input, const Geometry& g);
bool depthwise_backward(const at::Tensor& grad_output, const at::Tensor& input, const at::Tensor& weight,
                        const Geometry& g, const at::Tensor& grad_input, const at::Tensor& grad_weight,
                        const at::Tensor& grad_bias);

// ---- grad_output columns + cuBLAS (backward_s2d_gemm.cu) ------------------------------
// Both gradients as cuBLAS GEMMs over grad_output's columns (im2col: each input pixel's
// grad_output pixel per tap), groups 1; at kernel == stride (no padding; s2d_gemm_applies)
// every output pixel has exactly one tap and the columns are grad_output rearranged
// space-to-depth. Either output may be undefined (not requested); any layouts. grad_bias
// (may be undefined): summed from the rearrangement's own loads where its paired kernel runs
// (NCHW, KW == 2), and then true is returned; otherwise false (the caller runs grad_bias_sum).
bool s2d_gemm_applies(const Geometry& g);
bool cols_gemm_applies(const Geometry& g);
bool cols_gemm_backward(const at::Tensor& grad_output, const at::Tensor& input,
                        const at::Tensor& weight, const Geometry& g,
                        const at::Tensor& grad_input, const at::Tensor& grad_weight, const at::Tensor& grad_bias);
// The same for channels_last grad_output and input (both dense channels_last: cl_operands):
// the input is the GEMM operand in place, the columns are [pixel][tap][co] (a copy of whole
// KW*Cout runs at kernel == stride, else a gather of Cout runs per tap), and grad_input is
// written channels_last by its GEMM.
bool cl_operands(const at::Tensor& grad_output, const at::Tensor& input);
// With grad_bias defined it sums grad_bias from the columns copy's loads where that copy reads each
// grad_output element once (kernel == stride, no padding; im2col_cl_taps_sums_units) and returns
// whether it did (else the caller sums it).
bool cols_gemm_backward_cl(const at::Tensor& grad_output, const at::Tensor& input,
                           const at::Tensor& weight, const Geometry& g,
                           const at::Tensor& grad_input, const at::Tensor& grad_weight, const at::Tensor& grad_bias);

// ---- grad_bias (backward_grad_bias.cu) ----------------------------------------------
// grad_bias[co] = sum over n, oh, ow of grad_output: two deterministic passes. grad_output
// NCHW-contiguous or channels_last-contiguous (read in place).
void grad_bias_sum(const at::Tensor& go, const Geometry& g, const at::Tensor& grad_bias);
// grad_bias from per-split partial sums ws[split][Cout] (accumulation type) that another pass
// over grad_output wrote: summed over the splits in a fixed order.
void grad_bias_reduce(const at::Tensor& ws, const Geometry& g, int64_t splits, const at::Tensor& grad_bias);

// ---- device helpers -----------------------------------------------------------------

// The order of a split's steps in the grad_weight kernels that walk input-row segments
// (backward_grad_weight_rows.cu: 32 columns, backward_grad_weight_wgmma.cu: 64): segment
// s = (n * segs_w + sw) * H + ih, rows fastest, so a block walks down a column strip. The
// KH blocks of one split (adjacent in the grid, running together) then read x row ih at the
// same step, and grad_output row oh = ih*SH - PH + ki*DH within DH / SH steps of each other,
// whatever the width. (Measured against walking along the rows on kb2_10 and kb1_57, H100
// run AD: no change in time or in DRAM bytes, so L2 already held those rows; this order keeps
// the reuse distance independent of W.)
struct SegmentWalk {
  int n, sw, ih;
  __device__ __forceinline__ SegmentWalk(int64_t s, int H, int segs_w) {
    ih = static_cast<int>(s % H);
    const int64_t strip = s / H;
    sw = static_cast<int>(strip % segs_w);
    n = static_cast<int>(strip / segs_w);
  }
  __device__ __forceinline__ void next(int H, int segs_w) {
    if (++ih == H) {
      ih = 0;
      if (++sw == segs_w) {
        sw = 0;
        ++n;
      }
    }
  }
};

// Deterministic block-wide sum of one value per thread (blockDim.x == kThreads,
// a multiple of 32): a fixed shuffle tree per warp, then the warp sums in warp
// order. Returns the total in thread 0. `scratch` holds kThreads/32 values.
template <int kThreads, typename Acc>
__device__ __forceinline__ Acc block_sum_fixed_order(Acc v, Acc* scratch) {
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) v += __shfl_down_sync(0xffffffffu, v, off);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  Acc total = Acc(0);
  if (threadIdx.x == 0) {
#pragma unroll
    for (int w = 0; w < kThreads / 32; ++w) total += scratch[w];
  }
  __syncthreads();  // scratch may be reused right after
  return total;
}

}  // namespace bwd
}  // namespace convt
