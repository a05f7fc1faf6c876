// GEMM + col2im forward of conv_transpose2d, for few-tap, channel-heavy layers on small
// images (U-Net / Mask R-CNN upsampling with kernel == stride, DCGAN generator layers).
//
// There the convolution is a plain matrix product followed by a scatter:
//   cols = W^T X          W^T: [Cout*KH*KW, Cin], X: [Cin, pixels]           (cuBLAS)
//   out[n, co, oy, ox] = bias[co] + sum over the taps (ky, kx) reaching (oy, ox) of
//                        cols[(co*KH + ky)*KW + kx, pixel (n, iy, ix)]       (gather kernel)
// cuBLAS runs these GEMMs (K = Cin large, M = Cout*taps) near its peak, and the cols
// round trip costs about KH*KW*H*W / (Hout*Wout) times the output (1 when kernel ==
// stride), so the dispatcher uses this family only where that ratio is small. The gather
// (col2im_gather.cuh) visits taps with the same phase walk as the direct kernel and writes
// every output exactly once (no atomics, deterministic).
//
// Layouts of the GEMM's pixel axis (ColsLayout), for NCHW:
//   kPerImage  one strided-batched GEMM, a batch entry per image: X[n] is the NCHW input
//              itself ([Cin, H*W], no copy). Good when H*W fills cuBLAS's N tiles.
//   kFlat      the batch folded into the pixel axis: X = [Cin, images*H*W], one GEMM.
//              Costs one transpose of the input (NCHW -> CNHW), which is small next to
//              the output for these upsampling layers; needed when H*W is small (DCGAN
//              4x4 / 16x16, Mask R-CNN 14x14), where per-image GEMMs of 16..256 columns
//              leave most of every cuBLAS tile empty.
// and for channels_last input and output, kPixelMajor: cols[pixel][tap][co] straight from
// the NHWC input (no transpose at all), gathered along the channels.
//
// channels_last with kernel == stride (no padding, dilation or output_padding; U-Net):
// every output pixel gets exactly one tap, and for a fixed kernel row ky the output row
// (n, iy*KH + ky) is [W][KW][Cout] contiguous, which is exactly a GEMM result
// [pixels ix][(kx, co)]. So no cols and no gather: KH strided-batched GEMMs (a batch entry
// per input row (n, iy)) write the output in place, the bias added by cublasLt's epilogue
// (launch_gemm_direct_cl). Output traffic is the floor's, against the cols round trip's
// three times. Taken for 16-bit types at any width, and for float / double where the input
// rows are wide enough (W >= kDirectMinWidthFp32): TF32 batched GEMMs with few columns per
// entry were slow (run CG: Mask R-CNN 14 x 14 fp32 0.77 -> 1.39 ms, U-Net 32 x 32 0.19 ->
// 0.55), while bf16 won even there (0.48 -> 0.35 ms; U-Net 256 x 256 1.17 -> 0.20).
//
// Precision: cuBLAS is called directly with the compute type the *convolution* flag asks
// for (torch.backends.cudnn.allow_tf32): TF32 tensor cores when it is on, full fp32 when it
// is off, whatever cuBLAS's own matmul flag says. 16-bit types accumulate in fp32.
// Batches are processed in slices so that the cols workspace stays below kMaxColsElems.
#include <ATen/ATen.h>
#include <ATen/cuda/CUDAContext.h>
#include <ATen/cuda/Exceptions.h>
#include <c10/cuda/CUDAException.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "col2im_gather.cuh"
#include "cublas_gemm.h"
#include "gemm_3xtf32.h"
#include "forward_launch.cuh"
#include "layout.h"
#include "tf32_flag.h"
#include "../host_trace.h"

namespace convt {
namespace fwd {
namespace {

constexpr int64_t kMaxColsElems = int64_t(48) << 20;  // workspace per slice (elements)
// Below this many pixels per image the per-image GEMM's N extent underfills cuBLAS's
// tiles (128..256 columns), and the flat layout's input transpose is the cheaper cost.
constexpr int64_t kFlatBelowPixels = 1024;

// float / double input rows at least this wide (channels_last, kernel == stride) write the
// output straight from per-row GEMMs; 16-bit types do at any width (see the top).
constexpr int64_t kDirectMinWidthFp32 = 64;

// kPixelMajor: channels_last (see launch_gemm_col2im): cols[pixel][tap][co].
// kDirect: channels_last, kernel == stride: no cols (launch_gemm_direct_cl).
enum class ColsLayout { kPerImage, kFlat, kPixelMajor, kDirect };

// The NCHW layouts' GEMM reads the weight from a [rows][Cin] copy (K-major: one transpose of the
// weight per call, layout.cu's) where the GEMM runs on TF32 tensor cores, else as stored ([Cin][rows]:
// an N-major operand). Why: cuBLAS's TF32 kernels for the N-major weight ("nt") ran at ~60% of
// the measured matmul rate. H100 run TM, float32 NCHW forward, device us (as stored -> K-major):
// unet_up4 211 -> 179 (GEMM 154.6 -> 114.0, the copy 8.0), dcgan_g2 86 -> 74 (55.2 -> 32.7, copy
// 7.3), unet_up1 795 -> 724; training unet_up4 525 -> 491, dcgan_g2 187 -> 175. bf16 lost (unet_up4
// 100 -> 105, dcgan_g2 36 -> 41: 16-bit wgmma reads either major order). Knob
// CONVT_GEMM_KMAJOR_W=0 never, 1 every dtype (measuring). Read once.
int kmajor_weights_mode() {
  static const int mode = [] {
    const char* e = std::getenv("CONVT_GEMM_KMAJOR_W");
    return e == nullptr ? -1 : std::strcmp(e, "1") == 0 ? 1 : 0;
  }();
  return mode;
}

// Columns per batch slice (elements): kMaxColsElems, or CONVT_GEMM_SLICE_KB kilobytes (tests: many
// slices of one image each). Slices whose columns would stay in L2 between the GEMM that writes
// them and the gather that reads them lost everywhere (H100 run TR, device us, default -> 16 MB
// slices): unet_up4 fp32 179 -> 226, maskrcnn strict 1089 -> 1421, dcgan_g4 strict 208 -> 290;
// the smaller GEMMs ran slower and the gathers no faster. Read once.
int64_t cols_slice_elems(int64_t element_size) {
  static const int64_t kb = [] {
    const char* e = std::getenv("CONVT_GEMM_SLICE_KB");
    return e == nullptr ? int64_t(0) : static_cast<int64_t>(std::atoll(e));
  }();
  return kb > 0 ? (kb << 10) / element_size : kMaxColsElems;
}

// CONVT_GEMM_LAYOUT=image|flat|pixel|direct forces a layout where it applies (image / flat:
// NCHW; pixel / direct: channels_last, direct only for kernel == stride); read once.
int forced_layout() {
  static const int forced = [] {
    const char* e = std::getenv("CONVT_GEMM_LAYOUT");
    if (e == nullptr) return 0;
    if (std::strcmp(e, "image") == 0) return 1;
    if (std::strcmp(e, "flat") == 0) return 2;
    if (std::strcmp(e, "pixel") == 0) return 3;
    if (std::strcmp(e, "direct") == 0) return 4;
    return 0;
  }();
  return forced;
}

ColsLayout pick_layout(const Geometry& g) {
  if (forced_layout() == 1) return ColsLayout::kPerImage;
  if (forced_layout() == 2) return ColsLayout::kFlat;
  return g.H * g.W < kFlatBelowPixels ? ColsLayout::kFlat : ColsLayout::kPerImage;
}

ColsLayout pick_layout_cl(const Geometry& g, const at::Tensor& output) {
  const bool direct_ok = kernel_equals_stride(g) &&
                         output.is_contiguous(at::MemoryFormat::ChannelsLast);
  const bool wide_enough = output.element_size() == 2 || g.W >= kDirectMinWidthFp32;
  if (direct_ok && (forced_layout() == 4 || (forced_layout() != 3 && wide_enough))) {
    return ColsLayout::kDirect;
  }
  return ColsLayout::kPixelMajor;
}

// The bias repeated KW times ([KW][Cout], the direct GEMM's rows), by one small kernel: at::cat
// of KW views took 42 us of host time per call on the H100 machine (run VB's host trace, unet_up4
// bf16 channels_last; bias.repeat() 43-51 us before it, run MB): a dispatcher walk per view and a
// batched copy, where this is one allocation and one launch.
template <typename T>
__global__ void repeat_bias_kernel(const T* __restrict__ bias, int64_t bias_stride, T* __restrict__ out, int C,
                                   int total) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < total) out[i] = bias[static_cast<int64_t>(i % C) * bias_stride];
}

at::Tensor repeat_bias(const at::Tensor& bias, int64_t times) {
  const int64_t C = bias.numel(), total = C * times;
  TORCH_CHECK(total < (int64_t(1) << 31), "convt: bias too large for the GEMM epilogue");
  at::Tensor out = at::empty({total}, bias.options());
  constexpr int kBlock = 256;
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, bias.scalar_type(), "convt_repeat_bias", [&] {
    repeat_bias_kernel<scalar_t><<<static_cast<unsigned>((total + kBlock - 1) / kBlock), kBlock, 0,
                                   at::cuda::getCurrentCUDAStream()>>>(
        bias.const_data_ptr<scalar_t>(), bias.stride(0), out.mutable_data_ptr<scalar_t>(), static_cast<int>(C),
        static_cast<int>(total));
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  });
  return out;
}

// channels_last, kernel == stride: for each kernel row ky, one strided-batched GEMM over the
// input rows b = (n, iy):
//   out[n][iy*KH + ky][ix*KW + kx][co] = bias[co] + sum_ci x[n][iy][ix][ci] * w[ci][co][ky][kx]
// Column-major as cuBLAS sees it, per batch entry: C (KW*Cout x W, ldc = KW*Cout) =
// W'_ky (KW*Cout x Cin, the [Cin][KH][KW][Cout] weight at row offset ky*KW*Cout, lda =
// KH*KW*Cout) * X_b (Cin x W, ldb = Cin), with X_b = x + b*W*Cin and C_b = out + (b*KH + ky)
// * W*KW*Cout. The bias, repeated per kx, goes through the epilogue (else one add pass).
void launch_gemm_direct_cl(const at::Tensor& x, const at::Tensor& w_perm,
                           const at::Tensor& bias, const Geometry& g, const at::Tensor& output) {
  const auto dtype = x.scalar_type();
  const bool tf32 = dtype == at::kFloat && allow_tf32_conv();
  const int64_t row = g.KW * g.Cout;  // one input pixel's outputs within an output row
  at::Tensor bias_row;
  if (bias.defined()) {
    CONVT_TRACE("cuda.forward.gemm_direct_cl.bias_repeat");
    bias_row = repeat_bias(bias, g.KW);
  }
  const int64_t elt = static_cast<int64_t>(x.element_size());
  for (int64_t ky = 0; ky < g.KH; ++ky) {
    GemmCall call{};
    call.op_a = CUBLAS_OP_N, call.op_b = CUBLAS_OP_N;
    call.m = row, call.n = g.W, call.k = g.Cin;
    call.a = static_cast<const char*>(w_perm.const_data_ptr()) + ky * row * elt;
    call.lda = g.KH * row, call.stride_a = 0;
    call.b = x.const_data_ptr(), call.ldb = g.Cin, call.stride_b = g.W * g.Cin;
    call.c = static_cast<char*>(output.mutable_data_ptr()) + ky * g.W * row * elt;
    call.ldc = row, call.stride_c = g.KH * g.W * row;
    call.batch = g.N * g.H;
    call.bias = bias_row.defined() ? bias_row.const_data_ptr() : nullptr;
    if (!run_gemm(call, dtype, tf32)) {
      // No epilogue for this call (legacy API): add the bias to this kernel row's output
      // rows only (another ky's call may have had it), viewing the channels_last output as
      // [N][H][KH][Wout][Cout].
      output.permute({0, 2, 3, 1}).view({g.N, g.H, g.KH, g.Wout, g.Cout}).select(2, ky).add_(bias);
    }
  }
}

}  // namespace

bool gemm_col2im_supported(const Geometry& g) {
  if (g.groups != 1 || g.SH > kMaxTapTable || g.SW > kMaxTapTable) return false;
  const int64_t lim = int64_t(1) << 30;
  if (g.H >= lim || g.W >= lim || g.Hout >= lim || g.Wout >= lim) return false;
  if (g.Hout * g.Wout >= (int64_t(1) << 31) - 256) return false;  // gather grid.x
  return g.Cout * g.KH * g.KW * g.H * g.W <= kMaxColsElems;  // one image's cols
}

bool gemm_col2im_suitable(const Geometry& g, at::ScalarType dtype) {
  if (!gemm_col2im_supported(g)) return false;
  // cols traffic relative to the output, and a channel count that makes the GEMM worth it
  // (measured on the suite, docs/perf-notes-forward.md).
  const double ratio = double(g.KH * g.KW) * double(g.H * g.W) / double(g.Hout * g.Wout);
  if (dtype == at::kDouble) return ratio <= 4.5 && g.Cin >= 64;
  // Strict fp32: the earlier rule stands. Its GEMM is cuBLAS's full fp32; the 3xTF32 wgmma
  // forward forced onto these shapes was slower (run OD: unet_up4 0.734 -> 1.592 ms, maskrcnn
  // 1.583 -> 3.116, dcgan_g2 0.211 -> 0.607: one tap per phase, three MMAs per chunk).
  if (dtype == at::kFloat && !allow_tf32_conv()) return ratio <= 4.5 && g.Cin >= 128;
  // Overlapping taps (ratio > 1) write cols several times the output; the wgmma implicit
  // GEMM wins there once an image fills its pixel tiles. Run BY, dcgan_g4 (16 x 16, k4 s2,
  // ratio 4): fp32 0.175 -> 0.141 ms through wgmma, bf16 0.116 -> 0.091, channels_last fp32
  // 0.182 -> 0.133; dcgan_g2 (4 x 4) stays here (wgmma 0.28 against 0.12 ms).
  const bool small_image = g.H * g.W <= 64;
  return g.Cin >= 128 && (ratio <= 1.0 || (ratio <= 4.5 && small_image));
}

void launch_gemm_col2im(const at::Tensor& input, const at::Tensor& weight,
                        const std::optional<at::Tensor>& bias, const Geometry& g,
                        const at::Tensor& output) {
  const int64_t kk = g.KH * g.KW;
  const int64_t rows = g.Cout * kk;
  const int64_t hw = g.H * g.W;
  const at::Tensor b = (bias.has_value() && bias->defined()) ? bias->contiguous() : at::Tensor();
  const auto dtype = input.scalar_type();
  const bool tf32 = dtype == at::kFloat && allow_tf32_conv();
  // channels_last in and out: the NHWC input is already the GEMM's [pixels][Cin] operand
  // for the whole batch (no transpose), and with the weight permuted to [Cin][KH][KW][Cout]
  // the cols of a pixel hold each tap's Cout channels contiguously, which is the output's
  // channel axis: the gather reads and writes along channels.
  const bool cl = channels_last_only(input) && output.stride(1) == 1;
  const at::Tensor x = cl ? input : to_nchw(input);
  // NCHW: [Cin, Cout*KH*KW] row-major = (rows x Cin) column-major.
  // channels_last: [Cin][KH][KW][Cout] row-major = (KH*KW*Cout x Cin) column-major.
  // (A weight already in either order is used as it is: no view either, since each view op
  // costs the small host-bound steps a few us.)
  const bool w_in_place = cl ? channels_last_only(weight) : weight.is_contiguous();
  const at::Tensor w = w_in_place ? weight : cl ? weight.permute({0, 2, 3, 1}).contiguous() : weight.contiguous();
  const ColsLayout layout = cl ? pick_layout_cl(g, output) : pick_layout(g);
  if (layout == ColsLayout::kDirect) {
    launch_gemm_direct_cl(x, w, b, g, output);
    return;
  }

  GatherParams p{};
  p.H = static_cast<int>(g.H), p.W = static_cast<int>(g.W);
  p.Hout = static_cast<int>(g.Hout), p.Wout = static_cast<int>(g.Wout);
  p.KH = static_cast<int>(g.KH), p.KW = static_cast<int>(g.KW);
  p.Cout = static_cast<int>(g.Cout);
  p.y = make_axis_taps(g.KH, g.SH, g.PH, g.DH);
  p.x = make_axis_taps(g.KW, g.SW, g.PW, g.DW);
  for (int i = 0; i < 4; ++i) p.out_s[i] = output.stride(i);

  // Strict float32 where the GEMM's weight side (Cout*KH*KW) is at least 512: one TF32 GEMM over
  // operands split into TF32 parts and remainders, tripled along K (gemm_3xtf32.h), instead of
  // cuBLAS's full float32 GEMM, reading the weight K-major as TF32 does. Why the weight side: the
  // split costs ~16 bytes of traffic per input element (read, three parts written, read by the
  // GEMM), and the FMA time it saves per input element is 2 Cout*KH*KW FLOPs at ~47 against ~100
  // effective TFLOP/s, so the crossover is near Cout*KH*KW ~ 300. H100 run TP, strict NCHW
  // forward device us (full float32 -> split, CONVT_GEMM_3XTF32=all): unet_up4 (2048) 730 -> 466,
  // dcgan_g2 (4096) 202 -> 145, maskrcnn (1024) 1571 -> 1173, dcgan_g4 (1024) 318 -> 228; unet_up1
  // (256, 268 MB of input) 1256 -> 1481. With the rule, the weight split once and the flat
  // layout's input split straight from NCHW (runs TQ-TS): maskrcnn 1570 -> 1050, dcgan_g4 318 ->
  // 205, dcgan_g2 202 -> 145, unet_up4 729 -> 455.
  const KnobMode split3_mode = gemm_3xtf32_mode();
  const bool split3 = dtype == at::kFloat && !tf32 && split3_mode != KnobMode::kNever &&
                      (split3_mode == KnobMode::kAll || rows >= 512);
  Tripled w3;  // split3: the weight tripled once for every batch slice
  const int kmajor_mode = kmajor_weights_mode();
  const bool kmajor_w = !cl && (kmajor_mode == 1 || (kmajor_mode == -1 && (tf32 || split3)));
  const at::Tensor wk = kmajor_w ? to_channels_last(w.view({1, g.Cin, rows, 1})) : at::Tensor();  // [rows][Cin]
  const int64_t slice = std::max<int64_t>(1, std::min<int64_t>(g.N, cols_slice_elems(x.element_size()) / (rows * hw)));
  auto stream = at::cuda::getCurrentCUDAStream();
  for (int64_t n0 = 0; n0 < g.N; n0 += slice) {
    const int64_t nb = std::min(slice, g.N - n0);
    const at::Tensor xs = nb == g.N ? x : x.narrow(0, n0, nb);
    at::Tensor cols = at::empty({rows * nb * hw}, x.options());
    at::Tensor xg = xs;  // the GEMM's X operand (kept alive for the call)
    GemmCall call{};
    call.k = g.Cin;
    call.c = cols.mutable_data_ptr();
    call.batch = 1;
    if (layout == ColsLayout::kPixelMajor) {
      // cols[pixel][tap][co] (rows x pixels, column-major) = W' (rows x Cin) * X (Cin x pixels),
      // X = the NHWC slice, pixel-major with stride Cin.
      call.op_a = CUBLAS_OP_N, call.op_b = CUBLAS_OP_N;
      call.m = rows, call.n = nb * hw;
      call.a = w.const_data_ptr(), call.lda = rows;
      call.b = xs.const_data_ptr(), call.ldb = g.Cin;
      call.ldc = rows;
      p.row_stride = 1, p.img_stride = hw * rows;  // unused by the channels_last gather
    } else {
      // cols (pixels x rows, column-major) = X (pixels x Cin) * W^T, W stored (rows x Cin); or,
      // with wk = W as [rows][Cin] (K-major), X * wk.
      call.n = rows;
      if (wk.defined()) {
        call.op_a = CUBLAS_OP_N, call.op_b = CUBLAS_OP_N;
        call.b = wk.const_data_ptr(), call.ldb = g.Cin;
      } else {
        call.op_a = CUBLAS_OP_N, call.op_b = CUBLAS_OP_T;
        call.b = w.const_data_ptr(), call.ldb = rows;
      }
      if (layout == ColsLayout::kPerImage) {
        // [nb][Cin][hw]: batch entry n is X[n], leading dimension hw
        call.m = hw, call.lda = hw, call.stride_a = g.Cin * hw;
        call.ldc = hw, call.stride_c = rows * hw, call.batch = nb;
        p.row_stride = hw, p.img_stride = rows * hw;
      } else {
        // [Cin][nb * hw]; strict float32 split along K makes this operand itself, from xs
        // (triple_a_images below), so no transpose there.
        if (!split3) {
          xg = at::empty({g.Cin, nb, hw}, xs.options());
          swap_outer_dims(xs, nb, g.Cin, hw, xg);
        }
        call.m = nb * hw, call.lda = nb * hw;
        call.ldc = nb * hw;
        p.row_stride = nb * hw, p.img_stride = hw;
      }
      call.a = xg.const_data_ptr();
    }
    if (split3) {
      // The weight is A for the channels_last layout, B for the NCHW ones.
      const bool weight_is_a = layout == ColsLayout::kPixelMajor;
      if (!w3.data.defined()) w3 = weight_is_a ? triple_a(call) : triple_b(call);
      const Tripled x3 = weight_is_a                      ? triple_b(call)
                         : layout == ColsLayout::kFlat ? triple_a_images(xs.const_data_ptr<float>(), nb, g.Cin, hw)
                                                       : triple_a(call);
      run_gemm_tripled(call, weight_is_a ? w3 : x3, weight_is_a ? x3 : w3);
    } else {
      run_gemm(call, dtype, tf32);
    }

    AT_DISPATCH_FLOATING_TYPES_AND2(
        at::kHalf, at::kBFloat16, dtype, "convt_forward_col2im", [&] {
          const scalar_t* cp = cols.const_data_ptr<scalar_t>();
          const scalar_t* bp = b.defined() ? b.const_data_ptr<scalar_t>() : nullptr;
          scalar_t* op = output.mutable_data_ptr<scalar_t>();
          if (layout == ColsLayout::kPixelMajor) {
            launch_col2im_gather_cl<scalar_t>(cp, bp, op, p, n0, nb, stream);
          } else {
            launch_col2im_gather<scalar_t>(cp, bp, op, p, n0, nb, stream);
          }
        });
  }
}

}  // namespace fwd
}  // namespace convt
