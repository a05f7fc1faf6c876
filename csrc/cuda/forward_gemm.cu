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
// visits taps with the same phase walk as the direct kernel and writes every output
// exactly once (no atomics, deterministic).
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
#include <ATen/OpMathType.h>
#include <ATen/cuda/CUDAContext.h>
#include <ATen/cuda/Exceptions.h>
#include <c10/cuda/CUDAException.h>
#include <cublas_v2.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "forward_launch.cuh"
#include "tap_walk.cuh"
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

struct GatherParams {
  AxisTaps y, x;
  int H, W, Hout, Wout, KH, KW, Cout;
  int64_t row_stride;   // cols elements between consecutive (co, ky, kx) rows
  int64_t img_stride;   // cols elements between consecutive images of the slice
  int64_t out_s[4];
};

// Gather: a block covers kRows output rows (n, co, oy) x TX consecutive columns ox; each
// thread one column of kRowsPerThread rows. Why this shape: one thread per output spent
// ~150 instructions on index math (five 32-bit divisions) per element, which made the
// gather instruction-bound (Mask R-CNN: ~100 M outputs). Here a row's decode (n, co, oy,
// its first vertical tap) is done once per block in shared memory, and a thread's
// horizontal tap walk once for all its rows. TX (8, 16 or 32) follows the output width so
// that narrow rows (DCGAN's 8-wide outputs) do not leave most lanes idle.
//
// MT > 0: at most MT taps reach an output along each axis (1 when kernel == stride, 2 for
// DCGAN's k4 s2). The tap loops are then unrolled with predicates, so a thread issues the
// loads of all its rows and taps before it needs any: a walk with data-dependent trip
// counts kept one 4-byte load in flight per thread, ~40% of the copy bandwidth (measured:
// Mask R-CNN fp32 gather 0.57 ms for 0.82 GB). MT == 0: the general walk.
constexpr int kGatherThreads = 256;
// Rows per thread: 8 single-tap rows keep 8 loads in flight per thread (~64 KB per SM).
constexpr int rows_per_thread(int mt) { return mt == 1 ? 8 : 4; }

// Taps along one axis for coordinate walk start s: cols offset per tap (-1: no tap).
template <int MT>
__device__ __forceinline__ void axis_taps(const AxisTaps& a, TapStart s, int extent,
                                          int64_t tap_stride, int64_t in_stride,
                                          int64_t (&off)[MT]) {
#pragma unroll
  for (int j = 0; j < MT; ++j) {
    const int t = s.tap + j * a.step, i = s.in - j * a.in_step;
    off[j] = (t < a.kernel && i >= 0 && i < extent) ? t * tap_stride + i * in_stride : -1;
  }
}

template <typename T, int TX, int MT>
__global__ void __launch_bounds__(kGatherThreads)
    col2im_gather_kernel(const T* __restrict__ cols, const T* __restrict__ bias,
                         T* __restrict__ out, const GatherParams p, int64_t n0, int64_t rows) {
  using acc_t = at::opmath_type<T>;
  constexpr int TY = kGatherThreads / TX;
  constexpr int kRowsPerThread = rows_per_thread(MT);
  constexpr int kRows = TY * kRowsPerThread;
  __shared__ int64_t s_cols[kRows];  // cols offset of the row's (image, channel)
  __shared__ int64_t s_out[kRows];   // output offset of the row's first element
  __shared__ int s_ky[kRows], s_iy[kRows];
  __shared__ acc_t s_bias[kRows];
  const int64_t row0 = static_cast<int64_t>(blockIdx.x) * kRows;
  for (int i = threadIdx.x; i < kRows; i += kGatherThreads) {
    const int64_t row = row0 + i;  // = (nl * Cout + co) * Hout + oy
    if (row >= rows) break;
    const int oy = static_cast<int>(row % p.Hout);
    const int64_t t = row / p.Hout;
    const int co = static_cast<int>(t % p.Cout);
    const int64_t nl = t / p.Cout;
    const TapStart ys = first_tap(p.y, oy);
    s_cols[i] = nl * p.img_stride + static_cast<int64_t>(co) * p.KH * p.KW * p.row_stride;
    s_out[i] = (n0 + nl) * p.out_s[0] + co * p.out_s[1] + oy * p.out_s[2];
    s_ky[i] = ys.tap;
    s_iy[i] = ys.in;
    s_bias[i] = bias != nullptr ? static_cast<acc_t>(bias[co]) : acc_t(0);
  }
  __syncthreads();
  const int ox = blockIdx.y * TX + threadIdx.x % TX;
  if (ox >= p.Wout) return;
  const TapStart xs = first_tap(p.x, ox);
  const int64_t out_x = ox * p.out_s[3];
  if constexpr (MT > 0) {
    // Loads first, unconditionally (a missing tap or row reads cols[0] and is then
    // dropped): with branches around them the compiler issued each load right before its
    // add, one at a time.
    int64_t xoff[MT];
    axis_taps<MT>(p.x, xs, p.W, p.row_stride, 1, xoff);
    T v[kRowsPerThread][MT][MT];
    bool ok[kRowsPerThread][MT][MT];
#pragma unroll
    for (int r = 0; r < kRowsPerThread; ++r) {
      const int i = threadIdx.x / TX + r * TY;
      const bool row_ok = row0 + i < rows;
      int64_t yoff[MT];
      axis_taps<MT>(p.y, TapStart{s_ky[i], s_iy[i]}, p.H, p.KW * p.row_stride, p.W, yoff);
      const int64_t base = row_ok ? s_cols[i] : 0;
#pragma unroll
      for (int a = 0; a < MT; ++a)
#pragma unroll
        for (int b = 0; b < MT; ++b) {
          ok[r][a][b] = row_ok && yoff[a] >= 0 && xoff[b] >= 0;
          v[r][a][b] = cols[ok[r][a][b] ? base + yoff[a] + xoff[b] : 0];
        }
    }
#pragma unroll
    for (int r = 0; r < kRowsPerThread; ++r) {
      const int i = threadIdx.x / TX + r * TY;
      acc_t acc = s_bias[i];
#pragma unroll
      for (int a = 0; a < MT; ++a)
#pragma unroll
        for (int b = 0; b < MT; ++b)
          acc += ok[r][a][b] ? static_cast<acc_t>(v[r][a][b]) : acc_t(0);
      if (row0 + i < rows) out[s_out[i] + out_x] = static_cast<T>(acc);
    }
  } else {
    for (int r = 0; r < kRowsPerThread; ++r) {
      const int i = threadIdx.x / TX + r * TY;
      if (row0 + i >= rows) break;
      const T* c = cols + s_cols[i];
      acc_t acc = s_bias[i];
      for_each_tap(p.y, TapStart{s_ky[i], s_iy[i]}, p.H, [&](int ky, int iy) {
        for_each_tap(p.x, xs, p.W, [&](int kx, int ix) {
          acc += static_cast<acc_t>(
              c[(ky * p.KW + kx) * p.row_stride + static_cast<int64_t>(iy) * p.W + ix]);
        });
      });
      out[s_out[i] + out_x] = static_cast<T>(acc);
    }
  }
}

template <typename T, int TX, int MT>
void launch_gather_mt(const T* cols, const T* bias, T* out, const GatherParams& p, int64_t n0,
                      int64_t rows, cudaStream_t stream) {
  constexpr int kRows = kGatherThreads / TX * rows_per_thread(MT);
  const dim3 grid(static_cast<unsigned>((rows + kRows - 1) / kRows),
                  static_cast<unsigned>((p.Wout + TX - 1) / TX));
  col2im_gather_kernel<T, TX, MT><<<grid, kGatherThreads, 0, stream>>>(cols, bias, out, p, n0, rows);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

// Most taps that reach one output coordinate along an axis: ceil(kernel / tap step).
int max_taps(const AxisTaps& a) { return (a.kernel + a.step - 1) / a.step; }

template <typename T, int TX>
void launch_gather(const T* cols, const T* bias, T* out, const GatherParams& p, int64_t n0,
                   int64_t rows, cudaStream_t stream) {
  const int mt = std::max(max_taps(p.y), max_taps(p.x));
  if (mt <= 1) {
    launch_gather_mt<T, TX, 1>(cols, bias, out, p, n0, rows, stream);
  } else if (mt == 2) {
    launch_gather_mt<T, TX, 2>(cols, bias, out, p, n0, rows, stream);
  } else {
    launch_gather_mt<T, TX, 0>(cols, bias, out, p, n0, rows, stream);
  }
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
  if ((g.Wout + 31) / 32 >= 65536) return false;  // gather grid: column tiles in grid.y
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

    const int64_t rows_out = nb * g.Cout * g.Hout;
    AT_DISPATCH_FLOATING_TYPES_AND2(
        at::kHalf, at::kBFloat16, dtype, "convt_forward_col2im", [&] {
          const scalar_t* bp = b.defined() ? b.const_data_ptr<scalar_t>() : nullptr;
          const scalar_t* cp = cols.const_data_ptr<scalar_t>();
          scalar_t* op = output.mutable_data_ptr<scalar_t>();
          if (g.Wout <= 8) {
            launch_gather<scalar_t, 8>(cp, bp, op, p, n0, rows_out, stream);
          } else if (g.Wout <= 16) {
            launch_gather<scalar_t, 16>(cp, bp, op, p, n0, rows_out, stream);
          } else {
            launch_gather<scalar_t, 32>(cp, bp, op, p, n0, rows_out, stream);
          }
        });
  }
}

}  // namespace fwd
}  // namespace convt
