// torch.backends.cudnn.allow_tf32 (the TF32 switch of PyTorch's own convolutions), read
// from C++ the same way on every supported torch version.
//
// The accessor's parameter changed across versions: allowTF32CuDNN(const std::string& op)
// up to about torch 2.9, allowTF32CuDNN(std::optional<at::Float32Op> op) since. Both are
// asked for the "conv" op (the no-argument form warns about a deprecated API on some
// versions); the parameter type is read off the member function itself, so this compiles
// against either header.
#pragma once

#include <ATen/Context.h>

#include <string>
#include <type_traits>

namespace convt {
namespace detail {

template <class C, class R, class A>
A first_param(R (C::*)(A) const);

template <class Ctx>
bool allow_tf32_conv(const Ctx& ctx) {
  using Arg = std::decay_t<decltype(first_param(&Ctx::allowTF32CuDNN))>;
  if constexpr (std::is_same_v<Arg, std::string>) {
    return ctx.allowTF32CuDNN("conv");
  } else {
    return ctx.allowTF32CuDNN(Arg::value_type::CONV);  // std::optional<at::Float32Op>
  }
}

}  // namespace detail

// True when float32 convolutions may use TF32 tensor cores.
inline bool allow_tf32_conv() { return detail::allow_tf32_conv(at::globalContext()); }

}  // namespace convt
