// CPU kernels for convt::conv_transpose2d and its backward.
//
// Method: the GEMM + col2im formulation, batched over samples so that each
// GEMM is large (one BLAS call per group and chunk of the batch):
//   forward        cols[Cout_g*KH*KW, n*H*W] = W_g^T @ X_g, then col2im adds every
//                  column into the output pixel it reaches (output_coord()).
//   grad_input     cols = im2col(grad_out), grad_in_g = W_g @ cols
//                  (an ordinary strided convolution of grad_out with W).
//   grad_weight    X_g @ cols^T, summed over the batch chunks in order (deterministic).
//   grad_bias      sum of grad_out over N, H, W.
// X_g is the input of one group laid out [Cin_g, n, H*W] (a transposed copy),
// so one GEMM covers a chunk of the batch. float16/bfloat16 are computed in
// float32 and rounded once at the end.
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <torch/library.h>

#include <algorithm>

#include "../frontend.h"
#include "../geometry.h"

namespace convt {
namespace {

// Upper bound on the elements of one cols buffer (128 MiB of float32).
constexpr int64_t kMaxColsElements = int64_t(1) << 25;

at::ScalarType compute_dtype(at::ScalarType t) {
  return (t == at::kHalf || t == at::kBFloat16) ? at::kFloat : t;
}

// Samples per chunk so that a [rows, chunk * H * W] cols buffer stays bounded.
int64_t batch_chunk(const Geometry& g) {
  const int64_t per_sample = g.Cout_g * g.KH * g.KW * g.H * g.W;
  return std::max<int64_t>(1, std::min<int64_t>(g.N, kMaxColsElements / std::max<int64_t>(per_sample, 1)));
}

// cols[(c*KH + ki)*KW + kj][s*H*W + ih*W + iw] = img[s][c][oh][ow] where (oh, ow) is
// the output pixel that input pixel (ih, iw) reaches through tap (ki, kj); 0 when
// outside. img points at channel 0 of this group in sample 0 of the chunk;
// sample s and channel c are at img + s*sample_stride + c*Hout*Wout.
template <typename T>
void im2col(const T* img, int64_t samples, int64_t sample_stride, const Geometry& g, T* cols) {
  const int64_t rows = g.Cout_g * g.KH * g.KW;
  const int64_t hw = g.H * g.W;
  at::parallel_for(0, rows * samples, 1, [&](int64_t begin, int64_t end) {
    for (int64_t task = begin; task < end; ++task) {
      const int64_t row = task / samples, s = task % samples;
      const int64_t kj = row % g.KW;
      const int64_t ki = (row / g.KW) % g.KH;
      const int64_t c = row / (g.KW * g.KH);
      const T* src = img + s * sample_stride + c * g.Hout * g.Wout;
      T* dst = cols + row * samples * hw + s * hw;
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

// The adjoint of im2col: img[s][c][oh][ow] += cols[...]. Threads split the
// (sample, channel) planes, so each output element is summed by one thread in a
// fixed order (taps, then input pixels).
template <typename T>
void col2im_add(const T* cols, int64_t samples, int64_t sample_stride, const Geometry& g, T* img) {
  const int64_t hw = g.H * g.W;
  at::parallel_for(0, samples * g.Cout_g, 1, [&](int64_t begin, int64_t end) {
    for (int64_t task = begin; task < end; ++task) {
      const int64_t s = task / g.Cout_g, c = task % g.Cout_g;
      T* dst = img + s * sample_stride + c * g.Hout * g.Wout;
      for (int64_t ki = 0; ki < g.KH; ++ki) {
        for (int64_t kj = 0; kj < g.KW; ++kj) {
          const int64_t row = (c * g.KH + ki) * g.KW + kj;
          const T* src = cols + row * samples * hw + s * hw;
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

// Input as [groups, Cin_g, N, H*W] in the compute dtype: one GEMM operand per group and chunk.
at::Tensor group_major_input(const at::Tensor& input, const Geometry& g, at::ScalarType acc) {
  return input.to(acc).reshape({g.N, g.groups, g.Cin_g, g.H * g.W}).permute({1, 2, 0, 3}).contiguous();
}

void forward_cpu(const at::Tensor& input, const at::Tensor& weight,
                 const std::optional<at::Tensor>& bias, const Geometry& g,
                 const at::Tensor& output) {
  const auto acc = compute_dtype(input.scalar_type());
  const at::Tensor x = group_major_input(input, g, acc);
  const at::Tensor w = weight.to(acc).contiguous().view({g.groups, g.Cin_g, -1});  // [G, Cin_g, Cout_g*KH*KW]
  at::Tensor out = at::empty({g.N, g.Cout, g.Hout, g.Wout}, x.options());
  if (bias.has_value() && bias->defined()) {
    out.copy_(bias->to(acc).view({1, g.Cout, 1, 1}).expand_as(out));
  } else {
    out.zero_();
  }
  const int64_t hw = g.H * g.W;
  const int64_t chunk = batch_chunk(g);
  const int64_t sample_stride = g.Cout * g.Hout * g.Wout;
  AT_DISPATCH_FLOATING_TYPES(acc, "convt_forward_cpu", [&] {
    for (int64_t grp = 0; grp < g.groups; ++grp) {
      for (int64_t n0 = 0; n0 < g.N; n0 += chunk) {
        const int64_t nb = std::min(chunk, g.N - n0);
        const at::Tensor x_g = x[grp].narrow(1, n0, nb).reshape({g.Cin_g, nb * hw});
        const at::Tensor cols = at::mm(w[grp].t(), x_g);  // [Cout_g*KH*KW, nb*H*W]
        scalar_t* img = out.data_ptr<scalar_t>() + n0 * sample_stride + grp * g.Cout_g * g.Hout * g.Wout;
        col2im_add(cols.const_data_ptr<scalar_t>(), nb, sample_stride, g, img);
      }
    }
  });
  output.copy_(out);
}

void backward_cpu(const at::Tensor& grad_output, const at::Tensor& input,
                  const at::Tensor& weight, const Geometry& g, const at::Tensor& grad_input,
                  const at::Tensor& grad_weight, const at::Tensor& grad_bias) {
  const auto acc = compute_dtype(input.scalar_type());
  const at::Tensor go = grad_output.to(acc).contiguous();
  const int64_t hw = g.H * g.W;
  const int64_t col_rows = g.Cout_g * g.KH * g.KW;
  const int64_t chunk = batch_chunk(g);
  const int64_t sample_stride = g.Cout * g.Hout * g.Wout;

  if (grad_input.defined() || grad_weight.defined()) {
    const at::Tensor w = weight.to(acc).contiguous().view({g.groups, g.Cin_g, col_rows});
    const at::Tensor x = grad_weight.defined() ? group_major_input(input, g, acc) : at::Tensor();
    // Both gradients in [G, Cin_g, ...] group-major layouts, filled chunk by chunk.
    at::Tensor gi = grad_input.defined() ? at::empty({g.groups, g.Cin_g, g.N, hw}, go.options()) : at::Tensor();
    at::Tensor gw = grad_weight.defined() ? at::zeros({g.groups, g.Cin_g, col_rows}, go.options()) : at::Tensor();
    AT_DISPATCH_FLOATING_TYPES(acc, "convt_backward_cpu", [&] {
      at::Tensor cols = at::empty({col_rows, chunk * hw}, go.options());
      for (int64_t grp = 0; grp < g.groups; ++grp) {
        // Chunks in order: grad_weight's sum over the batch has a fixed order.
        for (int64_t n0 = 0; n0 < g.N; n0 += chunk) {
          const int64_t nb = std::min(chunk, g.N - n0);
          at::Tensor c = cols.narrow(1, 0, nb * hw);
          if (nb != chunk) c = c.contiguous();
          im2col(go.const_data_ptr<scalar_t>() + n0 * sample_stride + grp * g.Cout_g * g.Hout * g.Wout, nb,
                 sample_stride, g, c.data_ptr<scalar_t>());
          if (gi.defined()) {
            at::Tensor dst = gi[grp].view({g.Cin_g, g.N * hw}).narrow(1, n0 * hw, nb * hw);
            dst.copy_(at::mm(w[grp], c));
          }
          if (gw.defined()) {
            const at::Tensor x_g = x[grp].narrow(1, n0, nb).reshape({g.Cin_g, nb * hw});
            gw[grp].addmm_(x_g, c.t());
          }
        }
      }
    });
    if (grad_input.defined()) {
      grad_input.copy_(gi.view({g.groups * g.Cin_g, g.N, g.H, g.W}).transpose(0, 1));
    }
    if (grad_weight.defined()) {
      grad_weight.copy_(gw.view(grad_weight.sizes()));
    }
  }

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
