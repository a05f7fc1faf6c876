// Probe: one NCHW tensor-map box load (SWIZZLE_NONE), as the ws forward's nchw_in path does.
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <cuda.h>
#define CONVT_SM90A_DEVICE 1
#include "cuda/tensor_map.cuh"
using namespace convt;
struct Maps { CUtensorMap m[4]; };
__global__ void probe(float* out, int box_bytes, int c0, int c1, int c2, int c3, const __grid_constant__ Maps maps) {
  extern __shared__ __align__(1024) unsigned char sm[];
  __shared__ uint64_t bar;
  if (threadIdx.x == 0) { bulk::mbar_init(&bar); bulk::fence_mbar_init(); }
  __syncthreads();
  if (threadIdx.x == 0) {
    bulk::arrive_expect(&bar, box_bytes);
    tma::load_4d(sm, &maps.m[0], c0, c1, c2, c3, &bar);
  }
  bulk::mbar_wait(&bar, 0);
  for (int i = threadIdx.x; i < box_bytes / 4; i += blockDim.x) out[i] = reinterpret_cast<float*>(sm)[i];
}
torch::Tensor run(torch::Tensor x, std::vector<int64_t> box, std::vector<int64_t> coord, int64_t swz) {
  Maps maps{};
  const uint64_t es = 4, W = x.size(3), H = x.size(2), C = x.size(1), N = x.size(0);
  const uint64_t dims[4] = {W, H, C, N};
  const uint64_t strides[3] = {W * es, H * W * es, C * H * W * es};
  const uint32_t b[4] = {(uint32_t)box[0], (uint32_t)box[1], (uint32_t)box[2], (uint32_t)box[3]};
  TORCH_CHECK(tma::encode_4d(&maps.m[0], CU_TENSOR_MAP_DATA_TYPE_FLOAT32, x.data_ptr(), dims, strides, b,
                             swz ? CU_TENSOR_MAP_SWIZZLE_32B : CU_TENSOR_MAP_SWIZZLE_NONE), "encode failed");
  const int bytes = 4 * box[0] * box[1] * box[2] * box[3];
  auto out = torch::zeros({bytes / 4}, x.options());
  cudaFuncSetAttribute(probe, cudaFuncAttributeMaxDynamicSharedMemorySize, 200000);
  probe<<<1, 128, bytes + 1024, at::cuda::getCurrentCUDAStream()>>>(out.data_ptr<float>(), bytes, coord[0], coord[1], coord[2], coord[3], maps);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return out;
}
PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("run", &run); }
