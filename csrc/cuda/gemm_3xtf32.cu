// gemm_3xtf32.h: strict float32 GEMM as one TF32 GEMM over operands tripled along K.
//
// Why: with the convolution's TF32 flag off, the cuBLAS forward (U-Net's and Mask R-CNN's 2 x 2
// layers, DCGAN's) ran cuBLAS's full float32 GEMM on the FMA units: unet_up4 0.733 ms for 34 GFLOP
// (~47 TFLOP/s), 1.47x cuDNN where issue 5 asks 2x; its TF32 GEMM on a K-major weight takes 114 us
// (run TM). The split is the wgmma kernel's 3xTF32 (mma.cuh split_tf32), done once in memory
// because cuBLAS takes float32 operands. A first form ran three GEMMs accumulating into C (run TO):
// unet_up4 729 -> 581 us, but the second and third read and wrote C again (157 us per GEMM against
// 114), and layers with few input channels, whose GEMMs are bound by C's traffic, lost (dcgan_g4 318
// -> 424, unet_up1 1252 -> 1982). One GEMM over K' = 3K writes C once.
#include "gemm_3xtf32.h"

#include <ATen/ATen.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>

#include <algorithm>
#include <cstdint>

#include "env_knob.h"
#include "pack.cuh"
#include "../host_trace.h"

namespace convt {
namespace {

constexpr int kThreads = 256;  // split_tf32_kernel's column split assumes 2^8

// x -> hi (x rounded to the nearest TF32, ties away: cvt.rna's rounding, by an integer add) and
// lo = x - hi (exact). A finite x that would round past the largest finite float is truncated
// instead, so that hi stays finite; infinities and NaNs pass through hi, with lo 0.
__device__ __forceinline__ void split(float x, float& hi, float& lo) {
  const uint32_t bits = __float_as_uint(x);
  const bool finite = (bits & 0x7F800000u) != 0x7F800000u;
  uint32_t h = (bits + 0x1000u) & 0xFFFFE000u;
  if (finite && (h & 0x7F800000u) == 0x7F800000u) h = bits & 0xFFFFE000u;
  hi = __uint_as_float(finite ? h : bits);
  lo = finite ? x - hi : 0.f;
}

// One operand, `rows` x `cols` column-major (leading dimension ld) per batch entry (`stride`
// apart), copied dense with K tripled: the parts p0, p1, p2 (each hi or lo: bit b of `lo_mask`
// set = part b is lo) one after another along K. k_in_cols: K is the column index (out: rows x
// 3 cols, ld rows), else the row index (out: 3 rows x cols, ld 3 rows). Each block covers
// 2^col_shift columns (y over the batch's columns) with 2^(8 - col_shift) threads along the rows
// of each (x over rows): short columns (an image's 16 or 196 pixels) fill the block instead of
// leaving most of it idle. V = 4: four consecutive rows per thread (rows, ld and stride multiples
// of 4, `in` 16-byte aligned; every output offset is then a multiple of 4 too).
// stack_rows (k_in_cols only): the batch entries are stacked along the rows of one output matrix
// (entries * rows rows, entry b's from row b * rows), as the NCHW forward's flat cols layout reads
// its images: [Cin][images * H*W] made straight from [images][Cin][H*W], no transpose first
// (H100 runs TR / TS, strict forward device us: maskrcnn 1109 -> 1050, dcgan_g4 216 -> 205; with
// one 256-thread block per 16-pixel column, dcgan_g2's split had taken 102 us, now 29).
template <int V>
__global__ void __launch_bounds__(kThreads)
    split_tf32_kernel(const float* __restrict__ in, float* __restrict__ out, int64_t rows, int64_t cols, int64_t ld,
                      int64_t stride, int64_t columns, bool k_in_cols, int lo_mask, bool stack_rows, int col_shift) {
  using Vec = Pack<float, V>;
  const int64_t entries = columns / cols;
  const int row_threads = kThreads >> col_shift;
  const int row_lane = threadIdx.x & (row_threads - 1);
  // columns < 2^31 (checked by the launch): 32-bit division, inline (a 64-bit one is a call, and
  // its saved registers went through the stack)
  for (int col = (static_cast<int>(blockIdx.y) << col_shift) + static_cast<int>(threadIdx.x >> (8 - col_shift));
       col < columns; col += static_cast<int>(gridDim.y) << col_shift) {
    const int64_t b = col / static_cast<int>(cols), j = col - b * cols;
    const float* src = in + b * stride + j * ld;
    // stacked: one matrix of entries * rows rows (k_in_cols), entry b at row b * rows
    float* dst = stack_rows ? out + b * rows : out + b * 3 * rows * cols;
    const int64_t out_rows = stack_rows ? entries * rows : rows;
    for (int64_t i = (static_cast<int64_t>(blockIdx.x) * row_threads + row_lane) * V; i < rows;
         i += static_cast<int64_t>(gridDim.x) * row_threads * V) {
      const Vec x = *reinterpret_cast<const Vec*>(src + i);
      Vec hi, lo;
#pragma unroll
      for (int e = 0; e < V; ++e) split(x.v[e], hi.v[e], lo.v[e]);
#pragma unroll
      for (int part = 0; part < 3; ++part) {
        const int64_t at = k_in_cols ? (part * cols + j) * out_rows + i : j * 3 * rows + part * rows + i;
        const bool is_lo = (lo_mask >> part) & 1;
        Vec v;  // chosen element by element: a select of whole structs went through the stack
#pragma unroll
        for (int e = 0; e < V; ++e) v.v[e] = is_lo ? lo.v[e] : hi.v[e];
        *reinterpret_cast<Vec*>(dst + at) = v;
      }
    }
  }
}

// The operand at `x` (rows x cols, ld, batch entries `stride` apart, 0: shared) tripled along K.
// stack_rows: the entries stacked along the rows of one operand (see split_tf32_kernel; k_in_cols).
Tripled triple(const void* x, int64_t rows, int64_t cols, int64_t ld, int64_t batch, int64_t stride, bool k_in_cols,
               int lo_mask, bool stack_rows = false) {
  TORCH_CHECK(!stack_rows || k_in_cols, "convt: triple: stacked rows need K in the columns");
  const int64_t entries = stride == 0 ? 1 : batch;
  Tripled t;
  t.data = at::empty({std::max<int64_t>(entries * 3 * rows * cols, 1)},
                     at::TensorOptions().dtype(at::kFloat).device(at::kCUDA, c10::cuda::current_device()));
  t.ld = stack_rows ? entries * rows : k_in_cols ? rows : 3 * rows;
  t.stride = stride == 0 || stack_rows ? 0 : 3 * rows * cols;
  const int64_t columns = entries * cols;
  if (rows == 0 || columns == 0) return t;
  TORCH_CHECK(columns < (int64_t(1) << 31) - 65536 * 64, "convt: triple: too many columns (", columns, ")");
  const bool vec = rows % 4 == 0 && ld % 4 == 0 && stride % 4 == 0 && reinterpret_cast<uintptr_t>(x) % 16 == 0;
  const int64_t per_thread = vec ? 4 : 1;
  // Threads along a column: the power of two at or above its vectors, at least 4 (a warp then
  // reads 8 columns; the flat layout's are adjacent: 64 contiguous bytes each at 16 pixels).
  const int64_t vectors = (rows + per_thread - 1) / per_thread;
  int col_shift = 0;
  while (col_shift < 6 && (kThreads >> (col_shift + 1)) >= vectors) ++col_shift;
  const int64_t row_threads = kThreads >> col_shift;
  const dim3 grid(static_cast<unsigned>(std::min<int64_t>((vectors + row_threads - 1) / row_threads, 1024)),
                  static_cast<unsigned>(std::min<int64_t>((columns + (int64_t(1) << col_shift) - 1) >> col_shift, 65535)));
  auto stream = at::cuda::getCurrentCUDAStream();
  const float* src = static_cast<const float*>(x);
  if (vec) {
    split_tf32_kernel<4><<<grid, kThreads, 0, stream>>>(src, t.data.data_ptr<float>(), rows, cols, ld, stride, columns,
                                                        k_in_cols, lo_mask, stack_rows, col_shift);
  } else {
    split_tf32_kernel<1><<<grid, kThreads, 0, stream>>>(src, t.data.data_ptr<float>(), rows, cols, ld, stride, columns,
                                                        k_in_cols, lo_mask, stack_rows, col_shift);
  }
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return t;
}

}  // namespace

KnobMode gemm_3xtf32_mode() {
  static const KnobMode mode = env_mode("CONVT_GEMM_3XTF32");
  return mode;
}

// op(A) is m x k: stored m x k (K in its columns) or, transposed, k x m (K in its rows); op(B) is
// k x n: stored k x n (K in its rows) or n x k. A' = [Al Ah Ah] and B' = [Bh; Bl; Bh] along K, so
// that A' B' = Al Bh + Ah Bl + Ah Bh.
Tripled triple_a(const GemmCall& c) {
  const bool ta = c.op_a != CUBLAS_OP_N;
  return triple(c.a, ta ? c.k : c.m, ta ? c.m : c.k, c.lda, c.batch, c.stride_a, /*k_in_cols=*/!ta, /*lo_mask=*/0b001);
}

Tripled triple_b(const GemmCall& c) {
  const bool tb = c.op_b != CUBLAS_OP_N;
  return triple(c.b, tb ? c.n : c.k, tb ? c.k : c.n, c.ldb, c.batch, c.stride_b, /*k_in_cols=*/tb, /*lo_mask=*/0b010);
}

Tripled triple_a_images(const float* x, int64_t images, int64_t channels, int64_t pixels) {
  // Entry n = image n's [channels][pixels] (column-major pixels x channels, ld pixels), stacked.
  return triple(x, pixels, channels, pixels, images, channels * pixels, /*k_in_cols=*/true, /*lo_mask=*/0b001,
                /*stack_rows=*/true);
}

void run_gemm_tripled(const GemmCall& c, const Tripled& a, const Tripled& b) {
  CONVT_TRACE("cuda.cublas_gemm_3xtf32");
  TORCH_CHECK(c.bias == nullptr, "convt: run_gemm_tripled: no bias epilogue");
  TORCH_CHECK(3 * c.k <= INT32_MAX, "convt: run_gemm_tripled: K too large");
  GemmCall g = c;
  g.a = a.data.data_ptr<float>(), g.lda = a.ld, g.stride_a = a.stride;
  g.b = b.data.data_ptr<float>(), g.ldb = b.ld, g.stride_b = b.stride;
  g.k = 3 * c.k;
  run_gemm(g, at::kFloat, /*tf32=*/true);
}

}  // namespace convt
