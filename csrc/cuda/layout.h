// channels_last -> NCHW copies (layout.cu), for the kernels that read NCHW only: the
// backward's own kernels and the mma.sync forward.
#pragma once

#include <ATen/ATen.h>

namespace convt {

// `t` as an NCHW-contiguous tensor: itself when it already is, a tiled-transpose copy
// when it is channels_last, else t.contiguous().
at::Tensor to_nchw(const at::Tensor& t);

}  // namespace convt
