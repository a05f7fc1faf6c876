// cublas_gemm.h: one strided-batched cuBLAS GEMM with the convolution's precision flag.
#include "cublas_gemm.h"

#include <ATen/cuda/CUDAContext.h>
#include <ATen/cuda/Exceptions.h>

namespace convt {

void run_gemm(const GemmCall& c, at::ScalarType dtype, bool tf32) {
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
      TORCH_CHECK(false, "convt: GEMM: unsupported dtype ", dtype);
  }
  TORCH_CHECK(c.m <= INT32_MAX && c.n <= INT32_MAX && c.k <= INT32_MAX && c.lda <= INT32_MAX &&
                  c.ldb <= INT32_MAX && c.ldc <= INT32_MAX && c.batch <= INT32_MAX,
              "convt: GEMM: extents exceed cuBLAS's 32-bit dimensions");
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
      handle, c.op_a, c.op_b, static_cast<int>(c.m), static_cast<int>(c.n), static_cast<int>(c.k),
      alpha, c.a, type, static_cast<int>(c.lda), c.stride_a, c.b, type, static_cast<int>(c.ldb),
      c.stride_b, beta, c.c, type, static_cast<int>(c.ldc), c.stride_c, static_cast<int>(c.batch),
      compute, CUBLAS_GEMM_DEFAULT);
  cublasSetMathMode(handle, old_mode);
  TORCH_CUDABLAS_CHECK(st);
}


}  // namespace convt
