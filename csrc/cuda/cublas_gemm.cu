// cublas_gemm.h: one strided-batched cuBLAS GEMM with the convolution's precision flag.
//
// Two ways to run it:
//  - cublasLt with a plan cached per problem (matmul descriptor, three layouts and the
//    heuristic's algorithm, keyed by shapes, strides, transposes, types, device and pointer
//    alignment). Why: a host trace of a small training step (dcgan_g2 bf16 channels_last,
//    ninth session) showed 35-50 us of host time before each cublasGemmStridedBatchedEx
//    call (profiler on), and the step makes three of them. The cached plan makes a call a
//    descriptor lookup and one cublasLtMatmul.
//  - cublasGemmStridedBatchedEx (the legacy API): where the heuristic finds no algorithm,
//    when the cache is full, and under CONVT_GEMM_LT=0.
//
// Determinism: a plan's algorithm is fixed once chosen, and every split-K reduction scheme
// sums its parts in a fixed order (the in-place scheme uses its workspace only for counters
// that sequence the parts), so a problem gives the same bits run to run on one device
// (checked: tests/test_cuda.py test_gemm_cublaslt_and_legacy_modes, two processes).
//
// Workspace: the heuristic may use up to 32 MiB (kMaxWorkspaceBytes). Where a plan fits
// PyTorch's own cublasLt workspace (1 MiB in torch 2.11, at::cuda::getCUDABlasLtWorkspace())
// it uses that; a larger one comes from the caching allocator per call. Why 32 MiB: with
// 1 MiB the heuristic ran dcgan_g4's grad_weight GEMM (m 1024, n 128, k 32768) on 64 x 32
// tiles with no split, 49 us; with 32 MiB it picks split-K, 31 us + a 2 us reduction
// (H100 run QB). An earlier version excluded the in-place scheme; with 1 MiB, the fp32
// grad_weight GEMM of U-Net's channels_last 2 x 2 layer (256 x 128, K = 524288) then got a
// single-split algorithm and took 16.5 ms against 0.33 ms (run CI); allowing in place
// brought that step to 1.89 ms (legacy API: 2.28). CONVT_GEMM_WORKSPACE_MB lowers the bound
// (workspace_bound_bytes).
#include "cublas_gemm.h"
#include "../host_trace.h"

#include <ATen/cuda/CUDAContext.h>
#include <ATen/cuda/Exceptions.h>
#include <c10/cuda/CUDAGuard.h>
#include <cublasLt.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <unordered_map>

namespace convt {
namespace {

struct Types {
  cudaDataType_t data, scale;
  cublasComputeType_t compute;
};

Types types_for(at::ScalarType dtype, bool tf32) {
  switch (dtype) {
    case at::kFloat:
      return {CUDA_R_32F, CUDA_R_32F, tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F};
    case at::kDouble:
      return {CUDA_R_64F, CUDA_R_64F, CUBLAS_COMPUTE_64F};
    case at::kHalf:
      return {CUDA_R_16F, CUDA_R_32F, CUBLAS_COMPUTE_32F};
    case at::kBFloat16:
      return {CUDA_R_16BF, CUDA_R_32F, CUBLAS_COMPUTE_32F};
    default:
      TORCH_CHECK(false, "convt: GEMM: unsupported dtype ", dtype);
  }
}

void run_legacy(const GemmCall& c, at::ScalarType dtype, const Types& t) {
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
      alpha, c.a, t.data, static_cast<int>(c.lda), c.stride_a, c.b, t.data, static_cast<int>(c.ldb),
      c.stride_b, beta, c.c, t.data, static_cast<int>(c.ldc), c.stride_c, static_cast<int>(c.batch),
      t.compute, CUBLAS_GEMM_DEFAULT);
  cublasSetMathMode(handle, old_mode);
  TORCH_CUDABLAS_CHECK(st);
}

// ---- cublasLt plans ---------------------------------------------------------------------

struct PlanKey {
  int64_t m, n, k, lda, ldb, ldc, stride_a, stride_b, stride_c, batch;
  int op_a, op_b, data, compute, device;
  uint32_t align;  // the smallest of the pointers' alignments, in bytes (<= 16)
  bool bias;       // with the bias epilogue
  bool operator==(const PlanKey& o) const {
    return m == o.m && n == o.n && k == o.k && lda == o.lda && ldb == o.ldb && ldc == o.ldc &&
           stride_a == o.stride_a && stride_b == o.stride_b && stride_c == o.stride_c &&
           batch == o.batch && op_a == o.op_a && op_b == o.op_b && data == o.data &&
           compute == o.compute && device == o.device && align == o.align && bias == o.bias;
  }
};

struct PlanKeyHash {
  size_t operator()(const PlanKey& k) const {
    const int64_t fields[] = {k.m, k.n, k.k, k.lda, k.ldb, k.ldc, k.stride_a, k.stride_b,
                              k.stride_c, k.batch, k.op_a, k.op_b, k.data, k.compute, k.device,
                              static_cast<int64_t>(k.align), static_cast<int64_t>(k.bias)};
    size_t h = 0;
    for (int64_t f : fields) h = h * 1000003u ^ std::hash<int64_t>{}(f);
    return h;
  }
};

// Descriptors live as long as the process (the cache never evicts; see kMaxPlans).
struct Plan {
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  cublasLtMatmulAlgo_t algo{};
  size_t workspace = 0;
  bool usable = false;
  // The bias pointer is an attribute of the shared descriptor: set and used under this lock
  // (cublasLtMatmul only enqueues, so it is held briefly).
  std::mutex bias_mutex;
};

// Distinct problems a process sees: a few per layer. Past this, calls take the legacy path
// rather than growing the cache without bound.
constexpr size_t kMaxPlans = 4096;
// Upper bound on the workspace a plan may ask for (split-K partials or counters); see the top.
constexpr uint64_t kMaxWorkspaceBytes = uint64_t(32) << 20;

// The workspace bound: kMaxWorkspaceBytes, or n MiB under the measurement knob
// CONVT_GEMM_WORKSPACE_MB=<n> (at most kMaxWorkspaceBytes; 1 gives the plans of PyTorch's own
// 1 MiB workspace, the default before H100 run QB). Read once.
uint64_t workspace_bound_bytes() {
  static const uint64_t bytes = [] {
    const char* e = std::getenv("CONVT_GEMM_WORKSPACE_MB");
    if (e == nullptr || *e == '\0') return kMaxWorkspaceBytes;
    char* end = nullptr;
    const unsigned long long mb = std::strtoull(e, &end, 10);
    TORCH_CHECK(end != nullptr && *end == '\0', "convt: CONVT_GEMM_WORKSPACE_MB must be a whole number of MiB, got '", e, "'");
    return std::min<uint64_t>(kMaxWorkspaceBytes, static_cast<uint64_t>(mb) << 20);
  }();
  return bytes;
}

bool lt_enabled() {
  static const bool enabled = [] {
    const char* e = std::getenv("CONVT_GEMM_LT");
    return !(e != nullptr && std::strcmp(e, "0") == 0);
  }();
  return enabled;
}

uint32_t alignment_of(const void* p) {
  const auto v = reinterpret_cast<uintptr_t>(p);
  for (uint32_t a = 16; a > 1; a /= 2) {
    if (v % a == 0) return a;
  }
  return 1;
}

cublasLtMatrixLayout_t make_layout(cudaDataType_t type, int64_t rows, int64_t cols, int64_t ld,
                                   int64_t batch, int64_t stride) {
  cublasLtMatrixLayout_t layout = nullptr;
  TORCH_CUDABLAS_CHECK(cublasLtMatrixLayoutCreate(&layout, type, static_cast<uint64_t>(rows),
                                                  static_cast<uint64_t>(cols), ld));
  if (batch > 1) {
    const int32_t count = static_cast<int32_t>(batch);
    TORCH_CUDABLAS_CHECK(cublasLtMatrixLayoutSetAttribute(
        layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof(count)));
    TORCH_CUDABLAS_CHECK(cublasLtMatrixLayoutSetAttribute(
        layout, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof(stride)));
  }
  return layout;
}

std::unique_ptr<Plan> make_plan(cublasLtHandle_t lt, const GemmCall& c, const Types& t,
                                uint32_t align) {
  auto p = std::make_unique<Plan>();
  TORCH_CUDABLAS_CHECK(cublasLtMatmulDescCreate(&p->op, t.compute, t.scale));
  const cublasOperation_t op_a = c.op_a, op_b = c.op_b;
  TORCH_CUDABLAS_CHECK(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_TRANSA, &op_a, sizeof(op_a)));
  TORCH_CUDABLAS_CHECK(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_TRANSB, &op_b, sizeof(op_b)));
  if (c.bias != nullptr) {
    // One bias vector of m elements (the data type, the epilogue's default) for every
    // column of every batch entry (batch stride 0, the default).
    const cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_BIAS;
    TORCH_CUDABLAS_CHECK(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue,
                                                        sizeof(epilogue)));
    TORCH_CUDABLAS_CHECK(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &c.bias,
                                                        sizeof(c.bias)));
  }
  const bool ta = op_a != CUBLAS_OP_N, tb = op_b != CUBLAS_OP_N;
  p->a = make_layout(t.data, ta ? c.k : c.m, ta ? c.m : c.k, c.lda, c.batch, c.stride_a);
  p->b = make_layout(t.data, tb ? c.n : c.k, tb ? c.k : c.n, c.ldb, c.batch, c.stride_b);
  p->c = make_layout(t.data, c.m, c.n, c.ldc, c.batch, c.stride_c);

  cublasLtMatmulPreference_t pref = nullptr;
  TORCH_CUDABLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref));
  const uint64_t max_ws = workspace_bound_bytes();
  TORCH_CUDABLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(
      pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &max_ws, sizeof(max_ws)));
  // Every split-K reduction scheme is allowed (no REDUCTION_SCHEME_MASK): see the header.
  // The algorithm must suit every call with this key: the key holds the pointers' alignment.
  for (auto attr : {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
                    CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES}) {
    TORCH_CUDABLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, attr, &align, sizeof(align)));
  }
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  const cublasStatus_t st = cublasLtMatmulAlgoGetHeuristic(lt, p->op, p->a, p->b, p->c, p->c, pref,
                                                           1, &result, &found);
  cublasLtMatmulPreferenceDestroy(pref);
  if (st == CUBLAS_STATUS_SUCCESS && found > 0 && result.state == CUBLAS_STATUS_SUCCESS) {
    p->algo = result.algo;
    p->workspace = result.workspaceSize;
    p->usable = true;
  }
  return p;
}

// The cached plan for this call (built on first use), or nullptr: no algorithm, or the cache
// is full.
Plan* plan_for(cublasLtHandle_t lt, const GemmCall& c, const Types& t, int device) {
  uint32_t align = std::min({alignment_of(c.a), alignment_of(c.b), alignment_of(c.c)});
  if (c.bias != nullptr) align = std::min(align, alignment_of(c.bias));
  const PlanKey key{c.m, c.n, c.k, c.lda, c.ldb, c.ldc, c.stride_a, c.stride_b, c.stride_c,
                    c.batch, static_cast<int>(c.op_a), static_cast<int>(c.op_b),
                    static_cast<int>(t.data), static_cast<int>(t.compute), device, align,
                    c.bias != nullptr};
  static std::mutex mutex;
  static std::unordered_map<PlanKey, std::unique_ptr<Plan>, PlanKeyHash> plans;
  const std::lock_guard<std::mutex> lock(mutex);
  auto it = plans.find(key);
  if (it == plans.end()) {
    if (plans.size() >= kMaxPlans) return nullptr;
    it = plans.emplace(key, make_plan(lt, c, t, align)).first;
  }
  return it->second->usable ? it->second.get() : nullptr;
}

}  // namespace

bool run_gemm(const GemmCall& c, at::ScalarType dtype, bool tf32) {
  CONVT_TRACE("cuda.cublas_gemm");
  const Types t = types_for(dtype, tf32);
  TORCH_CHECK(c.m <= INT32_MAX && c.n <= INT32_MAX && c.k <= INT32_MAX && c.lda <= INT32_MAX &&
                  c.ldb <= INT32_MAX && c.ldc <= INT32_MAX && c.batch <= INT32_MAX,
              "convt: GEMM: extents exceed cuBLAS's 32-bit dimensions");
  if (lt_enabled()) {
    const int device = c10::cuda::current_device();
    cublasLtHandle_t lt = nullptr;
    {
      CONVT_TRACE("cuda.cublas_gemm.handle");
      lt = at::cuda::getCurrentCUDABlasLtHandle();
    }
    Plan* plan = nullptr;
    {
      CONVT_TRACE("cuda.cublas_gemm.plan_lookup");
      plan = plan_for(lt, c, t, device);
    }
    if (Plan* p = plan) {
      const float alpha_f = 1.f, beta_f = 0.f;
      const double alpha_d = 1.0, beta_d = 0.0;
      const void* alpha = dtype == at::kDouble ? static_cast<const void*>(&alpha_d) : &alpha_f;
      const void* beta = dtype == at::kDouble ? static_cast<const void*>(&beta_d) : &beta_f;
      // PyTorch's cublasLt workspace belongs to the current handle and stream, as our call
      // does; a plan that needs more (or one made before that workspace shrank,
      // setCUDABlasLtWorkspaceSize) gets its own from the caching allocator, on this stream.
      void* ws = nullptr;
      at::Tensor own_workspace;
      if (p->workspace > 0) {
        CONVT_TRACE("cuda.cublas_gemm.workspace");
        if (p->workspace <= at::cuda::getCUDABlasLtWorkspaceSize()) {
          ws = at::cuda::getCUDABlasLtWorkspace();
        } else {
          own_workspace = at::empty({static_cast<int64_t>(p->workspace)},
                                    at::TensorOptions().dtype(at::kByte).device(at::kCUDA, device));
          ws = own_workspace.data_ptr();
        }
      }
      const auto matmul = [&] {
        CONVT_TRACE("cuda.cublas_gemm.matmul");
        TORCH_CUDABLAS_CHECK(cublasLtMatmul(lt, p->op, alpha, c.a, p->a, c.b, p->b, beta, c.c, p->c,
                                            c.c, p->c, &p->algo, ws, p->workspace,
                                            at::cuda::getCurrentCUDAStream()));
      };
      if (c.bias != nullptr) {
        const std::lock_guard<std::mutex> lock(p->bias_mutex);
        TORCH_CUDABLAS_CHECK(cublasLtMatmulDescSetAttribute(
            p->op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &c.bias, sizeof(c.bias)));
        matmul();
      } else {
        matmul();
      }
      return true;
    }
  }
  run_legacy(c, dtype, t);
  return c.bias == nullptr;
}

}  // namespace convt
