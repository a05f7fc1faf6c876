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
// Two layouts of the GEMM's pixel axis (ColsLayout):
//   kPerImage  one strided-batched GEMM, a batch entry per image: X[n] is the NCHW input
//              itself ([Cin, H*W], no copy). Good when H*W fills cuBLAS's N tiles.
//   kFlat      the batch folded into the pixel axis: X = [Cin, images*H*W], one GEMM.
//              Costs one transpose of the input (NCHW -> CNHW), which is small next to
//              the output for these upsampling layers; needed when H*W is small (DCGAN
//              4x4 / 16x16, Mask R-CNN 14x14), where per-image GEMMs of 16..256 columns
//              leave most of every cuBLAS tile empty.
//
// Precision: cuBLAS is called directly with the compute type the *convolution* flag asks
// for (torch.backends.cudnn.allow_tf32): TF32 tensor cores when it is on, full fp32 when it
// is off, whatever cuBLAS's own matmul flag says. 16-bit types accumulate in fp32.
// Batches are processed in slices so that the cols workspace stays below kMaxColsElems.
#include <ATen/ATen.h>
#include <ATen/cuda/CUDAContext.h>
#include <ATen/cuda/Exceptions.h>
#include <c10/cuda/CUDAException.h>
#include <cublas_v2.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "col2im_gather.cuh"
#include "forward_launch.cuh"
#include "tf32_flag.h"

namespace convt {
namespace fwd {
namespace {

constexpr int64_t kMaxColsElems = int64_t(48) << 20;  // workspace per slice (elements)
// Below this many pixels per image the per-image GEMM's N extent underfills cuBLAS's
// tiles (128..256 columns), and the flat layout's input transpose is the cheaper cost.
constexpr int64_t kFlatBelowPixels = 1024;

enum class ColsLayout { kPerImage, kFlat };

// CONVT_GEMM_LAYOUT=image|flat forces one layout (tests cover both); read once.
ColsLayout pick_layout(const Geometry& g) {
  static const int forced = [] {
    const char* e = std::getenv("CONVT_GEMM_LAYOUT");
    if (e == nullptr) return 0;
    if (std::strcmp(e, "image") == 0) return 1;
    if (std::strcmp(e, "flat") == 0) return 2;
    return 0;
  }();
  if (forced == 1) return ColsLayout::kPerImage;
  if (forced == 2) return ColsLayout::kFlat;
  return g.H * g.W < kFlatBelowPixels ? ColsLayout::kFlat : ColsLayout::kPerImage;
}

// cuBLAS (column-major) view of cols = W^T X for `batch` independent problems:
//   C (pixels x rows, ldc) = X (pixels x Cin, ldx) * W^T, W stored as (rows x Cin, ld rows).
// The weight is shared by every batch entry (stride 0).
struct GemmCall {
  int64_t pixels, rows, cin;
  int64_t ldx, stride_x;
  int64_t ldc, stride_c;
  int64_t batch;
};

void run_gemm(const GemmCall& c, const void* x, const void* w, void* cols, at::ScalarType dtype,
              bool tf32) {
  cudaDataType_t type;
  cublasComputeType_t compute;
  switch (dtype) {
    case at::kFloat:
      type = CUDA_R_32F;
      compute = tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
      break;
    case at::kDouble:
      type = CUDA_R_64F;
      compute = CUBLAS_COMPUTE_64F;
      break;
    case at::kHalf:
      type = CUDA_R_16F;
      compute = CUBLAS_COMPUTE_32F;
      break;
    case at::kBFloat16:
      type = CUDA_R_16BF;
      compute = CUBLAS_COMPUTE_32F;
      break;
    default:
      TORCH_CHECK(false, "convt: GEMM forward: unsupported dtype ", dtype);
  }
  TORCH_CHECK(c.pixels <= INT32_MAX && c.rows <= INT32_MAX && c.cin <= INT32_MAX &&
                  c.ldx <= INT32_MAX && c.ldc <= INT32_MAX && c.batch <= INT32_MAX,
              "convt: GEMM forward: extents exceed cuBLAS's 32-bit dimensions");
  // getCurrentCUDABlasHandle binds the current stream and PyTorch's workspace, and sets
  // the handle's math mode from cuBLAS's own TF32 flag. Strict fp32 must not use TF32
  // whatever that flag says, so the math mode is pinned for this call and restored.
  cublasHandle_t handle = at::cuda::getCurrentCUDABlasHandle();
  cublasMath_t old_mode;
  TORCH_CUDABLAS_CHECK(cublasGetMathMode(handle, &old_mode));
  TORCH_CUDABLAS_CHECK(cublasSetMathMode(handle, CUBLAS_DEFAULT_MATH));
  const float alpha_f = 1.f, beta_f = 0.f;
  const double alpha_d = 1.0, beta_d = 0.0;
  const void* alpha = dtype == at::kDouble ? static_cast<const void*>(&alpha_d) : &alpha_f;
  const void* beta = dtype == at::kDouble ? static_cast<const void*>(&beta_d) : &beta_f;
  const cublasStatus_t st = cublasGemmStridedBatchedEx(
      handle, CUBLAS_OP_N, CUBLAS_OP_T, static_cast<int>(c.pixels), static_cast<int>(c.rows),
      static_cast<int>(c.cin), alpha, x, type, static_cast<int>(c.ldx), c.stride_x, w, type,
      static_cast<int>(c.rows), 0, beta, cols, type, static_cast<int>(c.ldc), c.stride_c,
      static_cast<int>(c.batch), compute, CUBLAS_GEMM_DEFAULT);
  cublasSetMathMode(handle, old_mode);
  TORCH_CUDABLAS_CHECK(st);
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
  return ratio <= 4.5 && g.Cin >= 128;
}

void launch_gemm_col2im(const at::Tensor& input, const at::Tensor& weight,
                        const std::optional<at::Tensor>& bias, const Geometry& g,
                        const at::Tensor& output) {
  const at::Tensor x = input.contiguous();
  const int64_t kk = g.KH * g.KW;
  const int64_t rows = g.Cout * kk;
  const int64_t hw = g.H * g.W;
  const at::Tensor w = weight.contiguous();  // [Cin, Cout*KH*KW] row-major = (rows x Cin) col-major
  const at::Tensor b = (bias.has_value() && bias->defined()) ? bias->contiguous() : at::Tensor();
  const auto dtype = input.scalar_type();
  const bool tf32 = dtype == at::kFloat && allow_tf32_conv();
  const ColsLayout layout = pick_layout(g);

  GatherParams p{};
  p.H = static_cast<int>(g.H), p.W = static_cast<int>(g.W);
  p.Hout = static_cast<int>(g.Hout), p.Wout = static_cast<int>(g.Wout);
  p.KH = static_cast<int>(g.KH), p.KW = static_cast<int>(g.KW);
  p.Cout = static_cast<int>(g.Cout);
  p.y = make_axis_taps(g.KH, g.SH, g.PH, g.DH);
  p.x = make_axis_taps(g.KW, g.SW, g.PW, g.DW);
  for (int i = 0; i < 4; ++i) p.out_s[i] = output.stride(i);

  const int64_t slice = std::max<int64_t>(1, std::min<int64_t>(g.N, kMaxColsElems / (rows * hw)));
  auto stream = at::cuda::getCurrentCUDAStream();
  for (int64_t n0 = 0; n0 < g.N; n0 += slice) {
    const int64_t nb = std::min(slice, g.N - n0);
    const at::Tensor xs = x.narrow(0, n0, nb);
    at::Tensor cols = at::empty({rows * nb * hw}, x.options());
    at::Tensor xg;  // the GEMM's X operand
    GemmCall call{};
    call.rows = rows;
    call.cin = g.Cin;
    if (layout == ColsLayout::kPerImage) {
      xg = xs;  // [nb][Cin][hw]: batch entry n is X[n], leading dimension hw
      call.pixels = hw, call.ldx = hw, call.stride_x = g.Cin * hw;
      call.ldc = hw, call.stride_c = rows * hw, call.batch = nb;
      p.row_stride = hw, p.img_stride = rows * hw;
    } else {
      xg = xs.view({nb, g.Cin, hw}).transpose(0, 1).contiguous();  // [Cin][nb * hw]
      call.pixels = nb * hw, call.ldx = nb * hw, call.stride_x = 0;
      call.ldc = nb * hw, call.stride_c = 0, call.batch = 1;
      p.row_stride = nb * hw, p.img_stride = hw;
    }
    run_gemm(call, xg.const_data_ptr(), w.const_data_ptr(), cols.mutable_data_ptr(), dtype, tf32);

    AT_DISPATCH_FLOATING_TYPES_AND2(
        at::kHalf, at::kBFloat16, dtype, "convt_forward_col2im", [&] {
          launch_col2im_gather<scalar_t>(cols.const_data_ptr<scalar_t>(),
                                         b.defined() ? b.const_data_ptr<scalar_t>() : nullptr,
                                         output.mutable_data_ptr<scalar_t>(), p, n0, nb, stream);
        });
  }
}

}  // namespace fwd
}  // namespace convt
