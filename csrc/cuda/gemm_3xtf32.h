// Strict float32 GEMMs on TF32 tensor cores (gemm_3xtf32.cu): each operand split into a TF32 part
// and the remainder, three TF32 GEMMs summed in float32. The cuBLAS forward (forward_gemm.cu)
// calls it where the convolution's TF32 flag is off.
#pragma once

#include "cublas_gemm.h"
#include "env_knob.h"

namespace convt {

// c (float32 A, B, C; no bias) = op(A) op(B) to about float32 accuracy: A = Ah + Al, B = Bh + Bl
// with Ah, Bh rounded to TF32 (10-bit mantissas, exact in a TF32 product) and Al, Bl the exact
// float32 remainders; C = Al Bh + Ah Bl + Ah Bh as one TF32 GEMM over operands tripled along K
// ([Al Ah Ah] [Bh; Bl; Bh]; Al Bl, ~2^-22 of the product, is dropped). Each operand is copied
// once, three times its size, by the triple_* functions, so that one shared by several calls (the
// weight, across the forward's batch slices) is split once: an operand tripled along K (float32,
// dense) with its leading dimension and batch stride, made from a call's A or B as the call
// describes it.
struct Tripled {
  at::Tensor data;
  int64_t ld = 0, stride = 0;
};
Tripled triple_a(const GemmCall& c);
Tripled triple_b(const GemmCall& c);
// The A operand (pixels x channels, column-major, K = channels) of `images` NCHW images ([images]
// [channels][pixels], contiguous) with the images stacked along the rows (images * pixels rows),
// tripled along K: the NCHW forward's flat cols layout without its transpose to [channels][images]
// [pixels] first.
Tripled triple_a_images(const float* x, int64_t images, int64_t channels, int64_t pixels);
// c's GEMM over tripled operands (c's own a, b, lda, ldb and their strides are replaced).
void run_gemm_tripled(const GemmCall& c, const Tripled& a, const Tripled& b);

// Where the cuBLAS forward runs strict float32 this way (forward_gemm.cu): knob CONVT_GEMM_3XTF32,
// unset = the forward's rule, 0 = never (cuBLAS's full float32 GEMM), all = every strict call.
// Read once.
KnobMode gemm_3xtf32_mode();

}  // namespace convt
