// Backward of a transposed convolution whose kernel equals its stride (no padding, no
// dilation, no output_padding): U-Net and Mask R-CNN upsampling layers (2x2, stride 2).
//
// Then every output pixel receives exactly one tap, (oh, ow) = (ih*KH + ki, iw*KW + kj), and
// grad_output rearranged "space to depth",
//   S[(co*KH + ki)*KW + kj][n][ih*W + iw] = grad_output[n, co, ih*KH + ki, iw*KW + kj],
// turns both gradients into plain matrix products over R = Cout*KH*KW rows:
//   grad_input[n]  = Wm   S[:, n, :]        Wm = weight as [Cin][R] (its own layout)
//   grad_weight    = X^T  S^T               X^T = input as [Cin][N*H*W]
// which cuBLAS runs near its peak. The cost over the GEMMs is one read and write of
// grad_output (S) and, for grad_weight with N > 1, of the input (X^T). The backward's own
// kernels instead run these layers as implicit GEMMs with 2x2 taps (H100 run AM: unet_up4
// fp32 grad_input 0.43 ms + grad_weight 0.40 ms against cuDNN's 0.79 ms for the whole
// training step).
//
// channels_last operands (cols_gemm_backward_cl): there the input already is the GEMM's
// [N*H*W][Cin] operand, and with grad_output's space-to-depth in the weight's column order,
//   S[(n*H + ih)*W + iw][(co*KH + ki)*KW + kj] = grad_output[n, co, ih*KH + ki, iw*KW + kj],
// grad_input comes out channels_last straight from its GEMM and grad_weight in its own layout:
//   grad_input [N*H*W][Cin] = S Wm^T          Wm = weight as [Cin][R]
//   grad_weight as [Cin][R]  = X^T S.
// (The columns were tap-major, (ki, kj, co), through 10c57bf: whole-run copies for S, but two
// permute copies of the weights per call, 13-20 us of host time each in run MB.)
//
// Any other layer with groups 1 and channels_last operands (cols_gemm_backward_cl): the same
// products over the channels_last im2col of grad_output, in the same co-major order,
//   S[(n*H + ih)*W + iw][(co*KH + ki)*KW + kj] = grad_output[n, co, ih*SH - PH + ki*DH, iw*SW - PW + kj*DW]
// (zero outside), transposed per pixel through shared memory (im2col_cl). At sparse taps (KH*KW <= SH*SW, e.g. kernel 3
// at stride 5: 9 of every 25 grad_output pixels are read at all) S is no bigger than
// grad_output, and the gather, the two GEMMs and no transpose beat the backward's own
// kernels on NCHW copies (backward.cu says where).
//
// Any other layer with groups 1 (cols_gemm_backward, NCHW): the same S holding, for every
// input pixel and tap, the grad_output pixel that tap reaches,
//   S[(co*KH + ki)*KW + kj][n][ih*W + iw] = grad_output[n, co, ih*SH - PH + ki*DH, iw*SW - PW + kj*DW]
// (zero outside grad_output): im2col of grad_output, KH*KW / (SH*SW) times its size, and the
// same two GEMMs. At kernel == stride it is the rearrangement above. Worth its bigger S on
// very small images with many channels (DCGAN's 4 x 4 layer; backward.cu says where), where
// the implicit-GEMM kernels' pixel tiles run mostly empty.
//
// Determinism: cuBLAS GEMMs give the same bits run to run on one device; the rearranging
// kernels write every element once.
#include "backward_common.cuh"
#include "cublas_gemm.h"
#include "env_knob.h"
#include "pack.cuh"
#include "tf32_flag.h"

#include <ATen/Dispatch.h>

namespace convt {
namespace bwd {
namespace {

constexpr int kThreads = 256;
constexpr int kKw2Unroll = 4;  // vectors per thread in flight (space_to_depth_kw2_kernel)

// Block row r = (co*KH + ki)*KW + kj of S (blockIdx.y, its tap decoded once per block),
// threads over its K = N*H*W columns in order (coalesced writes; two divisions per element).
// grad_output read through its strides (any layout), zero where a tap falls outside it. The
// first version decoded all six indices per element: 0.25 ms for dcgan_g4's 34 M elements
// (run BU), division-bound. cols_gemm_applies keeps K and R below 2^31.
template <typename T>
__global__ __launch_bounds__(kThreads) void space_to_depth_kernel(const T* __restrict__ go,
                                                                  T* __restrict__ s, Geometry g,
                                                                  Strides4 st, int32_t K, int32_t R) {
  const int32_t W = static_cast<int32_t>(g.W), H = static_cast<int32_t>(g.H);
  const int32_t KW = static_cast<int32_t>(g.KW), KH = static_cast<int32_t>(g.KH);
  for (int32_t r = blockIdx.y; r < R; r += gridDim.y) {
    const int32_t kj = r % KW, t = r / KW;
    const int32_t ki = t % KH, co = t / KH;
    const int64_t oh0 = static_cast<int64_t>(ki) * g.DH - g.PH, ow0 = static_cast<int64_t>(kj) * g.DW - g.PW;
    const T* go_co = go + static_cast<int64_t>(co) * st.s1;
    T* srow = s + static_cast<int64_t>(r) * K;
    for (int32_t k = blockIdx.x * kThreads + threadIdx.x; k < K; k += gridDim.x * kThreads) {
      const int32_t q = k / W, iw = k - q * W;
      const int32_t n = q / H, ih = q - n * H;
      const int64_t oh = static_cast<int64_t>(ih) * g.SH + oh0, ow = static_cast<int64_t>(iw) * g.SW + ow0;
      srow[k] = (oh >= 0 && oh < g.Hout && ow >= 0 && ow < g.Wout)
                    ? go_co[static_cast<int64_t>(n) * st.s0 + oh * st.s2 + ow * st.s3]
                    : T(0);
    }
  }
}

// The same S, VEC consecutive columns (of one input row: W % VEC == 0) per thread: one
// decode and one 16-byte store per VEC elements. The element kernel above wrote dcgan_g4's
// 34 M bf16 elements in 0.143 ms (NCHW) and 0.234 ms (channels_last grad_output), ~0.5 TB/s:
// instruction-bound (run FD/FH).
template <typename T, int VEC>
__global__ __launch_bounds__(kThreads) void space_to_depth_vec_kernel(const T* __restrict__ go,
                                                                      T* __restrict__ s, Geometry g,
                                                                      Strides4 st, int32_t K, int32_t R) {
  const int32_t W = static_cast<int32_t>(g.W), H = static_cast<int32_t>(g.H);
  const int32_t KW = static_cast<int32_t>(g.KW), KH = static_cast<int32_t>(g.KH);
  const int32_t vecs = K / VEC;
  for (int32_t r = blockIdx.y; r < R; r += gridDim.y) {
    const int32_t kj = r % KW, t = r / KW;
    const int32_t ki = t % KH, co = t / KH;
    const int64_t oh0 = static_cast<int64_t>(ki) * g.DH - g.PH, ow0 = static_cast<int64_t>(kj) * g.DW - g.PW;
    const T* go_co = go + static_cast<int64_t>(co) * st.s1;
    Pack<T, VEC>* srow = reinterpret_cast<Pack<T, VEC>*>(s + static_cast<int64_t>(r) * K);
    for (int32_t kv = blockIdx.x * kThreads + threadIdx.x; kv < vecs; kv += gridDim.x * kThreads) {
      const int32_t k = kv * VEC;
      const int32_t q = k / W, iw0 = k - q * W;
      const int32_t n = q / H, ih = q - n * H;
      const int64_t oh = static_cast<int64_t>(ih) * g.SH + oh0;
      const bool row_ok = oh >= 0 && oh < g.Hout;
      const T* go_row = go_co + static_cast<int64_t>(n) * st.s0 + oh * st.s2;
      Pack<T, VEC> out;
#pragma unroll
      for (int e = 0; e < VEC; ++e) {
        const int64_t ow = static_cast<int64_t>(iw0 + e) * g.SW + ow0;
        out.v[e] = (row_ok && ow >= 0 && ow < g.Wout) ? go_row[ow * st.s3] : T(0);
      }
      srow[kv] = out;
    }
  }
}

// The same S by blocks of one output channel co and `imgs` consecutive images, where their
// grad_output planes fit in shared memory (the NCHW columns path runs on small images: DCGAN's
// 4 x 4 and 16 x 16 layers, backward.cu): the planes are read once, in 16-byte vectors where
// they are dense and aligned, then every tap's S row segment S[co*KK + t][n0 .. n0 + imgs)[0 ..
// H*W) (one contiguous run of imgs*H*W elements) is written from shared memory, VEC elements per
// store. Consecutive blocks take consecutive image ranges of one channel, so the stores in
// flight at a time fill whole runs of the same KK rows. The vector kernel above reads
// grad_output once per tap (KH*KW times, scalar loads at stride SW) and its concurrent blocks
// store into rows K elements apart: dcgan_g4 bf16 took 73 us for its 67 MB of S (run QL), the
// channels_last columns (im2col_cl_taps, stores along whole rows) ~30 us. A first form of this
// kernel, one block per plane in (n, co) order, took as long (72.7 us; dcgan_g2 58 us against
// the element kernel's 40: 64 elements per plane, run QL).
// Staged planes are `pitch` elements per row and `plane_stride` per image. With pitch == Wout
// (dense rows) a warp's reads hit few banks: on dcgan_g4 bf16 (VEC 8, stride 2) lanes 2m read rows
// 2m apart, 128 bytes, the same bank, a 16-way conflict (float32, VEC 4: 8-way), which fits
// bf16 taking longer than float32 for half the bytes (74.5 against 64.1 us, run QM). Padded
// rows of Wout + 1 (rows 2 apart then differ by one bank: at most
// 2-way): dcgan_g4 bf16 74.7 -> 47.1 us (run QO; predicted ~30-35). plane_rows_padded chooses.
constexpr int64_t kPlaneSmemBytes = 16 * 1024;  // largest staging (bytes)

template <typename T, int VEC, bool kPadded>
__global__ __launch_bounds__(kThreads) void space_to_depth_plane_kernel(const T* __restrict__ go,
                                                                        T* __restrict__ s, Geometry g,
                                                                        Strides4 st, int32_t K, int32_t imgs,
                                                                        int32_t blocks_per_co, bool dense_planes,
                                                                        int32_t padded_pitch) {
  constexpr int kLoadVec = 16 / sizeof(T);
  __shared__ Pack<T, kLoadVec> plane_vecs[kPlaneSmemBytes / 16];
  T* planes = reinterpret_cast<T*>(plane_vecs);
  const int32_t Hout = static_cast<int32_t>(g.Hout), Wout = static_cast<int32_t>(g.Wout);
  const int32_t N = static_cast<int32_t>(g.N), W = static_cast<int32_t>(g.W), KW = static_cast<int32_t>(g.KW);
  const int32_t KK = static_cast<int32_t>(g.KH * g.KW), Cout = static_cast<int32_t>(g.Cout);
  const int32_t SH = static_cast<int32_t>(g.SH), SW = static_cast<int32_t>(g.SW);
  const int32_t DH = static_cast<int32_t>(g.DH), DW = static_cast<int32_t>(g.DW);
  const int32_t PH = static_cast<int32_t>(g.PH), PW = static_cast<int32_t>(g.PW);
  const int32_t plane_elems = Hout * Wout, hw = static_cast<int32_t>(g.H) * W;
  // kPadded: rows of padded_pitch (Wout + 1) elements; else dense (the form run QM measured).
  const int32_t pitch = kPadded ? padded_pitch : Wout, plane_stride = kPadded ? Hout * padded_pitch : plane_elems;
  for (int32_t b = blockIdx.x; b < Cout * blocks_per_co; b += gridDim.x) {
    const int32_t co = b / blocks_per_co, n0 = (b - co * blocks_per_co) * imgs;
    const int32_t nimg = min(imgs, N - n0);
    __syncthreads();  // the previous block's reads are done
    if (dense_planes) {
      // Each plane is Hout rows of Wout elements back to back, a whole number of 16-byte vectors;
      // stored as vectors where the staging is dense too (pitch == Wout), else element by element.
      const int32_t plane_vecs_n = plane_elems / kLoadVec;
      for (int32_t i = threadIdx.x; i < nimg * plane_vecs_n; i += kThreads) {
        const int32_t nl = i / plane_vecs_n, v = i - nl * plane_vecs_n;
        const T* src = go + static_cast<int64_t>(n0 + nl) * st.s0 + static_cast<int64_t>(co) * st.s1;
        const Pack<T, kLoadVec> x = reinterpret_cast<const Pack<T, kLoadVec>*>(src)[v];
        if constexpr (!kPadded) {
          plane_vecs[i] = x;
        } else {
#pragma unroll
          for (int q = 0; q < kLoadVec; ++q) {
            const int32_t e = v * kLoadVec + q, oh = e / Wout, ow = e - oh * Wout;
            planes[nl * plane_stride + oh * pitch + ow] = x.v[q];
          }
        }
      }
    } else {
      for (int32_t i = threadIdx.x; i < nimg * plane_elems; i += kThreads) {
        const int32_t nl = i / plane_elems, e = i - nl * plane_elems;
        const int32_t oh = e / Wout, ow = e - oh * Wout;
        planes[nl * plane_stride + oh * pitch + ow] =
            go[static_cast<int64_t>(n0 + nl) * st.s0 + static_cast<int64_t>(co) * st.s1 + oh * st.s2 + ow * st.s3];
      }
    }
    __syncthreads();
    T* dst = s + static_cast<int64_t>(co) * KK * K + static_cast<int64_t>(n0) * hw;
    const int32_t vecs = nimg * hw / VEC;  // per tap: a row of H*W elements is whole vectors
    for (int32_t j = threadIdx.x; j < KK * vecs; j += kThreads) {
      const int32_t t = j / vecs, kv = j - t * vecs;
      const int32_t ki = t / KW, kj = t - ki * KW;
      const int32_t k = kv * VEC, nl = k / hw, pix = k - nl * hw;
      const int32_t ih = pix / W, iw0 = pix - ih * W;
      const int32_t oh = ih * SH + ki * DH - PH;
      const bool row_ok = oh >= 0 && oh < Hout;
      const T* plane = planes + nl * plane_stride + oh * pitch;
      Pack<T, VEC> out;
#pragma unroll
      for (int e = 0; e < VEC; ++e) {
        const int32_t ow = (iw0 + e) * SW + kj * DW - PW;
        out.v[e] = (row_ok && ow >= 0 && ow < Wout) ? plane[ow] : T(0);
      }
      reinterpret_cast<Pack<T, VEC>*>(dst + static_cast<int64_t>(t) * K)[kv] = out;
    }
  }
}

// Kernel == stride with KW == 2 (U-Net, Mask R-CNN; no padding or dilation: s2d_gemm_applies)
// and NCHW grad_output: one thread per V consecutive elements of a grad_output row, read as
// one vector, whose V/2 even columns go to S's kj = 0 row and odd columns to its kj = 1 row
// (two vector stores; consecutive threads write consecutive pieces of both rows). The
// generic kernel above pays two divisions and a load at stride KW per element: it ran
// maskrcnn at 0.44 ms in fp32 and 0.42 in bf16 (run BZ), the same time for half the bytes,
// so instruction-bound. Here the decode is once per vector. Requires W % (V/2) == 0 (each
// piece stays in one row of S and aligned) and `go` aligned to V elements.
// S's two pieces of grad_output vector q (V elements of one row: the even columns to kj = 0,
// the odd ones to kj = 1).
template <typename T, int V, typename Idx>
__device__ __forceinline__ void kw2_store(const Pack<T, V>& in, Idx q, T* __restrict__ s, Idx vecs_per_row,
                                          int32_t Hout, int32_t Cout, int32_t KH, int32_t H, int32_t W, Idx K) {
  constexpr int kHalf = V / 2;
  const Idx row = q / vecs_per_row;  // (n*Cout + co)*Hout + oh: grad_output's row
  const Idx j = q - row * vecs_per_row;
  const Idx nc = row / Hout;
  const int32_t oh = static_cast<int32_t>(row - nc * Hout);
  const Idx n = nc / Cout;
  const int32_t co = static_cast<int32_t>(nc - n * Cout);
  const int32_t ih = oh / KH, ki = oh - ih * KH;
  Pack<T, kHalf> even, odd;
#pragma unroll
  for (int i = 0; i < kHalf; ++i) {
    even.v[i] = in.v[2 * i];
    odd.v[i] = in.v[2 * i + 1];
  }
  // S[(co*KH + ki)*2 + kj][n][ih*W + iw], iw = j*V/2 for the piece's first column.
  T* dst = s + static_cast<Idx>((co * KH + ki) * 2) * K + (n * H + ih) * W + j * kHalf;
  *reinterpret_cast<Pack<T, kHalf>*>(dst) = even;
  *reinterpret_cast<Pack<T, kHalf>*>(dst + K) = odd;
}

template <typename T, int V, typename Idx>
__global__ __launch_bounds__(kThreads) void space_to_depth_kw2_kernel(
    const T* __restrict__ go, T* __restrict__ s, Idx total, Idx vecs_per_row, int32_t Hout,
    int32_t Cout, int32_t KH, int32_t H, int32_t W, Idx K) {
  // Each thread loads kKw2Unroll vectors (kThreads apart) before storing any: with one load in
  // flight per thread the kernel moved Mask R-CNN's fp32 grad_output at 1.8 TB/s (run IG).
  for (Idx q0 = static_cast<Idx>(blockIdx.x) * kThreads * kKw2Unroll + threadIdx.x; q0 < total;
       q0 += static_cast<Idx>(gridDim.x) * kThreads * kKw2Unroll) {
    Pack<T, V> in[kKw2Unroll];
#pragma unroll
    for (int u = 0; u < kKw2Unroll; ++u) {
      const Idx q = q0 + u * kThreads;
      if (q < total) in[u] = *reinterpret_cast<const Pack<T, V>*>(go + q * V);
    }
#pragma unroll
    for (int u = 0; u < kKw2Unroll; ++u) {
      const Idx q = q0 + u * kThreads;
      if (q >= total) break;
      kw2_store(in[u], q, s, vecs_per_row, Hout, Cout, KH, H, W, K);
    }
  }
}

// The same rearrangement with grad_bias's sums from the same loads. Channel co's vectors, its
// planes (n, co) one after another, are cut into `splits` equal runs; block (split, co) takes
// run `split`, so that each thread's sum belongs to one channel. The block's threads are added
// in a fixed order (a butterfly per warp, then the warps in order) into sums[split][co]
// (acc_t<T>: what grad_bias_reduce reads for grad_bias's dtype), which grad_bias_reduce adds
// up. kKw2Unroll loads in flight per thread.
// (A first form gave each block whole planes of every splits-th image: with unet_up1's 8 images
// that left 512 blocks, and bf16 unet_up1's rearrangement took 283 us against the plain
// kernel's 184, run UG.)
template <typename T, int V, typename Idx>
__global__ __launch_bounds__(kThreads) void space_to_depth_kw2_sums_kernel(
    const T* __restrict__ go, T* __restrict__ s, Idx vecs_per_row, int32_t Hout, int32_t Cout, int32_t KH,
    int32_t H, int32_t W, Idx K, Idx per_split, Idx channel_vecs, acc_t<T>* __restrict__ sums) {
  using Acc = acc_t<T>;
  __shared__ Acc warp_sums[kThreads / 32];
  const int32_t co = static_cast<int32_t>(blockIdx.x % Cout), split = static_cast<int32_t>(blockIdx.x / Cout);
  const Idx plane_vecs = static_cast<Idx>(Hout) * vecs_per_row;
  const Idx begin = static_cast<Idx>(split) * per_split;
  const Idx end = channel_vecs - begin < per_split ? channel_vecs : begin + per_split;
  Acc acc = Acc(0);
  for (Idx i0 = begin + threadIdx.x; i0 < end; i0 += kThreads * kKw2Unroll) {
    Pack<T, V> in[kKw2Unroll];
    Idx q[kKw2Unroll];
#pragma unroll
    for (int u = 0; u < kKw2Unroll; ++u) {
      const Idx i = i0 + u * kThreads;
      if (i < end) {
        const Idx n = i / plane_vecs, v = i - n * plane_vecs;
        q[u] = (n * static_cast<Idx>(Cout) + co) * plane_vecs + v;
        in[u] = *reinterpret_cast<const Pack<T, V>*>(go + q[u] * V);
      }
    }
#pragma unroll
    for (int u = 0; u < kKw2Unroll; ++u) {
      if (i0 + u * kThreads >= end) break;
#pragma unroll
      for (int e = 0; e < V; ++e) acc += static_cast<Acc>(in[u].v[e]);
      kw2_store(in[u], q[u], s, vecs_per_row, Hout, Cout, KH, H, W, K);
    }
  }
#pragma unroll
  for (int off = 16; off > 0; off /= 2) acc += __shfl_xor_sync(0xffffffffu, acc, off);
  if (threadIdx.x % 32 == 0) warp_sums[threadIdx.x / 32] = acc;
  __syncthreads();
  if (threadIdx.x == 0) {
    Acc total = Acc(0);
#pragma unroll
    for (int w = 0; w < kThreads / 32; ++w) total += warp_sums[w];
    sums[static_cast<int64_t>(split) * Cout + co] = total;
  }
}

// The widest V (16 bytes, then 8, then 4: at least 2 elements) that W and go's address
// allow, or 0 where the paired kernel does not apply.
int kw2_vector_elems(const at::Tensor& go, const Geometry& g) {
  if (!(s2d_gemm_applies(g) && g.KW == 2 && go.is_contiguous())) return 0;
  const int64_t elem = go.element_size();
  for (int64_t bytes = 16; bytes >= 2 * elem; bytes /= 2) {
    const int64_t v = bytes / elem;
    if (v >= 2 && g.W % (v / 2) == 0 && reinterpret_cast<uintptr_t>(go.const_data_ptr()) % bytes == 0) {
      return static_cast<int>(v);
    }
  }
  return 0;
}

// grad_bias (may be undefined): also its sums from the same loads (the sums kernel), reduced into
// grad_bias here.
void launch_space_to_depth_kw2(const at::Tensor& go, const Geometry& g, const at::Tensor& s, int v,
                               const at::Tensor& grad_bias) {
  auto stream = at::cuda::getCurrentCUDAStream();
  const int64_t total = go.numel() / v, vecs_per_row = g.Wout / v, K = g.N * g.H * g.W;
  const int64_t blocks = std::min<int64_t>(ceil_div(total, kThreads * kKw2Unroll), int64_t(sm_count()) * 32);
  // Sums kernel: as many blocks as the plain kernel's grid, as (run, channel) pairs, each run at
  // least one step of the block (kThreads * kKw2Unroll vectors).
  const bool sums = grad_bias.defined();
  const int64_t channel_vecs = g.N * g.Hout * vecs_per_row;
  const int64_t splits0 = std::max<int64_t>(
      1, std::min(ceil_div(blocks, g.Cout), ceil_div(channel_vecs, int64_t(kThreads) * kKw2Unroll)));
  const int64_t per_split = ceil_div(channel_vecs, splits0);
  const int64_t splits = ceil_div(channel_vecs, per_split);  // no empty run
  TORCH_CHECK(!sums || g.Cout * splits < (int64_t(1) << 31), "convt: space-to-depth: too many output channels");
  // (grad_bias_reduce reads the partials in grad_bias's accumulation type: double for double.)
  const at::Tensor ws =
      sums ? at::empty({splits * g.Cout}, go.options().dtype(go.scalar_type() == at::kDouble ? at::kDouble : at::kFloat))
           : at::Tensor();
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, go.scalar_type(), "convt_space_to_depth_kw2", [&] {
    auto run = [&](auto v_tag, auto idx_tag) {
      constexpr int V = decltype(v_tag)::value;
      using Idx = decltype(idx_tag);
      if (sums) {
        space_to_depth_kw2_sums_kernel<scalar_t, V, Idx>
            <<<static_cast<unsigned>(g.Cout * splits), kThreads, 0, stream>>>(
                go.const_data_ptr<scalar_t>(), s.mutable_data_ptr<scalar_t>(), static_cast<Idx>(vecs_per_row),
                static_cast<int32_t>(g.Hout), static_cast<int32_t>(g.Cout), static_cast<int32_t>(g.KH),
                static_cast<int32_t>(g.H), static_cast<int32_t>(g.W), static_cast<Idx>(K),
                static_cast<Idx>(per_split), static_cast<Idx>(channel_vecs), ws.mutable_data_ptr<acc_t<scalar_t>>());
      } else {
        space_to_depth_kw2_kernel<scalar_t, V, Idx><<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(
            go.const_data_ptr<scalar_t>(), s.mutable_data_ptr<scalar_t>(), static_cast<Idx>(total),
            static_cast<Idx>(vecs_per_row), static_cast<int32_t>(g.Hout), static_cast<int32_t>(g.Cout),
            static_cast<int32_t>(g.KH), static_cast<int32_t>(g.H), static_cast<int32_t>(g.W),
            static_cast<Idx>(K));
      }
      C10_CUDA_KERNEL_LAUNCH_CHECK();
    };
    auto with_idx = [&](auto v_tag) {
      // (kw2_vector_elems never picks more than 16 bytes: no wider instantiations.)
      if constexpr (decltype(v_tag)::value * sizeof(scalar_t) > 16) return;
      // 32-bit indices when every element offset of S (and of go: the same count) fits, and
      // each kernel's vector index past its last step (the sums kernel's: one split's vectors).
      if (fits_int32(s.numel() + int64_t(std::max<int64_t>(blocks, 1)) * kThreads * kKw2Unroll * v)) {
        run(v_tag, int32_t{});
      } else {
        run(v_tag, int64_t{});
      }
    };
    if (v == 2) with_idx(std::integral_constant<int, 2>{});
    if (v == 4) with_idx(std::integral_constant<int, 4>{});
    if (v == 8) with_idx(std::integral_constant<int, 8>{});
  });
  if (sums) grad_bias_reduce(ws, g, splits, grad_bias);
}

// Knob CONVT_S2D_PLANE (read once): unset = the plane kernel where a plane fits and the paired
// kernel does not apply; 0 = never; all = also ahead of the paired kernel (for measuring).
KnobMode plane_mode() {
  static const KnobMode mode = env_mode("CONVT_S2D_PLANE");
  return mode;
}
// Staged rows of Wout + 1 elements (the kernel's kPadded) or dense. Rule: padded for 16-bit rows of
// at least 64 bytes, where dense rows put a warp's reads on few banks (dcgan_g4 bf16, rows of 32:
// 16-way in the CPU simulation; H100 run QO: 74.7 -> 47.1 us). Fitted to QO, not a model: float32
// lost with padding (dcgan_g4 63.9 -> 69.2 us: 3 planes per block instead of 4, and element-wise
// staging stores), dcgan_g2 bf16 (rows of 8) 20.3 -> 21.1. Knob: CONVT_S2D_PLANE=padded always,
// =dense never. Read once.
bool plane_rows_padded(const Geometry& g, int64_t elem) {
  static const int forced = env_equals("CONVT_S2D_PLANE", "padded") ? 1 : env_equals("CONVT_S2D_PLANE", "dense") ? 0 : -1;
  if (forced >= 0) return forced == 1;
  return elem == 2 && g.Wout * elem >= 64;
}

// The plane kernel where grad_output's plane fits in its shared memory; false otherwise.
bool launch_space_to_depth_plane(const at::Tensor& go, const Geometry& g, const at::Tensor& s) {
  const int64_t elem = go.element_size();
  const bool padded = plane_rows_padded(g, elem);
  const int64_t pitch = padded ? g.Wout + 1 : g.Wout, plane_stride = g.Hout * pitch;
  if (plane_mode() == KnobMode::kNever || plane_stride * elem > kPlaneSmemBytes) return false;
  if (g.N * g.Cout >= (int64_t(1) << 30)) return false;
  const int64_t K = g.N * g.H * g.W;
  // 16-byte loads where each plane is dense rows, a whole number of vectors, and aligned.
  const int64_t plane_bytes = g.Hout * g.Wout * elem;
  const bool dense_planes = go.stride(3) == 1 && go.stride(2) == g.Wout && plane_bytes % 16 == 0 &&
                            (go.stride(1) * elem) % 16 == 0 && (go.stride(0) * elem) % 16 == 0 &&
                            reinterpret_cast<uintptr_t>(go.const_data_ptr()) % 16 == 0;
  // Images per block: as many planes as the staging holds, but few enough that there are ~8
  // blocks per multiprocessor (dcgan_g2: 31 images of 8 x 8, 1280 blocks; dcgan_g4: 7 of 32 x 32).
  const int64_t fit = kPlaneSmemBytes / (plane_stride * elem);
  const int64_t spread = g.N * g.Cout / (int64_t(sm_count()) * 8);
  const int64_t imgs = std::max<int64_t>(1, std::min({fit, spread, g.N}));
  const int64_t blocks_per_co = ceil_div(g.N, imgs);
  const unsigned grid = static_cast<unsigned>(std::min<int64_t>(g.Cout * blocks_per_co, int64_t(1) << 30));
  auto stream = at::cuda::getCurrentCUDAStream();
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, go.scalar_type(), "convt_space_to_depth_plane", [&] {
    auto run = [&](auto vec_tag) {
      constexpr int VEC = decltype(vec_tag)::value;
      const auto kernel = padded ? space_to_depth_plane_kernel<scalar_t, VEC, true>
                                              : space_to_depth_plane_kernel<scalar_t, VEC, false>;
      kernel<<<grid, kThreads, 0, stream>>>(go.const_data_ptr<scalar_t>(), s.mutable_data_ptr<scalar_t>(), g,
                                            strides_of(go), static_cast<int32_t>(K), static_cast<int32_t>(imgs),
                                            static_cast<int32_t>(blocks_per_co), dense_planes,
                                            static_cast<int32_t>(pitch));
      C10_CUDA_KERNEL_LAUNCH_CHECK();
    };
    // The widest store (16 bytes down to one element) that an input row holds whole: S's row
    // segments (n*H*W + k) then start aligned too.
    constexpr int kMax = 16 / sizeof(scalar_t);
    int vec = kMax;
    while (vec > 1 && g.W % vec != 0) vec /= 2;
    if (vec == 8) {
      if constexpr (kMax >= 8) run(std::integral_constant<int, 8>{});
    } else if (vec == 4) {
      if constexpr (kMax >= 4) run(std::integral_constant<int, 4>{});
    } else if (vec == 2) {
      run(std::integral_constant<int, 2>{});
    } else {
      run(std::integral_constant<int, 1>{});
    }
  });
  return true;
}

// S = grad_output's columns [R][N][H*W]. grad_bias (may be undefined): computed from the same
// loads where the paired kernel runs, *bias_done then set.
at::Tensor space_to_depth(const at::Tensor& go, const Geometry& g, const at::Tensor& grad_bias, bool* bias_done) {
  const int64_t K = g.N * g.H * g.W, R = g.Cout * g.KH * g.KW;
  at::Tensor s = at::empty({R * K}, go.options());
  const bool plane_first = plane_mode() == KnobMode::kAll;
  if (plane_first && launch_space_to_depth_plane(go, g, s)) return s;
  if (const int v = kw2_vector_elems(go, g)) {
    launch_space_to_depth_kw2(go, g, s, v, grad_bias);
    *bias_done = grad_bias.defined();
    return s;
  }
  if (!plane_first && launch_space_to_depth_plane(go, g, s)) return s;
  const int64_t rows = std::min<int64_t>(R, 65535);
  auto stream = at::cuda::getCurrentCUDAStream();
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, go.scalar_type(), "convt_space_to_depth", [&] {
    // Vectors of 16 bytes where an input row is whole vectors (S's rows, K = N*H*W long, then
    // start aligned too: at::empty is 16-byte aligned).
    constexpr int kVec = 16 / sizeof(scalar_t);
    const bool vec = kVec > 1 && g.W % kVec == 0;
    const int64_t per_row = std::max<int64_t>(
        1, std::min<int64_t>(ceil_div(vec ? K / kVec : K, kThreads), int64_t(sm_count()) * 32 / rows));
    const dim3 grid(static_cast<unsigned>(per_row), static_cast<unsigned>(rows));
    if (vec) {
      space_to_depth_vec_kernel<scalar_t, kVec><<<grid, kThreads, 0, stream>>>(
          go.const_data_ptr<scalar_t>(), s.mutable_data_ptr<scalar_t>(), g, strides_of(go),
          static_cast<int32_t>(K), static_cast<int32_t>(R));
    } else {
      space_to_depth_kernel<scalar_t><<<grid, kThreads, 0, stream>>>(
          go.const_data_ptr<scalar_t>(), s.mutable_data_ptr<scalar_t>(), g, strides_of(go),
          static_cast<int32_t>(K), static_cast<int32_t>(R));
    }
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  });
  return s;
}

// channels_last space-to-depth in S's co-major column order, the NCHW path's and the
// weight's own: S[p][co*KK + t] = grad_output[n][ih*KH + ki][iw*KW + kj][co] with
// p = (n*H + ih)*W + iw, t = ki*KW + kj, KK = KH*KW. In this order grad_input's GEMM takes the
// weight as it is and grad_weight's GEMM writes grad_weight in its own layout: no permute
// copies (13-20 us of host time each per call, H100 run MB). For 4 taps (2 x 2, 4 x 1, 1 x 4):
// one thread per (pixel, CP channels), per tap one load of its CP channels (consecutive threads
// read consecutive channels: coalesced), then its 4 CP elements, contiguous in S, in one store
// (16 bytes in 16-bit types and float). Other tap counts take im2col_cl below, of which this is
// the special case.
template <typename T, int CP, typename Idx>
__global__ __launch_bounds__(kThreads) void space_to_depth_cl_kernel(const T* __restrict__ go, T* __restrict__ s,
                                                                     Geometry g, Idx groups, Idx total) {
  const Idx W = static_cast<Idx>(g.W), H = static_cast<Idx>(g.H), Cout = static_cast<Idx>(g.Cout);
  const Idx Wout = static_cast<Idx>(g.Wout), Hout = static_cast<Idx>(g.Hout);
  const int KW = static_cast<int>(g.KW);
  constexpr int KK = 4;
  for (Idx q = static_cast<Idx>(blockIdx.x) * kThreads + threadIdx.x; q < total;
       q += static_cast<Idx>(gridDim.x) * kThreads) {
    const Idx p = q / groups, cg = q - p * groups;
    const Idx iw = p % W, r = p / W;
    const Idx ih = r % H, n = r / H;
    // Tap (0, 0)'s element: output pixel (ih*KH, iw*KW), channel cg*CP.
    const T* src = go + ((n * Hout + ih * static_cast<Idx>(g.KH)) * Wout + iw * KW) * Cout + cg * CP;
    T* dst = s + q * static_cast<Idx>(CP * KK);  // (p*Cout + cg*CP)*KK
    Pack<T, CP * KK> out;
#pragma unroll
    for (int t = 0; t < KK; ++t) {
      const int ki = t / KW, kj = t - ki * KW;
      const Pack<T, CP> v = *reinterpret_cast<const Pack<T, CP>*>(src + (ki * Wout + kj) * Cout);
#pragma unroll
      for (int c = 0; c < CP; ++c) out.v[c * KK + t] = v.v[c];
    }
    *reinterpret_cast<Pack<T, CP * KK>*>(dst) = out;
  }
}

// Whether space_to_depth_cl applies: kernel == stride with 4 taps, channel pairs (16-bit) whole
// and aligned.
bool s2d_cl_packed(const at::Tensor& go, const Geometry& g) {
  const int64_t pair = go.element_size() == 2 ? 2 : 1;
  return s2d_gemm_applies(g) && g.KH * g.KW == 4 && g.Cout % pair == 0 &&
         reinterpret_cast<uintptr_t>(go.const_data_ptr()) % (pair * go.element_size()) == 0;
}

at::Tensor space_to_depth_cl(const at::Tensor& go, const Geometry& g) {
  at::Tensor s = at::empty({go.numel()}, go.options());
  auto stream = at::cuda::getCurrentCUDAStream();
  const int64_t kk = g.KH * g.KW, pixels = g.N * g.H * g.W;
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, go.scalar_type(), "convt_space_to_depth_cl", [&] {
    // Channel pairs in 16-bit types (4-byte loads), single channels otherwise.
    constexpr int CP = sizeof(scalar_t) == 2 ? 2 : 1;
    const int64_t groups = g.Cout / CP, total = pixels * groups;
    const int64_t blocks = std::min<int64_t>(ceil_div(total, kThreads), int64_t(sm_count()) * 32);
    // 32-bit indices when every element offset of go and S (the same count) fits.
    if (fits_int32(go.numel() + int64_t(blocks) * kThreads * CP * kk)) {
      space_to_depth_cl_kernel<scalar_t, CP, int32_t><<<blocks, kThreads, 0, stream>>>(
          go.const_data_ptr<scalar_t>(), s.mutable_data_ptr<scalar_t>(), g, static_cast<int32_t>(groups),
          static_cast<int32_t>(total));
    } else {
      space_to_depth_cl_kernel<scalar_t, CP, int64_t><<<blocks, kThreads, 0, stream>>>(
          go.const_data_ptr<scalar_t>(), s.mutable_data_ptr<scalar_t>(), g, groups, total);
    }
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  });
  return s;
}

// channels_last im2col in the co-major column order (the space-to-depth's above, any geometry):
//   S[p][co*KK + t] = grad_output[n, co, ih*SH - PH + ki*DH, iw*SW - PW + kj*DW] (zero outside),
// t = ki*KW + kj. A warp takes (input pixel p, chunk of CC channels) jobs in turn; chunks are jobs
// of their own so that layers of few pixels and many channels (dcgan_g2: 2048 pixels, 4 chunks)
// still fill the SMs. A job's piece of the S row, ch*KK elements, is contiguous (co-major), and
// the warp's shared-memory tile holds it in that order, [co][t], with a 16-byte pad after every E
// channels (E elements per 16 bytes). So the copy out is 16 bytes a lane, tile to S (a warp store
// covers 512 contiguous bytes), and the transpose happens on the way in: a lane's V-element load
// (consecutive lanes on consecutive channels of a tap: coalesced) lands as V elements KK apart,
// the pads putting a tap's E-channel groups on different banks (16-bit types at 16 taps:
// conflict-free; 9 or 25 taps, or fp32: 2-way). Each lane issues U loads, each with its own bounds
// predicate, before it writes any to the tile, and walks its items i = lane + 32k as
// (t, v) = (i / vecs, i % vecs) and (ki, kj) = (t / KW, t % KW) by fixed increments, the copy's
// tile units likewise. The first version ([t][co] tile, 2-element row pad) stored each load
// before issuing the next (one memory latency per load), divided per item, and gathered 16 bytes
// out of 8 rows per store with a tap walk per element: about 170 instructions per 16 bytes
// moved, 47.6 us on dcgan_g4 bf16 (H100) against 34.6 us before it.
template <typename T, int V>
__global__ __launch_bounds__(kThreads) void im2col_cl_kernel(const T* __restrict__ go, T* __restrict__ s, Geometry g,
                                                             int pixels, int cc, int tile_elems, bool vec_store) {
  constexpr int E = 16 / sizeof(T);  // elements per 16 bytes: the tile's channel group and pad
  // Loads in flight per lane. Single elements go to odd channel counts, mostly few channels
  // (RGB: 48 items a chunk at 16 taps, 1.5 a lane), where unused slots only cost instructions
  // (H100, 128 x 3 x 64 x 64 bf16 grad_output at 16 taps: 55 us at U = 4, 45 at 2; 16-byte
  // loads at dcgan_g4: 33.5 us at 4, 34.6 at 2, 36.8 at 8).
  constexpr int U = V == 1 ? 2 : 4;
  static_assert(E % V == 0, "a V-element load stays within one E-channel group");
  // Elements are only moved: the loads are whole words (uint4 for 16 bytes; a struct of 16-bit
  // elements costs a PRMT per element to split and zero), the tile holds raw bits.
  using Bits = std::conditional_t<sizeof(T) == 2, unsigned short,
                                  std::conditional_t<sizeof(T) == 4, unsigned, unsigned long long>>;
  using Vec = std::conditional_t<V * sizeof(T) == 16, uint4, Bits>;
  extern __shared__ __align__(16) unsigned char im2col_smem[];
  const int warps = blockDim.x / 32, lane = threadIdx.x % 32;
  // 32-bit positions (im2col_cl keeps an image's elements and a tap's reach below 2^31).
  const int KK = static_cast<int>(g.KH * g.KW), KW = static_cast<int>(g.KW), Cout = static_cast<int>(g.Cout);
  const int H = static_cast<int>(g.H), W = static_cast<int>(g.W);
  const int Hout = static_cast<int>(g.Hout), Wout = static_cast<int>(g.Wout);
  const int SH = static_cast<int>(g.SH), SW = static_cast<int>(g.SW), PH = static_cast<int>(g.PH),
            PW = static_cast<int>(g.PW), DH = static_cast<int>(g.DH), DW = static_cast<int>(g.DW);
  Bits* const tile = reinterpret_cast<Bits*>(im2col_smem) + (threadIdx.x / 32) * tile_elems;
  const int64_t row = static_cast<int64_t>(Cout) * KK, image = static_cast<int64_t>(Hout) * Wout * Cout;
  // Jobs p*chunks + c, strided over the grid's warps: (p, c) advance by the stride's quotient
  // and remainder.
  const int chunks = (Cout + cc - 1) / cc, stride = gridDim.x * warps;
  const int dp = stride / chunks, dc = stride - dp * chunks;
  const int job0 = blockIdx.x * warps + threadIdx.x / 32;
  int64_t p = job0 / chunks;
  int c = job0 - static_cast<int>(p) * chunks;
  // The copy's 16-byte unit j = lane + 32k lies at tile unit j + j / KK (E channels are KK units).
  const int uq0 = lane / KK, ur0 = lane - uq0 * KK, udq = 32 / KK, udr = 32 - udq * KK;
  // The load walk, set up for chunks of ch_w channels: a lane's first item's (t, v, ki, kj) and
  // their steps as i advances by 32. Set up again only where the chunk width changes.
  int ch_w = 0, vecs = 1, t0 = 0, v0 = 0, ki0 = 0, kj0 = 0, dt = 0, dv = 0, dki = 0, dkj = 0;
  while (p < pixels) {
    const int pi = static_cast<int>(p);
    const int q = pi / W, iw = pi - q * W;
    const int n = q / H, ih = q - n * H;
    const int oh0 = ih * SH - PH, ow0 = iw * SW - PW;
    const int c0 = c * cc, ch = min(cc, Cout - c0);
    if (ch != ch_w) {
      ch_w = ch;
      vecs = ch / V;  // (V > 1: Cout and cc multiples of V)
      t0 = lane / vecs, v0 = lane - t0 * vecs, ki0 = t0 / KW, kj0 = t0 - ki0 * KW;
      dt = 32 / vecs, dv = 32 - dt * vecs, dki = dt / KW, dkj = dt - dki * KW;
    }
    const T* const src = go + n * image + c0;
    int t = t0, v = v0, ki = ki0, kj = kj0;
    for (int b = 0; b < KK * vecs; b += 32 * U) {
      Vec val[U];
      int at[U];  // the load's first element's place in the tile; -1: past the chunk's items
#pragma unroll
      for (int u = 0; u < U; ++u) {
        const int oh = oh0 + ki * DH, ow = ow0 + kj * DW, co = v * V;
        at[u] = t < KK ? co * KK + t + co / E * E : -1;
        val[u] = Vec{};
        if (t < KK && static_cast<unsigned>(oh) < static_cast<unsigned>(Hout) &&
            static_cast<unsigned>(ow) < static_cast<unsigned>(Wout)) {
          // Within image n, below 2^31 (im2col_cl): 32-bit, then one wide multiply-add.
          val[u] = *reinterpret_cast<const Vec*>(src + static_cast<unsigned>((oh * Wout + ow) * Cout + co));
        }
        // i += 32: v gains dv (< vecs) and t dt; at most one carry of v into t and of kj into ki.
        v += dv, t += dt, ki += dki, kj += dkj;
        if (v >= vecs) v -= vecs, ++t, ++kj;
        if (kj >= KW) kj -= KW, ++ki;
      }
#pragma unroll
      for (int u = 0; u < U; ++u) {
        if (at[u] >= 0) {
          if constexpr (V == 1) {
            tile[at[u]] = val[u];
          } else {
            const unsigned w[4] = {val[u].x, val[u].y, val[u].z, val[u].w};
#pragma unroll
            for (int e = 0; e < V; ++e) {
              if constexpr (sizeof(T) == 2) {
                tile[at[u] + e * KK] = static_cast<Bits>(w[e / 2] >> (16 * (e % 2)));
              } else if constexpr (sizeof(T) == 4) {
                tile[at[u] + e * KK] = w[e];
              } else {
                tile[at[u] + e * KK] = static_cast<Bits>(w[2 * e + 1]) << 32 | w[2 * e];
              }
            }
          }
        }
      }
    }
    __syncwarp();
    T* const dst = s + p * row + static_cast<int64_t>(c0) * KK;
    const int n_el = ch * KK;
    if (vec_store) {
      int uq = uq0, ur = ur0;  // j / KK, j % KK
      for (int j = lane; j < n_el / E; j += 32) {
        *reinterpret_cast<uint4*>(dst + j * E) = *reinterpret_cast<const uint4*>(tile + (j + uq) * E);
        uq += udq, ur += udr;
        if (ur >= KK) ur -= KK, ++uq;
      }
    } else {
      // Element j at tile j + j / (E*KK) * E, walked the same way (rows not whole 16 bytes: rare).
      const int ekk = E * KK, edq = 32 / ekk, edr = 32 - edq * ekk;
      int eq = lane / ekk, er = lane - eq * ekk;
#pragma unroll 1
      for (int j = lane; j < n_el; j += 32) {
        reinterpret_cast<Bits*>(dst)[j] = tile[j + eq * E];
        eq += edq, er += edr;
        if (er >= ekk) er -= ekk, ++eq;
      }
    }
    __syncwarp();  // the tile is read before the next job overwrites it
    p += dp, c += dc;
    if (c >= chunks) c -= chunks, ++p;
  }
}

// The same columns one element per thread in S's order (coalesced writes, gathered reads): for
// tap counts whose tile does not fit a warp's shared memory even at the narrowest chunk.
template <typename T>
__global__ __launch_bounds__(kThreads) void im2col_cl_element_kernel(const T* __restrict__ go, T* __restrict__ s,
                                                                     Geometry g, int64_t total) {
  const int64_t KK = g.KH * g.KW;
  for (int64_t idx = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; idx < total;
       idx += static_cast<int64_t>(gridDim.x) * kThreads) {
    const int64_t t = idx % KK, r = idx / KK;
    const int64_t co = r % g.Cout, p = r / g.Cout;
    const int64_t iw = p % g.W, q = p / g.W;
    const int64_t ih = q % g.H, n = q / g.H;
    const int64_t ki = t / g.KW, kj = t - ki * g.KW;
    const int64_t oh = ih * g.SH - g.PH + ki * g.DH, ow = iw * g.SW - g.PW + kj * g.DW;
    const bool ok = oh >= 0 && oh < g.Hout && ow >= 0 && ow < g.Wout;
    s[idx] = ok ? go[((n * g.Hout + oh) * g.Wout + ow) * g.Cout + co] : T(0);
  }
}

at::Tensor im2col_cl(const at::Tensor& go, const Geometry& g) {
  const int64_t pixels = g.N * g.H * g.W, kk = g.KH * g.KW;
  at::Tensor s = at::empty({pixels * kk * g.Cout}, go.options());
  auto stream = at::cuda::getCurrentCUDAStream();
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, go.scalar_type(), "convt_im2col_cl", [&] {
    constexpr int kVec = 16 / sizeof(scalar_t);
    const int64_t elem = sizeof(scalar_t);
    const bool vec_load = g.Cout % kVec == 0 && reinterpret_cast<uintptr_t>(go.const_data_ptr()) % 16 == 0;
    // 16-byte stores where every pixel's row and chunk piece is whole 16-byte units (at::empty
    // is aligned): Cout * KK * elem and cc * KK * elem multiples of 16.
    const bool vec_store = (g.Cout * kk * elem) % 16 == 0;
    // A warp's tile for chunks of c channels: the piece of S, c * KK elements, in whole 16 bytes,
    // and a 16-byte pad per kVec channels (im2col_cl_kernel says why).
    auto tile_elems_for = [&](int64_t c) { return round_up(c * kk, kVec) + ceil_div(c, kVec) * kVec; };
    // Channels per chunk: up to 64, a multiple of the load vector, and fewer while one warp's
    // tile exceeds 24 KB (two warps per block at the least, in the default 48 KB of shared
    // memory).
    const int unit = vec_load ? kVec : 1;
    int cc = static_cast<int>(std::min<int64_t>(g.Cout, 64));
    cc -= cc % unit;
    while (cc > unit && tile_elems_for(cc) * elem > 24 * 1024) cc -= unit;
    // Whole 16-byte pieces per chunk when storing vectors (cc * KK * elem a multiple of 16).
    const bool chunk_vec = vec_store && (cc * kk * elem) % 16 == 0 && (g.Cout % cc == 0 || ((g.Cout % cc) * kk * elem) % 16 == 0);
    const int64_t tile_elems = tile_elems_for(cc), tile_bytes = tile_elems * elem;
    // The kernel's positions are 32-bit: the pixel index, an element's offset in its image, and the reach of a
    // lane's taps, up to KH + 33 rows (its walk runs past the last tap) and KW columns.
    const bool int32_positions = fits_int32(pixels) && fits_int32(g.Hout * g.Wout * g.Cout) &&
                                 fits_int32(g.H * g.SH + g.PH + (g.KH + 33) * g.DH) &&
                                 fits_int32(g.W * g.SW + g.PW + g.KW * g.DW);
    if (tile_bytes > 48 * 1024 || !int32_positions) {
      const int64_t total = s.numel();
      const unsigned eblocks = static_cast<unsigned>(std::min<int64_t>(ceil_div(total, kThreads), int64_t(sm_count()) * 32));
      im2col_cl_element_kernel<scalar_t><<<eblocks, kThreads, 0, stream>>>(go.const_data_ptr<scalar_t>(),
                                                                           s.mutable_data_ptr<scalar_t>(), g, total);
      C10_CUDA_KERNEL_LAUNCH_CHECK();
      return;
    }
    const int warps = static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(kThreads / 32, (48 * 1024) / tile_bytes)));
    const int64_t jobs = pixels * ceil_div(g.Cout, cc);  // (pixel, chunk) pairs, a warp each at a time
    const unsigned blocks = static_cast<unsigned>(std::min<int64_t>(ceil_div(jobs, warps), int64_t(sm_count()) * 16));
    const size_t smem = static_cast<size_t>(warps * tile_bytes);
    auto launch = [&](auto v_tag) {
      constexpr int V = decltype(v_tag)::value;
      im2col_cl_kernel<scalar_t, V><<<blocks, warps * 32, smem, stream>>>(
          go.const_data_ptr<scalar_t>(), s.mutable_data_ptr<scalar_t>(), g, static_cast<int>(pixels), cc,
          static_cast<int>(tile_elems), chunk_vec);
      C10_CUDA_KERNEL_LAUNCH_CHECK();
    };
    launch_width_or_element<kVec>(vec_load, launch);
  });
  return s;
}

// channels_last im2col in the tap-major column order, the channels_last weight's own:
//   S[p][t*Cout + co] = grad_output[n, co, ih*SH - PH + ki*DH, iw*SW - PW + kj*DW] (zero outside),
// t = ki*KW + kj. Each (pixel, tap) piece of S is one whole channel run of grad_output, so this
// is a gather of runs, no transpose: a warp per pixel, lane j of its row on the row's V-element
// unit j (tap j / (Cout/V), channels from (j % (Cout/V))*V), U units a lane loaded before any is
// stored, the (tap, unit) walk by fixed steps. With a channels_last weight (what the
// channels_last benchmark rows and models converted with .to(memory_format=channels_last) pass)
// this order makes the weight grad_input's GEMM operand as it is and lets grad_weight's GEMM
// write the channels_last grad_weight in place: the co-major order above needs a weight copy,
// a temporary and a grad_weight copy then (three allocations and three kernels on the host's
// critical path of small steps).
template <typename T, int V>
__global__ __launch_bounds__(kThreads) void im2col_cl_taps_kernel(const T* __restrict__ go, T* __restrict__ s,
                                                                  Geometry g, int pixels) {
  constexpr int U = 4;
  using Bits = std::conditional_t<sizeof(T) == 2, unsigned short,
                                  std::conditional_t<sizeof(T) == 4, unsigned, unsigned long long>>;
  using Vec = std::conditional_t<V * sizeof(T) == 16, uint4, Bits>;
  const int lane = threadIdx.x % 32, warps = kThreads / 32;
  // 32-bit positions (im2col_cl_taps keeps an image's elements and a tap's reach below 2^31).
  const int KK = static_cast<int>(g.KH * g.KW), KW = static_cast<int>(g.KW), Cout = static_cast<int>(g.Cout);
  const int H = static_cast<int>(g.H), W = static_cast<int>(g.W);
  const int Hout = static_cast<int>(g.Hout), Wout = static_cast<int>(g.Wout);
  const int SH = static_cast<int>(g.SH), SW = static_cast<int>(g.SW), PH = static_cast<int>(g.PH),
            PW = static_cast<int>(g.PW), DH = static_cast<int>(g.DH), DW = static_cast<int>(g.DW);
  const int vecs = Cout / V, row_vecs = KK * vecs;
  const int64_t image = static_cast<int64_t>(Hout) * Wout * Cout;
  // Unit j = lane + 32k: (t, v) = (j / vecs, j % vecs), (ki, kj) = (t / KW, t % KW), advanced by
  // the steps of j += 32 with at most one carry each (dv < vecs, dkj < KW).
  const int t0 = lane / vecs, v0 = lane - t0 * vecs, ki0 = t0 / KW, kj0 = t0 - ki0 * KW;
  const int dt = 32 / vecs, dv = 32 - dt * vecs, dki = dt / KW, dkj = dt - dki * KW;
  for (int p = blockIdx.x * warps + threadIdx.x / 32; p < pixels; p += gridDim.x * warps) {
    const int q = p / W, iw = p - q * W;
    const int n = q / H, ih = q - n * H;
    const int oh0 = ih * SH - PH, ow0 = iw * SW - PW;
    const T* const src = go + n * image;
    Vec* const dst = reinterpret_cast<Vec*>(s + static_cast<int64_t>(p) * row_vecs * V);
    int v = v0, ki = ki0, kj = kj0;
    for (int j0 = lane; j0 < row_vecs; j0 += 32 * U) {
      Vec val[U];
#pragma unroll
      for (int u = 0; u < U; ++u) {
        const int oh = oh0 + ki * DH, ow = ow0 + kj * DW;
        val[u] = Vec{};
        if (j0 + 32 * u < row_vecs && static_cast<unsigned>(oh) < static_cast<unsigned>(Hout) &&
            static_cast<unsigned>(ow) < static_cast<unsigned>(Wout)) {
          val[u] = *reinterpret_cast<const Vec*>(src + static_cast<unsigned>((oh * Wout + ow) * Cout + v * V));
        }
        v += dv, ki += dki, kj += dkj;
        if (v >= vecs) v -= vecs, ++kj;
        if (kj >= KW) kj -= KW, ++ki;
      }
#pragma unroll
      for (int u = 0; u < U; ++u) {
        if (j0 + 32 * u < row_vecs) dst[j0 + 32 * u] = val[u];
      }
    }
  }
}

// grad_bias summed as the tap-major columns are copied, for kernel == stride layers without
// padding, dilation or output padding (im2col_cl_taps_sums_units). Why: the grad_bias pass of its
// own read all of grad_output again (bf16 channels_last training, H100 run UN: unet_up1 92.6 us of
// a 781 us step, maskrcnn 74.4 of 633, unet_up4 14.6 of 237). There each grad_output element is
// one (pixel, tap)'s piece, read once, and always inside grad_output, so a lane's units j = lane +
// 32k (k < KU) sit at fixed offsets from its pixel's corner (ih * KH, iw * KW): the lane keeps one
// sum per unit over every pixel its warp copies. A warp step copies P pixels (consecutive rows of
// S) with kSumLoads 16-byte loads per lane in flight before any store: small rows (unet_up1, 32-64
// units) take several pixels a step, so the copy keeps the plain kernel's loads in flight at the
// fewer warps the sums' registers allow (a first form with one pixel per step ran unet_up1 bf16
// 195 -> 268 us, H100 run VA). The block's warps add their sums in warp order in shared memory
// and the block writes one row [Cout] of partials to `sums` ([block][Cout], accumulation type) for
// grad_bias_reduce.
constexpr int kSumLoads = 8;
// Units per lane the sums' registers hold: KU * V accumulators of at most 256 bytes.
template <typename T>
constexpr int max_sum_units_per_lane() {
  return std::min(16, 256 / static_cast<int>((16 / sizeof(T)) * sizeof(acc_t<T>)));
}
template <typename T, int KU>
__global__ __launch_bounds__(kThreads) void im2col_cl_taps_sums_kernel(const T* __restrict__ go, T* __restrict__ s,
                                                                       Geometry g, int pixels,
                                                                       acc_t<T>* __restrict__ sums) {
  constexpr int V = 16 / sizeof(T);
  constexpr int P = KU >= kSumLoads ? 1 : kSumLoads / KU;  // pixels per warp step
  constexpr int kChunk = KU >= kSumLoads ? kSumLoads : KU;  // units per lane per load batch
  static_assert(KU % kChunk == 0, "KU is a power of two");
  using Acc = acc_t<T>;
  const int lane = threadIdx.x % 32, warps = kThreads / 32;
  const int KW = static_cast<int>(g.KW), Cout = static_cast<int>(g.Cout);
  const int H = static_cast<int>(g.H), W = static_cast<int>(g.W), Wout = static_cast<int>(g.Wout);
  const int vecs = Cout / V, row_vecs = static_cast<int>(g.KH) * KW * vecs;
  const int64_t image = static_cast<int64_t>(g.Hout) * Wout * Cout;
  // The lane's units: offsets from the pixel's corner (32-bit: im2col_cl_taps_fits).
  int off[KU];
#pragma unroll
  for (int k = 0; k < KU; ++k) {
    const int j = lane + 32 * k, t = j / vecs, v = j - t * vecs, ki = t / KW, kj = t - ki * KW;
    off[k] = (ki * Wout + kj) * Cout + v * V;
  }
  Acc acc[KU][V];
#pragma unroll
  for (int k = 0; k < KU; ++k)
#pragma unroll
    for (int e = 0; e < V; ++e) acc[k][e] = Acc(0);
  const int steps = (pixels + P - 1) / P;
  for (int step = blockIdx.x * warps + threadIdx.x / 32; step < steps; step += gridDim.x * warps) {
#pragma unroll
    for (int c0 = 0; c0 < KU; c0 += kChunk) {
      uint4 val[P][kChunk];
#pragma unroll
      for (int i = 0; i < P; ++i) {
        const int p = step * P + i;
        const int q = p / W, iw = p - q * W;
        const int n = q / H, ih = q - n * H;
        const T* const corner = go + n * image + (ih * static_cast<int>(g.KH) * Wout + iw * KW) * Cout;
#pragma unroll
        for (int k = 0; k < kChunk; ++k) {
          val[i][k] = uint4{};
          if (p < pixels && lane + 32 * (c0 + k) < row_vecs)
            val[i][k] = *reinterpret_cast<const uint4*>(corner + off[c0 + k]);
        }
      }
#pragma unroll
      for (int i = 0; i < P; ++i) {
        const int p = step * P + i;
        uint4* const dst = reinterpret_cast<uint4*>(s + static_cast<int64_t>(p) * row_vecs * V);
#pragma unroll
        for (int k = 0; k < kChunk; ++k) {
          if (p < pixels && lane + 32 * (c0 + k) < row_vecs) dst[lane + 32 * (c0 + k)] = val[i][k];
          Pack<T, V> e;  // the unit's values (zeros past the row or the pixels)
          static_assert(sizeof(e) == sizeof(uint4), "a unit is 16 bytes");
          memcpy(&e, &val[i][k], sizeof(e));
#pragma unroll
          for (int x = 0; x < V; ++x) acc[c0 + k][x] += static_cast<Acc>(e.v[x]);
        }
      }
    }
  }
  // The block's partials [Cout] = its warps' sums of every tap, added tap by tap in warp order
  // (one row per block: grad_bias_reduce then reads blocks rows, not blocks * taps).
  extern __shared__ __align__(16) unsigned char sums_smem[];
  Acc* red = reinterpret_cast<Acc*>(sums_smem);  // [warps][taps][Cout]
  const int row = row_vecs * V, w = threadIdx.x / 32, taps = row / Cout;
#pragma unroll
  for (int k = 0; k < KU; ++k) {
    const int j = lane + 32 * k;
    if (j < row_vecs) {
#pragma unroll
      for (int x = 0; x < V; ++x) red[w * row + j * V + x] = acc[k][x];
    }
  }
  __syncthreads();
  for (int co = threadIdx.x; co < Cout; co += kThreads) {
    Acc total = Acc(0);
    for (int t = 0; t < taps; ++t)
      for (int k = 0; k < warps; ++k) total += red[k * row + t * Cout + co];
    sums[static_cast<int64_t>(blockIdx.x) * Cout + co] = total;
  }
}

// Whether im2col_cl_taps takes this layer: its positions are 32-bit (the pixel index, an
// element's offset in its image, a row's units, and the reach of a lane's walk, which runs up
// to 32 * 4 units past a row's end: KH + 129 rows at one unit per tap and KW = 1).
bool im2col_cl_taps_fits(const Geometry& g) {
  const int64_t pixels = g.N * g.H * g.W, kk = g.KH * g.KW;
  // (The pixel loop's index runs up to a grid's warps past the last pixel.)
  return fits_int32(pixels + (int64_t(1) << 24)) && fits_int32(g.Hout * g.Wout * g.Cout) && fits_int32(kk * g.Cout + 32 * 4) &&
         fits_int32(g.H * g.SH + g.PH + (g.KH + 129) * g.DH) && fits_int32(g.W * g.SW + g.PW + g.KW * g.DW);
}

// Units per lane of im2col_cl_taps_sums_kernel for this layer (the smallest power of two whose
// 32 lanes cover a row's 16-byte units), or 0 where the copy cannot sum grad_bias: kernel ==
// stride without padding, dilation or output padding (each grad_output element is one (pixel,
// tap)'s piece, read once), float / half / bfloat16 in 16-byte units, a row's sums in the
// registers (max_sum_units_per_lane).
int im2col_cl_taps_sums_units(const Geometry& g, at::ScalarType dtype, const at::Tensor& go) {
  if (dtype != at::kFloat && dtype != at::kHalf && dtype != at::kBFloat16) return 0;
  const int64_t vec = 16 / static_cast<int64_t>(c10::elementSize(dtype));
  const int max_units = dtype == at::kFloat ? max_sum_units_per_lane<float>() : max_sum_units_per_lane<at::Half>();
  if (!(g.KH == g.SH && g.KW == g.SW && g.DH == 1 && g.DW == 1 && g.PH == 0 && g.PW == 0 &&
        g.Hout == g.H * g.SH && g.Wout == g.W * g.SW && g.Cout % vec == 0 &&
        reinterpret_cast<uintptr_t>(go.const_data_ptr()) % 16 == 0 && im2col_cl_taps_fits(g)))
    return 0;
  const int64_t per_lane = ceil_div(g.KH * g.KW * g.Cout / vec, int64_t(32));
  int ku = 1;
  while (ku < per_lane) ku *= 2;
  return ku <= max_units ? ku : 0;
}

namespace {

// The summing copy at KU units per lane, then grad_bias_reduce of its partial rows. One wave of
// blocks (what fits on every multiprocessor at once), each walking its share of the pixels, so
// that the partials have a row per block of the wave.
template <typename T, int KU>
void im2col_cl_taps_with_sums(const at::Tensor& go, const at::Tensor& s, const Geometry& g, const at::Tensor& grad_bias,
                              cudaStream_t stream) {
  using Acc = acc_t<T>;
  constexpr int V = 16 / sizeof(T), P = KU >= kSumLoads ? 1 : kSumLoads / KU, warps = kThreads / 32;
  auto kernel = im2col_cl_taps_sums_kernel<T, KU>;
  const int64_t pixels = g.N * g.H * g.W, kk = g.KH * g.KW;
  const int smem = static_cast<int>(warps * kk * g.Cout * int64_t(sizeof(Acc)));
  // Resident blocks per multiprocessor at the largest row this KU takes, once per instantiation.
  static const int per_sm = [kernel] {
    constexpr int kMaxSmem = warps * 32 * KU * V * static_cast<int>(sizeof(Acc));
    C10_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kMaxSmem));
    int b = 0;
    C10_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&b, kernel, kThreads, kMaxSmem));
    return std::max(b, 1);
  }();
  // (Set on each call too: the attribute belongs to the device current at the time.)
  if (smem > 48 * 1024)
    C10_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  const int64_t steps = ceil_div(pixels, int64_t(P));
  const unsigned blocks = static_cast<unsigned>(
      std::max<int64_t>(1, std::min<int64_t>(ceil_div(steps, int64_t(warps)), int64_t(sm_count()) * per_sm)));
  const at::Tensor partial =
      at::empty({static_cast<int64_t>(blocks), g.Cout}, go.options().dtype(c10::CppTypeToScalarType<Acc>::value));
  kernel<<<blocks, kThreads, smem, stream>>>(go.const_data_ptr<T>(), s.mutable_data_ptr<T>(), g,
                                             static_cast<int>(pixels), partial.mutable_data_ptr<Acc>());
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  grad_bias_reduce(partial, g, partial.size(0), grad_bias);
}

}  // namespace

at::Tensor im2col_cl_taps(const at::Tensor& go, const Geometry& g, const at::Tensor& grad_bias) {
  TORCH_CHECK(im2col_cl_taps_fits(g), "convt: im2col_cl_taps: layer too large for 32-bit positions");
  const int64_t pixels = g.N * g.H * g.W, kk = g.KH * g.KW;
  at::Tensor s = at::empty({pixels * kk * g.Cout}, go.options());
  auto stream = at::cuda::getCurrentCUDAStream();
  if (grad_bias.defined()) {
    const int ku = im2col_cl_taps_sums_units(g, go.scalar_type(), go);
    TORCH_CHECK(ku > 0, "convt: im2col_cl_taps: grad_bias sums do not apply to this layer");
    AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, go.scalar_type(), "convt_im2col_cl_taps_sums", [&] {
      if constexpr (!std::is_same_v<scalar_t, double>) {
        switch (ku) {
          case 1: im2col_cl_taps_with_sums<scalar_t, 1>(go, s, g, grad_bias, stream); break;
          case 2: im2col_cl_taps_with_sums<scalar_t, 2>(go, s, g, grad_bias, stream); break;
          case 4: im2col_cl_taps_with_sums<scalar_t, 4>(go, s, g, grad_bias, stream); break;
          case 8: im2col_cl_taps_with_sums<scalar_t, 8>(go, s, g, grad_bias, stream); break;
          default:
            if constexpr (max_sum_units_per_lane<scalar_t>() >= 16) {
              im2col_cl_taps_with_sums<scalar_t, 16>(go, s, g, grad_bias, stream);
            } else {
              TORCH_CHECK(false, "convt: im2col_cl_taps: no summing copy at ", ku, " units per lane");
            }
        }
      }
    });
    return s;
  }
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, go.scalar_type(), "convt_im2col_cl_taps", [&] {
    constexpr int kVec = 16 / sizeof(scalar_t);
    // 16-byte units where every channel run is whole units and aligned (S from at::empty is).
    const bool vec = g.Cout % kVec == 0 && reinterpret_cast<uintptr_t>(go.const_data_ptr()) % 16 == 0;
    const unsigned blocks = static_cast<unsigned>(
        std::min<int64_t>(ceil_div(pixels, kThreads / 32), int64_t(sm_count()) * 16));
    auto launch = [&](auto v_tag) {
      constexpr int V = decltype(v_tag)::value;
      im2col_cl_taps_kernel<scalar_t, V><<<blocks, kThreads, 0, stream>>>(
          go.const_data_ptr<scalar_t>(), s.mutable_data_ptr<scalar_t>(), g, static_cast<int>(pixels));
      C10_CUDA_KERNEL_LAUNCH_CHECK();
    };
    launch_width_or_element<kVec>(vec, launch);
  });
  return s;
}

// The column order of S: the weight's own, so that neither GEMM needs a copy of it. Tap-major
// (S[p][t*Cout + co]) for a weight dense in channels_last ([Cin][KH][KW][Cout] in memory) and
// not also contiguous, co-major (S[p][co*KK + t]) otherwise.
bool taps_major_for(const at::Tensor& weight, const Geometry& g) {
  return channels_last_only(weight) && im2col_cl_taps_fits(g);
}

// channels_last grad_output as columns S [N*H*W][Cout*KK], tap-major or co-major. With grad_bias
// defined, the tap-major copy sums it (the caller checked im2col_cl_taps_sums_units).
at::Tensor columns_cl(const at::Tensor& go, const Geometry& g, bool taps_major, const at::Tensor& grad_bias) {
  if (taps_major) return im2col_cl_taps(go, g, grad_bias);
  TORCH_CHECK(!grad_bias.defined(), "convt: columns_cl: grad_bias sums need the tap-major copy");
  return s2d_cl_packed(go, g) ? space_to_depth_cl(go, g) : im2col_cl(go, g);
}

bool tf32_for(at::ScalarType dtype) { return dtype == at::kFloat && allow_tf32_conv(); }

}  // namespace

bool s2d_gemm_applies(const Geometry& g) {
  const bool one_tap = g.KH == g.SH && g.KW == g.SW && g.PH == 0 && g.PW == 0 && g.OPH == 0 &&
                       g.OPW == 0 && (g.DH == 1 || g.KH == 1) && (g.DW == 1 || g.KW == 1);
  const int64_t K = g.N * g.H * g.W;
  const int64_t R = g.Cout * g.KH * g.KW;
  return g.groups == 1 && one_tap && g.KH * g.KW > 1 && K < (int64_t(1) << 31) &&
         R < (int64_t(1) << 31) && g.Cin < (int64_t(1) << 31);
}

bool cols_gemm_applies(const Geometry& g) {
  const int64_t K = g.N * g.H * g.W;
  const int64_t R = g.Cout * g.KH * g.KW;
  return g.groups == 1 && g.KH * g.KW > 1 && K < (int64_t(1) << 31) && R < (int64_t(1) << 31) &&
         g.Cin < (int64_t(1) << 31);
}

bool cols_gemm_backward(const at::Tensor& grad_output, const at::Tensor& input,
                        const at::Tensor& weight, const Geometry& g,
                        const at::Tensor& grad_input, const at::Tensor& grad_weight, const at::Tensor& grad_bias) {
  TORCH_CHECK(cols_gemm_applies(g), "convt: cols_gemm_backward: groups != 1 or too large");
  CONVT_TRACE("cuda.backward.columns");
  const at::ScalarType dtype = grad_output.scalar_type();
  const bool tf32 = tf32_for(dtype);
  bool bias_done = false;
  const at::Tensor s = space_to_depth(grad_output, g, grad_bias, &bias_done);  // [R][N][H*W]
  const int64_t hw = g.H * g.W, K = g.N * hw, R = g.Cout * g.KH * g.KW;

  if (grad_input.defined() && g.N > 1 && hw < 256) {
    // Small images: one GEMM over all K columns, T (K x Cin, column-major, ld K) = S^T (K x R)
    // * Wm^T (R x Cin), i.e. T = [Cin][N][hw], then permuted into grad_input. Per-image GEMMs
    // of hw rows ran at a fraction of cuBLAS's rate (dcgan_g2, 16 rows: 0.19 ms against 0.043
    // for the one GEMM, runs BU / BV; Mask R-CNN's 196 rows: 0.49 ms, run CB, for 53 GFLOP).
    const at::Tensor w = weight.contiguous();
    at::Tensor t = at::empty({g.Cin, g.N, hw}, grad_output.options());
    GemmCall c{};
    c.op_a = CUBLAS_OP_N, c.op_b = CUBLAS_OP_N;
    c.m = K, c.n = g.Cin, c.k = R;
    c.a = s.const_data_ptr(), c.lda = K;
    c.b = w.const_data_ptr(), c.ldb = R;
    c.c = t.mutable_data_ptr(), c.ldc = K;
    c.batch = 1;
    run_gemm(c, dtype, tf32);
    if (grad_input.is_contiguous()) {
      swap_outer_dims(t, g.Cin, g.N, hw, grad_input);
    } else {
      grad_input.copy_(t.permute({1, 0, 2}).view({g.N, g.Cin, g.H, g.W}));
    }
  } else if (grad_input.defined()) {
    // Column-major per image n: gi_n^T (hw x Cin) = S_n^T (hw x R) * Wm^T (R x Cin), where
    // S_n^T is S + n*hw with leading dimension K and Wm^T the weight [Cin][R] (ld R).
    const at::Tensor w = weight.contiguous();
    const bool direct = grad_input.is_contiguous();
    at::Tensor gi = direct ? grad_input : at::empty(grad_input.sizes(), grad_input.options());
    GemmCall c{};
    c.op_a = CUBLAS_OP_N, c.op_b = CUBLAS_OP_N;
    c.m = hw, c.n = g.Cin, c.k = R;
    c.a = s.const_data_ptr(), c.lda = K, c.stride_a = hw;
    c.b = w.const_data_ptr(), c.ldb = R, c.stride_b = 0;
    c.c = gi.mutable_data_ptr(), c.ldc = hw, c.stride_c = g.Cin * hw;
    c.batch = g.N;
    run_gemm(c, dtype, tf32);
    if (!direct) grad_input.copy_(gi);
  }

  if (grad_weight.defined()) {
    // Column-major: gw^T (R x Cin, ld R) = op(A) (R x K) * B (K x Cin), with A = S stored
    // [R][K] = column-major K x R (ld K), transposed; B = X^T stored [Cin][K] (ld K).
    const at::Tensor x = to_nchw(input);
    at::Tensor xt = x;  // [Cin][N*hw]
    if (g.N > 1) {
      xt = at::empty({g.Cin, g.N, hw}, x.options());
      swap_outer_dims(x, g.N, g.Cin, hw, xt);
    }
    const bool direct = grad_weight.is_contiguous();
    at::Tensor gw = direct ? grad_weight : at::empty(grad_weight.sizes(), grad_weight.options());
    GemmCall c{};
    c.op_a = CUBLAS_OP_T, c.op_b = CUBLAS_OP_N;
    c.m = R, c.n = g.Cin, c.k = K;
    c.a = s.const_data_ptr(), c.lda = K;
    c.b = xt.const_data_ptr(), c.ldb = K;
    c.c = gw.mutable_data_ptr(), c.ldc = R;
    c.batch = 1;
    run_gemm(c, dtype, tf32);
    if (!direct) grad_weight.copy_(gw);
  }
  return bias_done;
}

bool cl_operands(const at::Tensor& grad_output, const at::Tensor& input) {
  return channels_last_only(grad_output) && channels_last_only(input);
}

bool cols_gemm_backward_cl(const at::Tensor& grad_output, const at::Tensor& input,
                           const at::Tensor& weight, const Geometry& g,
                           const at::Tensor& grad_input, const at::Tensor& grad_weight, const at::Tensor& grad_bias) {
  TORCH_CHECK(cols_gemm_applies(g) && cl_operands(grad_output, input),
              "convt: cols_gemm_backward_cl: groups != 1, too large, or operands not channels_last");
  CONVT_TRACE("cuda.backward.columns_cl");
  const at::ScalarType dtype = grad_output.scalar_type();
  const bool tf32 = tf32_for(dtype);
  // S [N*H*W][R] in the weight's column order (taps_major_for): Wm, the weight as [Cin][R] in
  // that order, is then its own memory.
  const bool taps_major = taps_major_for(weight, g);
  // grad_bias from the copy's loads where each element is read once (im2col_cl_taps_sums_units).
  const bool bias_sums =
      grad_bias.defined() && taps_major && im2col_cl_taps_sums_units(g, grad_output.scalar_type(), grad_output) > 0;
  at::Tensor s;
  {
    CONVT_TRACE("cuda.backward.columns_cl.rearrange");
    s = columns_cl(grad_output, g, taps_major, bias_sums ? grad_bias : at::Tensor());
  }
  const int64_t K = g.N * g.H * g.W, R = g.Cout * g.KH * g.KW;

  if (grad_input.defined()) {
    // Column-major: gi^T (Cin x K, ld Cin) = Wm (Cin x R) * S^T (R x K, ld R), Wm [Cin][R]
    // (column-major R x Cin, ld R) transposed; gi^T column-major is grad_input channels_last
    // [N*H*W][Cin].
    const at::Tensor w = taps_major ? weight : weight.contiguous();
    const bool direct = grad_input.is_contiguous(at::MemoryFormat::ChannelsLast);
    at::Tensor gi = direct ? grad_input
                           : at::empty(grad_input.sizes(), grad_input.options().memory_format(
                                                                at::MemoryFormat::ChannelsLast));
    GemmCall c{};
    c.op_a = CUBLAS_OP_T, c.op_b = CUBLAS_OP_N;
    c.m = g.Cin, c.n = K, c.k = R;
    c.a = w.const_data_ptr(), c.lda = R;
    c.b = s.const_data_ptr(), c.ldb = R;
    c.c = gi.mutable_data_ptr(), c.ldc = g.Cin;
    c.batch = 1;
    run_gemm(c, dtype, tf32);
    if (!direct) grad_input.copy_(gi);
  }

  if (grad_weight.defined()) {
    // Column-major: G^T (R x Cin, ld R) = S^T (R x K, ld R) * X (K x Cin): X is the
    // channels_last input, [K][Cin] = column-major Cin x K, transposed. G is [Cin][R] in S's
    // column order: grad_weight's own memory when its layout is the weight's (the frontend
    // allocates it so), else a temporary copied into it.
    const at::MemoryFormat order = taps_major ? at::MemoryFormat::ChannelsLast : at::MemoryFormat::Contiguous;
    const bool direct = taps_major ? channels_last_only(grad_weight) : grad_weight.is_contiguous();
    at::Tensor gw = direct ? grad_weight : at::empty(grad_weight.sizes(), grad_weight.options().memory_format(order));
    GemmCall c{};
    c.op_a = CUBLAS_OP_N, c.op_b = CUBLAS_OP_T;
    c.m = R, c.n = g.Cin, c.k = K;
    c.a = s.const_data_ptr(), c.lda = R;
    c.b = input.const_data_ptr(), c.ldb = g.Cin;
    c.c = gw.mutable_data_ptr(), c.ldc = R;
    c.batch = 1;
    run_gemm(c, dtype, tf32);
    if (!direct) grad_weight.copy_(gw);
  }
  return bias_sums;
}

}  // namespace bwd
}  // namespace convt
