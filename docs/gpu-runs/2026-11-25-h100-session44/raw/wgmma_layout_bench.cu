// Microbenchmark: HGMMA.64x256x16 (bf16) throughput by the operands' shared-memory layout, to tell whether the
// ws forward's layout (B: 32-byte K-major rows with the 32-byte swizzle, moved by whole rows per tap; A: the
// packed weights without swizzle) holds the tensor pipe below its rate (kb1_69: busy ~81% of the active cycles,
// ncu run AD2). Nothing else runs: no loads, no epilogue. Values are pseudo-random bf16 (power depends on them).
//
// Modes (B / A):
//   0: B 32B swizzle, 32-byte rows, start moved per tap by tap offsets like kb1_69's (the ws forward)
//   1: B 32B swizzle, 32-byte rows, start fixed
//   2: B 128B swizzle, 128-byte rows (4 k16 steps), start moved per tap by the same row offsets, k-step per MMA
//   3: B 128B swizzle, 128-byte rows, start fixed (k-step per MMA)
// A: the ws forward's packed weights (no swizzle: LBO 1024, SBO 128), 2 KB per tap, 15 taps.
// Warpgroups per block: 1 or 2 issuing concurrently (the ws forward's consumers alternate; both measured).
//
// Build on the device (repository root):
//   nvcc -std=c++17 -O3 -gencode arch=compute_90a,code=sm_90a -DCONVT_SM90A_DEVICE $(python -c "from torch.utils.cpp_extension import
//   include_paths; print(' '.join('-I'+p for p in include_paths()))") scratch/lead/wgmma_layout_bench.cu -o /tmp/wlb
//   /tmp/wlb
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>

#include "../../csrc/cuda/wgmma.cuh"

using namespace convt;

constexpr int kTaps = 15;
constexpr int kIters = 4000;           // chunks per warpgroup (15 MMAs each)
constexpr int kABytes = kTaps * 2048;  // packed weights: 64 x 16 bf16 per tap
constexpr int kBRows128 = 384;         // 128-byte rows: 48 KB
constexpr int kSmem = kABytes + kBRows128 * 128 + 1024;  // (the 32-byte rows use the first 11 KB of B)

// Tap offsets in rows (slots) as the ws forward's kb1_69 plan makes them: (2 - t) * P + (4 - u), P = 42.
__constant__ int c_off[kTaps];

template <int kMode, int kWgs>
__global__ void __launch_bounds__(128 * kWgs, 1) bench(float* out, long long* cycles) {
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  unsigned char* smem = smem_raw + ((1024 - (reinterpret_cast<uintptr_t>(smem_raw) & 1023)) & 1023);
  // Pseudo-random bf16 in about [-1, 1] everywhere.
  uint32_t* w = reinterpret_cast<uint32_t*>(smem);
  for (int i = threadIdx.x; i < (kABytes + kBRows128 * 128) / 4; i += blockDim.x) {
    uint32_t x = (i + 1) * 2654435761u ^ (blockIdx.x * 40503u);
    x ^= x >> 13; x *= 0x5bd1e995u; x ^= x >> 15;
    const uint32_t lo = 0x3c00u | (x & 0x807fu), hi = 0x3c00u | ((x >> 16) & 0x807fu);  // |v| in [2^-7, 2^-6) * ...
    w[i] = lo | (hi << 16);
  }
  wgmma::fence_proxy_async();
  __syncthreads();
  const uint32_t a_base = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
  const uint32_t b_base = a_base + kABytes;
  constexpr bool k128 = kMode >= 2;
  constexpr bool moved = kMode == 0 || kMode == 2;
  const uint64_t a0 = wgmma::make_desc(a_base, 64 * 16, 128);
  const uint64_t b0 = k128 ? wgmma::make_desc_swizzled(b_base, 16, 1024, wgmma::Swizzle::k128)
                           : wgmma::make_desc_swizzled(b_base, 16, 256, wgmma::Swizzle::k32);
  const uint32_t a_lo = static_cast<uint32_t>(a0), b_lo = static_cast<uint32_t>(b0);
  float acc[128];
#pragma unroll
  for (int i = 0; i < 128; ++i) acc[i] = 0.f;
  const long long t0 = clock64();
  for (int it = 0; it < kIters; ++it) {
    wgmma::fence();
#pragma unroll 1
    for (int tap = 0; tap < kTaps; ++tap) {
      const int row = moved ? c_off[tap] : 0;
      // 128-byte rows: the k16 step (32 bytes) within the row cycles with the tap.
      const uint32_t b_units = k128 ? static_cast<uint32_t>(row * 8 + (tap & 3) * 2) : static_cast<uint32_t>(row * 2);
      wgmma::m64n256k16_bf16(acc, wgmma::desc_lo(a0, a_lo + tap * 128), wgmma::desc_lo(b0, b_lo + b_units));
    }
    wgmma::commit();
    wgmma::wait<1>();
  }
  wgmma::wait<0>();
  const long long t1 = clock64();
  float s = 0.f;
#pragma unroll
  for (int i = 0; i < 128; ++i) {
    wgmma::fence_operand(acc[i]);
    s += acc[i];
  }
  out[blockIdx.x * blockDim.x + threadIdx.x] = s;
  if (threadIdx.x % 128 == 0) cycles[blockIdx.x * kWgs + threadIdx.x / 128] = t1 - t0;
}

template <int kMode, int kWgs>
void run(int sms, float* out, long long* cycles, long long* h_cycles) {
  auto k = bench<kMode, kWgs>;
  cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmem);
  k<<<sms, 128 * kWgs, kSmem>>>(out, cycles);  // warm-up (clocks up)
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  cudaEventRecord(e0);
  k<<<sms, 128 * kWgs, kSmem>>>(out, cycles);
  cudaEventRecord(e1);
  cudaEventSynchronize(e1);
  float ms = 0.f;
  cudaEventElapsedTime(&ms, e0, e1);
  cudaMemcpy(h_cycles, cycles, sizeof(long long) * sms * kWgs, cudaMemcpyDeviceToHost);
  long long cmax = 0;
  for (int i = 0; i < sms * kWgs; ++i) cmax = h_cycles[i] > cmax ? h_cycles[i] : cmax;
  const double mmas_per_sm = double(kWgs) * kIters * kTaps;
  const double flops = double(sms) * mmas_per_sm * 64 * 256 * 16 * 2;
  std::printf("mode %d (%s, %s), %d warpgroup(s): %.3f ms, %.0f TFLOP/s, %.1f cycles per HGMMA per SM, %.2f GHz (%s)\n",
              kMode, kMode >= 2 ? "128B rows" : "32B rows", (kMode == 0 || kMode == 2) ? "moved per tap" : "fixed",
              kWgs, ms, flops / (ms * 1e-3) / 1e12, double(cmax) / mmas_per_sm, double(cmax) / (ms * 1e-3) / 1e9,
              cudaGetErrorString(cudaGetLastError()));
}

int main() {
  int sms = 0;
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  int off[kTaps];
  for (int t = 0; t < 3; ++t)
    for (int u = 0; u < 5; ++u) off[t * 5 + u] = (2 - t) * 42 + (4 - u);
  cudaMemcpyToSymbol(c_off, off, sizeof(off));
  float* out;
  long long* cycles;
  cudaMalloc(&out, sizeof(float) * sms * 256);
  cudaMalloc(&cycles, sizeof(long long) * sms * 2);
  long long h[1024];
  for (int rep = 0; rep < 2; ++rep) {
    run<0, 1>(sms, out, cycles, h);
    run<1, 1>(sms, out, cycles, h);
    run<2, 1>(sms, out, cycles, h);
    run<3, 1>(sms, out, cycles, h);
    run<0, 2>(sms, out, cycles, h);
    run<1, 2>(sms, out, cycles, h);
    run<2, 2>(sms, out, cycles, h);
    run<3, 2>(sms, out, cycles, h);
  }
  return 0;
}
