// CPU kernels for convt::conv_transpose2d and its backward.
//
// Method (the classic GEMM + col2im formulation, written here for clarity
// rather than speed; the GPU is where this library competes):
//   forward        cols[Cout_g*KH*KW, H*W] = W_g^T @ X_g, then col2im adds every
//                  column into the output pixel it reaches (output_coord()).
//   grad_input     cols = im2col(grad_out), grad_in_g = W_g @ cols
//                  (an ordinary strided convolution of grad_out with W).
//   grad_weight    sum over the batch, in order, of X_g @ cols^T (deterministic).
//   grad_bias      sum of grad_out over N, H, W.
// float16/bfloat16 are computed in float32 and rounded once at the end.
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <torch/library.h>

#include "../frontend.h"
#include "../geometry.h"

namespace convt {
namespace {

at::ScalarType compute_dtype(at::ScalarType t) {
  return (t == at::kHalf || t == at::kBFloat16) ? at::kFloat : t;
}

// Runs fn(i) for i in [0, count): across threads when there is more than one
// task, inline otherwise (so that the BLAS call inside keeps its own threads).
template <typename Fn>
void for_each_task(int64_t count, const Fn& fn) {
  if (count > 1) {
    at::parallel_for(0, count, 1, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) fn(i);
    });
  } else {
    for (int64_t i = 0; i < count; ++i) fn(i);
  }
}

// cols[(c*KH + ki)*KW + kj][ih*W + iw] = img[c][oh][ow] where (oh, ow) is the
// output pixel that input pixel (ih, iw) reaches through tap (ki, kj); 0 outside.
// img is one group of one sample, [Cout_g, Hout, Wout] contiguous.
template <typename T>
void im2col(const T* img, const Geometry& g, T* cols) {
  const int64_t rows = g.Cout_g * g.KH * g.KW;
  at::parallel_for(0, rows, 16, [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) {
      const int64_t kj = row % g.KW;
      const int64_t ki = (row / g.KW) % g.KH;
      const int64_t c = row / (g.KW * g.KH);
      const T* src = img + c * g.Hout * g.Wout;
      T* dst = cols + row * g.H * g.W;
      for (int64_t ih = 0; ih < g.H; ++ih) {
        const int64_t oh = output_coord(ih, ki, g.SH, g.PH, g.DH);
        T* d = dst + ih * g.W;
        if (oh < 0 || oh >= g.Hout) {
          std::fill(d, d + g.W, T(0));
          continue;
        }
        for (int64_t iw = 0; iw < g.W; ++iw) {
          const int64_t ow = output_coord(iw, kj, g.SW, g.PW, g.DW);
          d[iw] = (ow >= 0 && ow < g.Wout) ? src[oh * g.Wout + ow] : T(0);
        }
      }
    }
  });
}

// The adjoint of im2col: img[c][oh][ow] += cols[...]. Threads split the output
// channels, so each output element is summed by one thread in a fixed order.
template <typename T>
void col2im_add(const T* cols, const Geometry& g, T* img) {
  at::parallel_for(0, g.Cout_g, 1, [&](int64_t begin, int64_t end) {
    for (int64_t c = begin; c < end; ++c) {
      T* dst = img + c * g.Hout * g.Wout;
      for (int64_t ki = 0; ki < g.KH; ++ki) {
        for (int64_t kj = 0; kj < g.KW; ++kj) {
          const T* src = cols + ((c * g.KH + ki) * g.KW + kj) * g.H * g.W;
          for (int64_t ih = 0; ih < g.H; ++ih) {
            const int64_t oh = output_coord(ih, ki, g.SH, g.PH, g.DH);
            if (oh < 0 || oh >= g.Hout) continue;
            for (int64_t iw = 0; iw < g.W; ++iw) {
              const int64_t ow = output_coord(iw, kj, g.SW, g.PW, g.DW);
              if (ow >= 0 && ow < g.Wout) dst[oh * g.Wout + ow] += src[ih * g.W + iw];
            }
          }
        }
      }
    }
  });
}

void forward_cpu(const at::Tensor& input, const at::Tensor& weight,
                 const std::optional<at::Tensor>& bias, const Geometry& g,
                 const at::Tensor& output) {
  const auto acc = compute_dtype(input.scalar_type());
  const at::Tensor x = input.to(acc).contiguous();
  // [groups, Cin_g, Cout_g*KH*KW]
  const at::Tensor w = weight.to(acc).contiguous().view({g.groups, g.Cin_g, -1});
  at::Tensor out = at::empty({g.N, g.Cout, g.Hout, g.Wout}, x.options());
  if (bias.has_value() && bias->defined()) {
    out.copy_(bias->to(acc).view({1, g.Cout, 1, 1}).expand_as(out));
  } else {
    out.zero_();
  }
  AT_DISPATCH_FLOATING_TYPES(acc, "convt_forward_cpu", [&] {
    const int64_t hw = g.H * g.W;
    for_each_task(g.N * g.groups, [&](int64_t task) {
      const int64_t n = task / g.groups, grp = task % g.groups;
      const at::Tensor x_g = x[n].view({g.groups, g.Cin_g, hw})[grp];
      const at::Tensor cols = at::mm(w[grp].t(), x_g);  // [Cout_g*KH*KW, H*W]
      scalar_t* img = out.data_ptr<scalar_t>() + (n * g.Cout + grp * g.Cout_g) * g.Hout * g.Wout;
      col2im_add(cols.const_data_ptr<scalar_t>(), g, img);
    });
  });
  output.copy_(out);
}

void backward_cpu(const at::Tensor& grad_output, const at::Tensor& input,
                  const at::Tensor& weight, const Geometry& g, const at::Tensor& grad_input,
                  const at::Tensor& grad_weight, const at::Tensor& grad_bias) {
  const auto acc = compute_dtype(input.scalar_type());
  const at::Tensor go = grad_output.to(acc).contiguous();
  const int64_t hw = g.H * g.W;
  const int64_t out_plane = g.Hout * g.Wout;
  const int64_t col_rows = g.Cout_g * g.KH * g.KW;

  AT_DISPATCH_FLOATING_TYPES(acc, "convt_backward_cpu", [&] {
    auto im2col_of = [&](int64_t n, int64_t grp) {
      at::Tensor cols = at::empty({col_rows, hw}, go.options());
      im2col(go.const_data_ptr<scalar_t>() + (n * g.Cout + grp * g.Cout_g) * out_plane, g,
             cols.data_ptr<scalar_t>());
      return cols;
    };

    if (grad_input.defined()) {
      const at::Tensor w = weight.to(acc).contiguous().view({g.groups, g.Cin_g, col_rows});
      at::Tensor gi = at::empty({g.N, g.groups, g.Cin_g, hw}, go.options());
      for_each_task(g.N * g.groups, [&](int64_t task) {
        const int64_t n = task / g.groups, grp = task % g.groups;
        at::Tensor dst = gi[n][grp];
        at::mm_out(dst, w[grp], im2col_of(n, grp));
      });
      grad_input.copy_(gi.view({g.N, g.Cin, g.H, g.W}));
    }

    if (grad_weight.defined()) {
      const at::Tensor x = input.to(acc).contiguous().view({g.N, g.groups, g.Cin_g, hw});
      at::Tensor gw = at::zeros({g.groups, g.Cin_g, col_rows}, go.options());
      // One task per group; within a group the batch is summed in order, so the
      // result does not depend on the thread count.
      for_each_task(g.groups, [&](int64_t grp) {
        at::Tensor dst = gw[grp];
        for (int64_t n = 0; n < g.N; ++n) {
          dst.addmm_(x[n][grp], im2col_of(n, grp).t());
        }
      });
      grad_weight.copy_(gw.view(grad_weight.sizes()));
    }
  });

  if (grad_bias.defined()) {
    grad_bias.copy_(go.sum({0, 2, 3}));
  }
}

at::Tensor conv_transpose2d_cpu(const at::Tensor& input, const at::Tensor& weight,
                                const std::optional<at::Tensor>& bias, at::IntArrayRef stride,
                                at::IntArrayRef padding, at::IntArrayRef output_padding,
                                int64_t groups, at::IntArrayRef dilation) {
  return conv_transpose2d_frontend(input, weight, bias, stride, padding, output_padding, groups,
                                   dilation, forward_cpu);
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> conv_transpose2d_backward_cpu(
    const at::Tensor& grad_output, const at::Tensor& input, const at::Tensor& weight,
    at::IntArrayRef stride, at::IntArrayRef padding, at::IntArrayRef output_padding,
    int64_t groups, at::IntArrayRef dilation, std::array<bool, 3> output_mask) {
  return conv_transpose2d_backward_frontend(grad_output, input, weight, stride, padding,
                                            output_padding, groups, dilation, output_mask,
                                            backward_cpu);
}

}  // namespace

TORCH_LIBRARY_IMPL(convt, CPU, m) {
  m.impl("conv_transpose2d", &conv_transpose2d_cpu);
  m.impl("conv_transpose2d_backward", &conv_transpose2d_backward_cpu);
}

}  // namespace convt
