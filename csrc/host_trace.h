// Host-time tracing of the ops' C++ (measurement knob CONVT_HOST_TRACE=1, read once).
//
// Small steps (DCGAN's layers, U-Net's last up-sampling) are bound by the host time of the
// call, not by the kernels: dcgan_g2 fp32 channels_last training, 185 us of our kernels
// against PyTorch's 210, but 301 us of host time against 249 (H100, run IJ,
// docs/perf-notes-backward.md v19). The GPU machines have no perf or Nsight Systems, so the
// sections of the C++ path are timed here: CONVT_TRACE("name") at the top of a scope adds
// the scope's wall time to a per-process table, printed to stderr at exit (calls, total,
// the first call's us, us per later call; nested sections each count their whole time).
// Off: one test of a static flag per section.
#pragma once

#include <chrono>
#include <cstdint>

namespace convt {
namespace trace {

bool enabled();                          // CONVT_HOST_TRACE=1
void add(const char* name, int64_t ns);  // thread-safe

class Scope {
 public:
  explicit Scope(const char* name) : name_(enabled() ? name : nullptr) {
    if (name_ != nullptr) start_ = std::chrono::steady_clock::now();
  }
  ~Scope() {
    if (name_ != nullptr) {
      add(name_, std::chrono::duration_cast<std::chrono::nanoseconds>(
                     std::chrono::steady_clock::now() - start_)
                     .count());
    }
  }
  Scope(const Scope&) = delete;
  Scope& operator=(const Scope&) = delete;

 private:
  const char* name_;
  std::chrono::steady_clock::time_point start_{};
};

}  // namespace trace
}  // namespace convt

#define CONVT_TRACE_JOIN2(a, b) a##b
#define CONVT_TRACE_JOIN(a, b) CONVT_TRACE_JOIN2(a, b)
// Times the rest of the enclosing scope as section `name` (a string literal).
#define CONVT_TRACE(name) const ::convt::trace::Scope CONVT_TRACE_JOIN(convt_trace_scope_, __LINE__)(name)
