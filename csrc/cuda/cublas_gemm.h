// One cuBLAS call shared by the GEMM-based paths (forward_gemm.cu, backward_s2d_gemm.cu):
// a strided-batched GEMM with the compute type that the *convolution* TF32 flag asks for.
#pragma once

#include <ATen/ATen.h>
#include <cublas_v2.h>

#include <cstdint>

namespace convt {

// Column-major, as cuBLAS sees it: C_i (m x n, ldc) = op(A_i) (m x k) * op(B_i) (k x n) for
// i < batch, with X_i = X + i * stride_x (a stride of 0 shares one operand).
struct GemmCall {
  cublasOperation_t op_a, op_b;
  int64_t m, n, k;
  const void* a;
  int64_t lda, stride_a;
  const void* b;
  int64_t ldb, stride_b;
  void* c;
  int64_t ldc, stride_c;
  int64_t batch;
  // Optional: m elements of the data type added to every column of every C_i (cublasLt's
  // bias epilogue), so that a caller writing C straight into its output needs no extra pass.
  const void* bias = nullptr;
};

// A, B and C all of `dtype`. float: TF32 tensor cores when `tf32` (the caller passes
// torch.backends.cudnn.allow_tf32), full fp32 otherwise, whatever cuBLAS's own matmul flag
// says; bf16 / fp16 accumulate in fp32; double in double. On the current stream.
// Returns whether c.bias was applied: false only when the call has a bias and went through
// the legacy API (no algorithm with the epilogue, or CONVT_GEMM_LT=0); the caller adds it.
bool run_gemm(const GemmCall& c, at::ScalarType dtype, bool tf32);

}  // namespace convt
