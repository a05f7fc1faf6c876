// grad_bias[co] = sum over n, oh, ow of grad_output[n, co, oh, ow].
//
// Two deterministic passes: blocks (co, split) sum a fixed range of the channel's
// N*Hout*Wout values (each thread a fixed subsequence, then a fixed-order block
// tree) into ws[co][split]; a second kernel sums the splits in order. channels_last
// grad_output is read in place, a block summing 32 channels (consecutive addresses) over
// its range of pixels. Pure bandwidth:
// one read of grad_output. (Next: ride along in the grad_weight pass, which already
// reads grad_output, once that pass reads each go element exactly once.)
#include "backward_common.cuh"

#include <ATen/Dispatch.h>

#include <algorithm>

namespace convt {
namespace bwd {
namespace {

constexpr int kThreads = 256;

// go is NCHW-contiguous. Split s covers flat positions [s*chunk, (s+1)*chunk) of the
// channel's (n, pixel) sequence.
template <typename T, typename Acc>
__global__ __launch_bounds__(kThreads) void grad_bias_partial_kernel(const T* __restrict__ go,
                                                                     Acc* __restrict__ ws,
                                                                     int64_t N, int64_t C,
                                                                     int64_t HWo, int64_t chunk) {
  __shared__ Acc s_red[kThreads / 32];
  const int64_t co = blockIdx.x;
  const int64_t split = blockIdx.y;
  const int64_t total = N * HWo;
  const int64_t q_begin = split * chunk;
  const int64_t q_end = std::min(total, q_begin + chunk);
  Acc acc = Acc(0);
  if (q_begin < q_end) {
    // Walk (n, r) incrementally: no 64-bit division per element.
    int64_t q = q_begin + threadIdx.x;
    int64_t n = q / HWo, r = q - n * HWo;
    for (; q < q_end; q += kThreads) {
      acc += static_cast<Acc>(go[(n * C + co) * HWo + r]);
      r += kThreads;
      if (r >= HWo) {  // rare for large images; a division only on row wrap
        n += r / HWo;
        r %= HWo;
      }
    }
  }
  const Acc total_sum = block_sum_fixed_order<kThreads>(acc, s_red);
  if (threadIdx.x == 0) ws[co * gridDim.y + split] = total_sum;
}

// go is channels_last-contiguous: [P][C] with P = N*Hout*Wout. Block (32-channel tile,
// split): thread (cx, ry) sums pixels begin + ry, + kRowsCL, ... of channel tile*32 + cx (a
// warp reads 32 consecutive channels of one pixel), then the kRowsCL partials are added in
// a fixed order.
constexpr int kRowsCL = kThreads / 32;
template <typename T, typename Acc>
__global__ __launch_bounds__(kThreads) void grad_bias_partial_cl_kernel(const T* __restrict__ go,
                                                                        Acc* __restrict__ ws,
                                                                        int64_t P, int64_t C,
                                                                        int64_t chunk) {
  __shared__ Acc s_part[kRowsCL][33];
  const int cx = threadIdx.x % 32, ry = threadIdx.x / 32;
  const int64_t c = static_cast<int64_t>(blockIdx.x) * 32 + cx;
  const int64_t split = blockIdx.y;
  const int64_t q_begin = split * chunk, q_end = std::min(P, q_begin + chunk);
  Acc acc = Acc(0);
  if (c < C)
    for (int64_t q = q_begin + ry; q < q_end; q += kRowsCL) acc += static_cast<Acc>(go[q * C + c]);
  s_part[ry][cx] = acc;
  __syncthreads();
  if (ry == 0 && c < C) {
    Acc sum = Acc(0);
#pragma unroll
    for (int r = 0; r < kRowsCL; ++r) sum += s_part[r][cx];
    ws[c * gridDim.y + split] = sum;
  }
}

template <typename T, typename Acc>
__global__ __launch_bounds__(kThreads) void grad_bias_final_kernel(const Acc* __restrict__ ws,
                                                                   T* __restrict__ gb, int64_t C,
                                                                   int64_t splits,
                                                                   int64_t stride) {
  const int64_t co = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  if (co >= C) return;
  Acc sum = Acc(0);
  for (int64_t s = 0; s < splits; ++s) sum += ws[co * splits + s];
  gb[co * stride] = static_cast<T>(sum);
}

}  // namespace

void grad_bias_sum(const at::Tensor& go, const Geometry& g, const at::Tensor& grad_bias) {
  const int64_t HWo = g.Hout * g.Wout;
  const int64_t total = g.N * HWo;
  TORCH_CHECK(g.Cout < (int64_t(1) << 31), "convt: too many output channels");
  // channels_last grad_output is read in place (no transposed copy just for the bias).
  const bool cl = channels_last_only(go);
  TORCH_CHECK(cl || go.is_contiguous(), "convt: grad_bias_sum: grad_output must be NCHW or channels_last");
  // Blocks: Cout (NCHW) or ceil(Cout / 32) channel tiles (channels_last), times the splits.
  const int64_t tiles = cl ? ceil_div(g.Cout, int64_t(32)) : g.Cout;
  TORCH_CHECK(tiles < (int64_t(1) << 31), "convt: too many output channels");
  int64_t splits = ceil_div(int64_t(sm_count()) * 8, tiles);
  splits = std::min(splits, ceil_div(total, kThreads * 8));
  splits = std::max<int64_t>(1, std::min<int64_t>(splits, 65535));
  const int64_t chunk = ceil_div(total, splits);
  auto stream = at::cuda::getCurrentCUDAStream();
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, go.scalar_type(), "convt_grad_bias", [&] {
    using Acc = acc_t<scalar_t>;
    at::Tensor ws = at::empty({g.Cout * splits}, go.options().dtype(c10::CppTypeToScalarType<Acc>::value));
    const dim3 grid(static_cast<unsigned>(tiles), static_cast<unsigned>(splits));
    if (cl) {
      grad_bias_partial_cl_kernel<scalar_t, Acc><<<grid, kThreads, 0, stream>>>(
          go.const_data_ptr<scalar_t>(), ws.mutable_data_ptr<Acc>(), total, g.Cout, chunk);
    } else {
      grad_bias_partial_kernel<scalar_t, Acc><<<grid, kThreads, 0, stream>>>(
          go.const_data_ptr<scalar_t>(), ws.mutable_data_ptr<Acc>(), g.N, g.Cout, HWo, chunk);
    }
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    grad_bias_final_kernel<scalar_t, Acc><<<static_cast<unsigned>(ceil_div(g.Cout, kThreads)), kThreads, 0, stream>>>(
        ws.const_data_ptr<Acc>(), grad_bias.mutable_data_ptr<scalar_t>(), g.Cout, splits,
        grad_bias.stride(0));
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  });
}

}  // namespace bwd
}  // namespace convt
