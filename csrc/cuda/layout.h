// Layout copies (layout.cu): channels_last -> NCHW for the kernels that read NCHW only (the
// backward's own kernels and the mma.sync forward), NCHW -> channels_last for the forward's
// channels_last route (forward.cu), and the outer-dimension swap of the cuBLAS paths over
// small images.
#pragma once

#include <ATen/ATen.h>

namespace convt {

// A 4-d tensor dense in channels_last and not also NCHW-contiguous (one that is both, with
// one channel or one pixel, counts as NCHW): what the kernels that read channels_last in place
// take, and (for a weight) the [Cin][KH][KW][Cout] order of the GEMM paths' tap-major columns.
inline bool channels_last_only(const at::Tensor& t) {
  return t.dim() == 4 && !t.is_contiguous() && t.is_contiguous(at::MemoryFormat::ChannelsLast);
}

// `t` as an NCHW-contiguous tensor: itself when it already is, a tiled-transpose copy
// when it is channels_last, else t.contiguous().
at::Tensor to_nchw(const at::Tensor& t);

// The same copy into `out`: `t` a dense channels_last 4-d tensor, `out` NCHW-contiguous, same
// shape, type and device.
void nhwc_to_nchw_into(const at::Tensor& t, const at::Tensor& out);

// `t` as a dense channels_last tensor: itself when it already is (or is not 4-d), a tiled
// transpose when it is NCHW-contiguous and the vector tiles apply (2- or 4-byte type, C a
// multiple of 16 bytes, 16-byte aligned), else at::Tensor::copy_.
at::Tensor to_channels_last(const at::Tensor& t);

// to_channels_last of an NCHW-contiguous `t`, with each channel's sum taken from the same loads
// (for grad_bias: backward.cu): `sums` holds [splits][C] float partial sums, each row a fixed
// share of the pixels (deterministic on a given GPU). Where the vector tiles do not apply, or
// `t` is not NCHW-contiguous, `out` is to_channels_last(t) and `sums` is undefined.
struct ChannelsLastWithSums {
  at::Tensor out, sums;
  int64_t splits = 0;
};
ChannelsLastWithSums to_channels_last_with_channel_sums(const at::Tensor& t);

// `src` viewed as a contiguous [A][B][R] array, copied to `dst` as [B][A][R] (the two outer
// dimensions swapped, runs of R elements kept whole), e.g. NCHW [N][C][H*W] <-> [C][N][H*W]
// for the GEMMs over a batch of small images. `dst` must be contiguous with A*B*R elements.
void swap_outer_dims(const at::Tensor& src, int64_t A, int64_t B, int64_t R, const at::Tensor& dst);

}  // namespace convt
