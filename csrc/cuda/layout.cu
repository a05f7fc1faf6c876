// channels_last <-> NCHW copies (layout.h).
//
// at::Tensor::contiguous() does this transpose with a generic element-wise kernel that
// reads one layout and writes the other without staging: on an H100 it moved a 2 GB
// channels_last tensor at about 0.4 TB/s (kb1_57 float32: five such copies took 52 ms
// of a 74 ms forward+backward step). Here each image is a [H*W][C] matrix transposed to
// [C][H*W] through shared-memory tiles, so that both the reads (along C) and the writes
// (along H*W) are coalesced.
//
// Two kernels:
//  - nhwc_to_nchw_vec_kernel (2- and 4-byte types, C a multiple of 16 bytes, 16-byte
//    aligned data): a block moves 128 pixels x 128 bytes of channels, every thread four
//    16-byte loads in flight; 16-bit planes of even size are stored two pixels per lane. The element kernel below, with one 2-byte load per thread
//    and 2 KB per block, was latency-bound: bf16 ran 1.25 TB/s (kb1_75's and kb1_81's
//    grad_output, 0.64-0.68 ms for ~0.8 GB moved; run IB).
//  - nhwc_to_nchw_kernel: any type and channel count, a 32 x 32 element tile.
// The other way round (the forward's channels_last route for an NCHW input, forward.cu), only
// where the vector tiles apply: nchw_to_nhwc_vec_kernel, the same tiles with loads along pixels
// and 16-byte stores of a pixel's channels. Elsewhere at::Tensor::contiguous().
// nchw_to_nhwc_sums_kernel: that copy also summing each channel from its loads (grad_bias of an
// NCHW grad_output that the backward copies anyway: to_channels_last_with_channel_sums).
// And swap_outer_dims ([A][B][R] -> [B][A][R]) below.
#include "layout.h"
#include "../geometry.h"
#include "../host_trace.h"
#include "pack.cuh"

#include <ATen/Dispatch.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>

namespace convt {
namespace {

// ---- vector kernel ----------------------------------------------------------------------
// A tile is kPix pixels x kWords 4-byte words of channels (64 channels of a 16-bit type, 32
// of float), held as words [pixel][kWords + 1]: the odd pitch keeps both phases free of bank
// conflicts (the loads' lanes write 8 chunks x 4 pixels, bank p + 4 * chunk + i; the stores'
// lanes read 32 pixels of one word column, bank p + column).
constexpr int kVecThreads = 256;
constexpr int kPix = 128, kWords = 32, kChunks = kWords / 4;  // 16-byte chunks per pixel row
constexpr int kLoadsPerThread = kPix * kChunks / kVecThreads;  // 4
static_assert(kLoadsPerThread * kVecThreads == kPix * kChunks, "whole loads per thread");

// One 16-byte store of four words. Why PTX: a uint4 assignment of four words read from the tile
// (pitch kWords + 1, so not one 16-byte shared load) compiled to four 4-byte global stores,
// a quarter of each sector per instruction (nvcc 13.0, sm_90a).
__device__ __forceinline__ void store_16_bytes(void* p, uint32_t a, uint32_t b, uint32_t c, uint32_t d) {
  asm volatile("st.global.v4.b32 [%0], {%1, %2, %3, %4};\n" ::"l"(p), "r"(a), "r"(b), "r"(c), "r"(d) : "memory");
}

// One image's tiles at a time, either way (kToNchw: channels_last -> NCHW).
// channels_last -> NCHW: every thread loads four 16-byte chunks of a pixel's channels, all four
// issued before any is stored; then warp w stores word columns w, w + 8, ... with lanes along
// pixels. kPairs (16-bit types, H*W even): a lane stores two adjacent pixels of one channel as
// one 4-byte word (the lower halves of two tile words for channel c, the upper for c + 1), so a
// store instruction writes 128 bytes of a plane instead of 64.
// NCHW -> channels_last: the same tiles the other way round. Warp w loads word columns w, w + 8,
// ... (a word: one float, or channels c and c + 1 of a 16-bit type) with lanes along pixels, so
// each load instruction reads 32 (pairs: 64) consecutive elements of one channel plane; then every
// thread stores four 16-byte chunks of a pixel's channels. kPairs: a lane loads two adjacent
// pixels of channels c and c + 1 as one word each and splits them into the two pixels' words.
//
// kSums (NCHW -> channels_last only): also the sum of each channel over the tiles the block
// copied, into sums[blockIdx.x][C] (float), each block a fixed share of the (image, pixel tile)
// pairs: the sums come from the loads' registers, so a bias gradient costs no pass of its own.
constexpr int kCols = kWords / (kVecThreads / 32);  // NCHW -> channels_last: word columns per warp (4)

// The float value of the element held in the low 16 bits (16-bit T) or the whole word (float).
template <typename T>
__device__ __forceinline__ float word_value(uint32_t bits) {
  if constexpr (sizeof(T) == 4) {
    return __uint_as_float(bits);
  } else {
    return static_cast<float>(T(static_cast<uint16_t>(bits), T::from_bits()));
  }
}

template <typename T, bool kPairs, bool kToNchw, bool kSums = false>
__device__ __forceinline__ void vec_tile_copy(const T* __restrict__ in, T* __restrict__ out, int64_t N, int64_t HW,
                                              int64_t C, float* __restrict__ sums = nullptr) {
  static_assert(sizeof(T) == 2 || sizeof(T) == 4, "a word holds one or two channels");
  static_assert(!kPairs || sizeof(T) == 2, "pairs of 16-bit elements");
  static_assert(!kSums || !kToNchw, "channel sums on the NCHW -> channels_last copy only");
  constexpr int kPerWord = 4 / sizeof(T);
  constexpr int kPerChunk = 16 / sizeof(T);
  __shared__ uint32_t tile[kPix][kWords + 1];
  const int64_t c0 = static_cast<int64_t>(blockIdx.y) * kWords * kPerWord;
  const int t = threadIdx.x, lane = t % 32, warp = t / 32;
  float acc[kCols][2] = {};  // kSums: channel c (and c + 1, 16-bit) of word column warp + 8 k
  // The tile of pixels [p0, p0 + kPix) of image n.
  const auto copy_tile = [&](int64_t n, int64_t p0) {
    const T* src = in + n * HW * C;
    T* dst = out + n * HW * C;
    if constexpr (kToNchw) {
      // Loads: chunk q of pixel p; all four issued before any is stored.
      uint4 v[kLoadsPerThread];
#pragma unroll
      for (int j = 0; j < kLoadsPerThread; ++j) {
        const int id = t + kVecThreads * j, p = id / kChunks, q = id % kChunks;
        const int64_t c = c0 + q * kPerChunk;  // C is whole chunks: c < C covers the chunk
        v[j] = make_uint4(0, 0, 0, 0);
        if (p0 + p < HW && c < C) v[j] = *reinterpret_cast<const uint4*>(src + (p0 + p) * C + c);
      }
#pragma unroll
      for (int j = 0; j < kLoadsPerThread; ++j) {
        const int id = t + kVecThreads * j, p = id / kChunks, q = id % kChunks;
        uint32_t* row = &tile[p][q * 4];
        row[0] = v[j].x;
        row[1] = v[j].y;
        row[2] = v[j].z;
        row[3] = v[j].w;
      }
      __syncthreads();
      // Stores: warp w takes word columns w, w + 8, ...; lanes walk consecutive pixels, so each
      // store instruction writes 32 (pairs: 64) consecutive elements of one channel plane.
      // Entries outside the image or past C were never loaded and are never stored.
      for (int wc = warp; wc < kWords; wc += kVecThreads / 32) {
        const int64_t c = c0 + wc * kPerWord;
        if (c >= C) break;
        if constexpr (kPairs) {
#pragma unroll
          for (int pg = 0; pg < kPix; pg += 64) {
            const int p = pg + 2 * lane;
            if (p0 + p >= HW) break;  // H*W is even: p + 1 is in range too
            const uint32_t a = tile[p][wc], b = tile[p + 1][wc];
            uint32_t* o = reinterpret_cast<uint32_t*>(dst + c * HW + p0 + p);
            o[0] = __byte_perm(a, b, 0x5410);       // channel c: the lower halves
            o[HW / 2] = __byte_perm(a, b, 0x7632);  // channel c + 1: the upper halves
          }
        } else {
#pragma unroll
          for (int pg = 0; pg < kPix; pg += 32) {
            const int p = pg + lane;
            if (p0 + p >= HW) break;
            const uint32_t word = tile[p][wc];
            T* o = dst + c * HW + p0 + p;
            if constexpr (kPerWord == 1) {
              *o = *reinterpret_cast<const T*>(&word);
            } else {
              const uint16_t lo = static_cast<uint16_t>(word), hi = static_cast<uint16_t>(word >> 16);
              *o = *reinterpret_cast<const T*>(&lo);     // channel c (the lower address)
              o[HW] = *reinterpret_cast<const T*>(&hi);  // channel c + 1 (C is even here)
            }
          }
        }
      }
    } else {
      // Loads, all of a thread's issued before any lands in the tile: warp w's word columns
      // (w, w + 8, w + 16, w + 24) times its pixel groups, 16 loads of 4 bytes per thread (pairs:
      // 8 + 8). One column's loads at a time, 16 bytes per thread in flight, ran the float
      // copy at ~2.0 TB/s (Little's law at ~1 us of latency; run RA: kb2_93's 1.07 GB
      // grad_output in 1062 us, against 3.0 TB/s measured for a copy). Entries outside the
      // image or past C are never loaded, and never stored below.
      constexpr int kGroups = kPairs ? kPix / 64 : kPix / 32;  // pixel groups per column
      uint32_t lo[kCols][kGroups], hi[kCols][kGroups];  // hi: channel c + 1 (16-bit types)
#pragma unroll
      for (int k = 0; k < kCols; ++k) {
        const int wc = warp + k * (kVecThreads / 32);
        const int64_t c = c0 + wc * kPerWord;
#pragma unroll
        for (int gi = 0; gi < kGroups; ++gi) {
          const int p = kPairs ? 64 * gi + 2 * lane : 32 * gi + lane;
          lo[k][gi] = hi[k][gi] = 0;
          if (c >= C || p0 + p >= HW) continue;  // kPairs: H*W is even, p + 1 is in range too
          const T* i = src + c * HW + p0 + p;
          if constexpr (kPairs) {  // pixels p and p + 1 of channels c and c + 1
            lo[k][gi] = *reinterpret_cast<const uint32_t*>(i);
            hi[k][gi] = *reinterpret_cast<const uint32_t*>(i + HW);
          } else if constexpr (kPerWord == 1) {
            lo[k][gi] = *reinterpret_cast<const uint32_t*>(i);
          } else {
            lo[k][gi] = *reinterpret_cast<const uint16_t*>(i);
            hi[k][gi] = *reinterpret_cast<const uint16_t*>(i + HW);
          }
        }
      }
      if constexpr (kSums) {  // entries never loaded are zeros
#pragma unroll
        for (int k = 0; k < kCols; ++k) {
#pragma unroll
          for (int gi = 0; gi < kGroups; ++gi) {
            acc[k][0] += word_value<T>(lo[k][gi]);
            if constexpr (kPerWord == 2) acc[k][1] += word_value<T>(hi[k][gi]);
            if constexpr (kPairs) {  // the second pixel of each pair
              acc[k][0] += word_value<T>(lo[k][gi] >> 16);
              acc[k][1] += word_value<T>(hi[k][gi] >> 16);
            }
          }
        }
      }
#pragma unroll
      for (int k = 0; k < kCols; ++k) {
        const int wc = warp + k * (kVecThreads / 32);
        if (c0 + wc * kPerWord >= C) continue;
#pragma unroll
        for (int gi = 0; gi < kGroups; ++gi) {
          const int p = kPairs ? 64 * gi + 2 * lane : 32 * gi + lane;
          if (p0 + p >= HW) continue;
          if constexpr (kPairs) {
            tile[p][wc] = __byte_perm(lo[k][gi], hi[k][gi], 0x5410);      // pixel p: c in the lower half
            tile[p + 1][wc] = __byte_perm(lo[k][gi], hi[k][gi], 0x7632);  // pixel p + 1
          } else {  // float: the word itself (hi is 0); 16-bit: channel c in the lower half (the lower address)
            tile[p][wc] = lo[k][gi] | (hi[k][gi] << 16);
          }
        }
      }
      __syncthreads();
      // Stores: chunk q of pixel p.
#pragma unroll
      for (int j = 0; j < kLoadsPerThread; ++j) {
        const int id = t + kVecThreads * j, p = id / kChunks, q = id % kChunks;
        const int64_t c = c0 + q * kPerChunk;  // C is whole chunks: c < C covers the chunk
        if (p0 + p < HW && c < C) {
          const uint32_t* row = &tile[p][q * 4];
          store_16_bytes(dst + (p0 + p) * C + c, row[0], row[1], row[2], row[3]);
        }
      }
    }
    __syncthreads();  // the tile is refilled for the next one
  };
  if constexpr (kSums) {
    // (image, pixel tile) pairs in image-major order, block x taking pairs x, x + gridDim.x, ...:
    // a grid of about one wave, so that the sums have few rows.
    const int64_t ptiles = (HW + kPix - 1) / kPix, tiles = N * ptiles;
    for (int64_t tl = blockIdx.x; tl < tiles; tl += gridDim.x) {
      const int64_t n = tl / ptiles;
      copy_tile(n, (tl - n * ptiles) * kPix);
    }
  } else {
    // Block x: pixel tile x of images z, z + gridDim.z, ...
    for (int64_t n = blockIdx.z; n < N; n += gridDim.z) copy_tile(n, static_cast<int64_t>(blockIdx.x) * kPix);
  }
  if constexpr (kSums) {
    // A fixed-order butterfly across the warp's lanes (its pixels), then lane 0 writes the row.
#pragma unroll
    for (int k = 0; k < kCols; ++k) {
#pragma unroll
      for (int off = 16; off > 0; off /= 2) {
        acc[k][0] += __shfl_xor_sync(0xffffffffu, acc[k][0], off);
        acc[k][1] += __shfl_xor_sync(0xffffffffu, acc[k][1], off);
      }
      const int64_t c = c0 + (warp + k * (kVecThreads / 32)) * kPerWord;
      if (lane == 0 && c < C) {
        float* row = sums + static_cast<int64_t>(blockIdx.x) * C;
        row[c] = acc[k][0];
        if constexpr (kPerWord == 2) row[c + 1] = acc[k][1];  // C is even (whole 16-byte chunks)
      }
    }
  }
}

template <typename T, bool kPairs>
__global__ __launch_bounds__(kVecThreads) void nhwc_to_nchw_vec_kernel(const T* __restrict__ in,
                                                                       T* __restrict__ out,
                                                                       int64_t N, int64_t HW,
                                                                       int64_t C) {
  vec_tile_copy<T, kPairs, true>(in, out, N, HW, C);
}

template <typename T, bool kPairs>
__global__ __launch_bounds__(kVecThreads) void nchw_to_nhwc_vec_kernel(const T* __restrict__ in,
                                                                       T* __restrict__ out,
                                                                       int64_t N, int64_t HW,
                                                                       int64_t C) {
  vec_tile_copy<T, kPairs, false>(in, out, N, HW, C);
}

template <typename T, bool kPairs>
__global__ __launch_bounds__(kVecThreads) void nchw_to_nhwc_sums_kernel(const T* __restrict__ in,
                                                                        T* __restrict__ out, int64_t N,
                                                                        int64_t HW, int64_t C,
                                                                        float* __restrict__ sums) {
  vec_tile_copy<T, kPairs, false, true>(in, out, N, HW, C, sums);
}

// ---- element kernel ---------------------------------------------------------------------
constexpr int kTile = 32, kRows = 8;  // 32 x 8 threads move a 32 x 32 tile

template <typename T>
__global__ __launch_bounds__(kTile * kRows) void nhwc_to_nchw_kernel(const T* __restrict__ in,
                                                                      T* __restrict__ out,
                                                                      int64_t N, int64_t HW,
                                                                      int64_t C) {
  __shared__ T tile[kTile][kTile + 1];  // +1: the column reads hit 32 different banks
  const int64_t p0 = static_cast<int64_t>(blockIdx.x) * kTile;  // pixel tile
  const int64_t c0 = static_cast<int64_t>(blockIdx.y) * kTile;  // channel tile
  const int tx = threadIdx.x, ty = threadIdx.y;
  for (int64_t n = blockIdx.z; n < N; n += gridDim.z) {
    const T* src = in + n * HW * C;
    T* dst = out + n * HW * C;
#pragma unroll
    for (int r = ty; r < kTile; r += kRows) {  // rows = pixels, lanes along channels
      const int64_t p = p0 + r, c = c0 + tx;
      if (p < HW && c < C) tile[r][tx] = src[p * C + c];
    }
    __syncthreads();
#pragma unroll
    for (int r = ty; r < kTile; r += kRows) {  // rows = channels, lanes along pixels
      const int64_t c = c0 + r, p = p0 + tx;
      if (p < HW && c < C) dst[c * HW + p] = tile[tx][r];
    }
    __syncthreads();  // the tile is refilled for the next image
  }
}

// One image copy on the vector tiles, either way; 16-bit pairs where H*W is even.
template <typename T, bool kToNchw>
void launch_vec(const at::Tensor& t, const at::Tensor& out, dim3 grid, cudaStream_t stream,
                int64_t N, int64_t HW, int64_t C) {
  const auto launch = [&](auto kernel) {
    kernel<<<grid, kVecThreads, 0, stream>>>(t.const_data_ptr<T>(), out.mutable_data_ptr<T>(), N, HW, C);
  };
  if constexpr (sizeof(T) == 2) {
    if (HW % 2 == 0) {
      launch(kToNchw ? nhwc_to_nchw_vec_kernel<T, true> : nchw_to_nhwc_vec_kernel<T, true>);
      return;
    }
  }
  launch(kToNchw ? nhwc_to_nchw_vec_kernel<T, false> : nchw_to_nhwc_vec_kernel<T, false>);
}

// ---- outer-dimension swap ----------------------------------------------------------------
// dst[b][a][r] = src[a][b][r]: V-element pieces of dst (V = 16 bytes of T where R and both
// pointers allow, else 1) in dst's order, so the writes are coalesced and the reads are runs
// of R elements; each thread loads kSwapUnroll pieces (256 apart) before storing any, four
// 16-byte loads in flight. at::Tensor::contiguous() of the transposed view ran at about 1.45
// TB/s on Mask R-CNN's 103 MB input (H100, run IB: 2 such copies, 0.285 ms); this kernel with
// one load per thread at a time 1.9 TB/s (run IG: 0.216 ms).
constexpr int kSwapUnroll = 4;

template <typename Vec, typename Idx>
__global__ __launch_bounds__(256) void swap_outer_kernel(const Vec* __restrict__ src, Vec* __restrict__ dst,
                                                         Idx A, Idx B, Idx R_vecs, Idx total) {
  for (Idx q0 = static_cast<Idx>(blockIdx.x) * 256 * kSwapUnroll + threadIdx.x; q0 < total;
       q0 += static_cast<Idx>(gridDim.x) * 256 * kSwapUnroll) {
    Vec v[kSwapUnroll];
#pragma unroll
    for (int u = 0; u < kSwapUnroll; ++u) {
      const Idx q = q0 + u * 256;
      if (q < total) {
        const Idx run = q / R_vecs, piece = q - run * R_vecs;  // run = b * A + a
        const Idx b = run / A, a = run - b * A;
        v[u] = src[(static_cast<int64_t>(a) * B + b) * R_vecs + piece];
      }
    }
#pragma unroll
    for (int u = 0; u < kSwapUnroll; ++u) {
      if (q0 + u * 256 < total) dst[q0 + u * 256] = v[u];
    }
  }
}

}  // namespace

void swap_outer_dims(const at::Tensor& src, int64_t A, int64_t B, int64_t R, const at::Tensor& dst) {
  TORCH_CHECK(src.is_contiguous() && dst.is_contiguous() && src.numel() == A * B * R &&
                  dst.numel() == A * B * R && src.scalar_type() == dst.scalar_type(),
              "convt: swap_outer_dims: contiguous tensors of A*B*R elements expected");
  if (dst.numel() == 0) return;
  auto stream = at::cuda::getCurrentCUDAStream();
  const int64_t elem = static_cast<int64_t>(src.element_size());
  const bool vec = (R * elem) % 16 == 0 && reinterpret_cast<uintptr_t>(src.const_data_ptr()) % 16 == 0 &&
                   reinterpret_cast<uintptr_t>(dst.const_data_ptr()) % 16 == 0;
  const int64_t per = vec ? 16 / elem : 1;
  const int64_t total = A * B * R / per;
  const int64_t sms = at::cuda::getCurrentDeviceProperties()->multiProcessorCount;
  const unsigned blocks = static_cast<unsigned>(std::min<int64_t>(ceil_div(total, 256 * kSwapUnroll), sms * 32));
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, src.scalar_type(), "convt_swap_outer_dims", [&] {
    auto launch = [&](auto vec_tag) {
      using Vec = decltype(vec_tag);
      const Vec* from = reinterpret_cast<const Vec*>(src.const_data_ptr<scalar_t>());
      Vec* to = reinterpret_cast<Vec*>(dst.mutable_data_ptr<scalar_t>());
      // 32-bit index math where every piece index (and a grid stride past it) fits.
      if (total + int64_t(blocks) * 256 * kSwapUnroll < (int64_t(1) << 31)) {
        swap_outer_kernel<Vec, int32_t><<<blocks, 256, 0, stream>>>(
            from, to, static_cast<int32_t>(A), static_cast<int32_t>(B), static_cast<int32_t>(R / per),
            static_cast<int32_t>(total));
      } else {
        swap_outer_kernel<Vec, int64_t><<<blocks, 256, 0, stream>>>(from, to, A, B, R / per, total);
      }
      C10_CUDA_KERNEL_LAUNCH_CHECK();
    };
    launch_vector_or_element<scalar_t>(vec, launch);
  });
}

namespace {

// The tiles of a copy between NCHW and channels_last: vector tiles (2- and 4-byte types, C a
// multiple of 16 bytes, both pointers 16-byte aligned) or element tiles.
struct CopyTiles {
  int64_t N, C, HW;
  bool vec;
  dim3 grid;
};
CopyTiles copy_tiles(const at::Tensor& t, const at::Tensor& out) {
  CopyTiles c;
  c.N = t.size(0);
  c.C = t.size(1);
  c.HW = t.size(2) * t.size(3);
  const int64_t elem = static_cast<int64_t>(t.element_size());
  c.vec = (elem == 2 || elem == 4) && (c.C * elem) % 16 == 0 && reinterpret_cast<uintptr_t>(t.const_data_ptr()) % 16 == 0 &&
          reinterpret_cast<uintptr_t>(out.const_data_ptr()) % 16 == 0;
  const int64_t tile_pix = c.vec ? kPix : kTile;
  const int64_t tile_c = c.vec ? kWords * 4 / elem : kTile;
  TORCH_CHECK(ceil_div(c.HW, tile_pix) < (int64_t(1) << 31) && ceil_div(c.C, tile_c) < 65536,
              "convt: tensor too large for the NCHW <-> channels_last copy");
  c.grid = dim3(static_cast<unsigned>(ceil_div(c.HW, tile_pix)), static_cast<unsigned>(ceil_div(c.C, tile_c)),
                static_cast<unsigned>(std::min<int64_t>(c.N, 65535)));
  return c;
}

}  // namespace

void nhwc_to_nchw_into(const at::Tensor& t, const at::Tensor& out) {
  TORCH_CHECK(t.dim() == 4 && t.is_contiguous(at::MemoryFormat::ChannelsLast) && out.is_contiguous() &&
                  out.sizes() == t.sizes() && out.scalar_type() == t.scalar_type() && out.device() == t.device(),
              "convt: nhwc_to_nchw_into: a dense channels_last tensor and an NCHW tensor of its shape expected");
  if (out.numel() == 0) return;
  CONVT_TRACE("cuda.layout.to_nchw");
  const CopyTiles c = copy_tiles(t, out);
  auto stream = at::cuda::getCurrentCUDAStream();
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, t.scalar_type(), "convt_to_nchw", [&] {
    if constexpr (sizeof(scalar_t) == 2 || sizeof(scalar_t) == 4) {
      if (c.vec) {
        launch_vec<scalar_t, true>(t, out, c.grid, stream, c.N, c.HW, c.C);
        C10_CUDA_KERNEL_LAUNCH_CHECK();
        return;
      }
    }
    nhwc_to_nchw_kernel<scalar_t><<<c.grid, dim3(kTile, kRows), 0, stream>>>(
        t.const_data_ptr<scalar_t>(), out.mutable_data_ptr<scalar_t>(), c.N, c.HW, c.C);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  });
}

at::Tensor to_nchw(const at::Tensor& t) {
  if (t.is_contiguous()) return t;
  if (t.dim() != 4 || !t.is_contiguous(at::MemoryFormat::ChannelsLast)) return t.contiguous();
  at::Tensor out = at::empty(t.sizes(), t.options().memory_format(at::MemoryFormat::Contiguous));
  nhwc_to_nchw_into(t, out);
  return out;
}

at::Tensor to_channels_last(const at::Tensor& t) {
  if (t.dim() != 4 || t.is_contiguous(at::MemoryFormat::ChannelsLast)) return t;
  at::Tensor out = at::empty(t.sizes(), t.options().memory_format(at::MemoryFormat::ChannelsLast));
  if (out.numel() == 0) return out;
  const CopyTiles c = t.is_contiguous() ? copy_tiles(t, out) : CopyTiles{};
  if (!t.is_contiguous() || !c.vec) {
    out.copy_(t);
    return out;
  }
  CONVT_TRACE("cuda.layout.to_channels_last");
  auto stream = at::cuda::getCurrentCUDAStream();
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, t.scalar_type(), "convt_to_channels_last", [&] {
    if constexpr (sizeof(scalar_t) == 2 || sizeof(scalar_t) == 4) {
      launch_vec<scalar_t, false>(t, out, c.grid, stream, c.N, c.HW, c.C);
      C10_CUDA_KERNEL_LAUNCH_CHECK();
    }
  });
  return out;
}

namespace {

// Resident blocks per multiprocessor of the summing copy (at least 1), once per instantiation.
template <typename T, bool kPairs>
int sums_blocks_per_sm() {
  static const int blocks = [] {
    int b = 0;
    C10_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&b, nchw_to_nhwc_sums_kernel<T, kPairs>, kVecThreads, 0));
    return std::max(b, 1);
  }();
  return blocks;
}

// One wave of blocks (what fits on every multiprocessor at once), each walking its share of the
// tiles, so that `sums` has a row per block of the wave rather than one per tile.
template <typename T, bool kPairs>
void launch_vec_sums(const at::Tensor& t, ChannelsLastWithSums& r, const CopyTiles& c, cudaStream_t stream) {
  const int64_t tiles = c.N * int64_t(c.grid.x);
  const int64_t wave = int64_t(at::cuda::getCurrentDeviceProperties()->multiProcessorCount) * sums_blocks_per_sm<T, kPairs>();
  r.splits = std::max<int64_t>(1, std::min<int64_t>(tiles, ceil_div(wave, int64_t(c.grid.y))));
  TORCH_CHECK(r.splits < (int64_t(1) << 31), "convt: tensor too large for the channels_last copy");
  r.sums = at::empty({r.splits * c.C}, t.options().dtype(at::kFloat));
  const dim3 grid(static_cast<unsigned>(r.splits), c.grid.y, 1);
  nchw_to_nhwc_sums_kernel<T, kPairs><<<grid, kVecThreads, 0, stream>>>(
      t.const_data_ptr<T>(), r.out.mutable_data_ptr<T>(), c.N, c.HW, c.C, r.sums.mutable_data_ptr<float>());
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

}  // namespace

ChannelsLastWithSums to_channels_last_with_channel_sums(const at::Tensor& t) {
  ChannelsLastWithSums r;
  if (t.dim() != 4 || !t.is_contiguous() || t.is_contiguous(at::MemoryFormat::ChannelsLast) || t.numel() == 0) {
    r.out = to_channels_last(t);
    return r;
  }
  r.out = at::empty(t.sizes(), t.options().memory_format(at::MemoryFormat::ChannelsLast));
  const CopyTiles c = copy_tiles(t, r.out);
  if (!c.vec) {
    r.out.copy_(t);
    return r;
  }
  CONVT_TRACE("cuda.layout.to_channels_last_with_sums");
  auto stream = at::cuda::getCurrentCUDAStream();
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, t.scalar_type(), "convt_to_channels_last_sums", [&] {
    if constexpr (sizeof(scalar_t) == 2) {
      if (c.HW % 2 == 0) {
        launch_vec_sums<scalar_t, true>(t, r, c, stream);
        return;
      }
    }
    if constexpr (sizeof(scalar_t) == 2 || sizeof(scalar_t) == 4) launch_vec_sums<scalar_t, false>(t, r, c, stream);
  });
  return r;
}

}  // namespace convt
