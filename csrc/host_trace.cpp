// The table behind host_trace.h: sections by name, printed to stderr when the process exits.
#include "host_trace.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace convt {
namespace trace {
namespace {

struct Stat {
  int64_t calls = 0;
  int64_t ns = 0;
  int64_t first_ns = 0;  // the first call alone: lazy module loading, first cuBLAS plans
};

// Printed by the destructor of the (function-local, so constructed on first use) table.
class Table {
 public:
  void add(const char* name, int64_t ns) {
    const std::lock_guard<std::mutex> lock(mutex_);
    Stat& s = stats_[name];
    if (s.calls == 0) s.first_ns = ns;
    ++s.calls;
    s.ns += ns;
  }

  ~Table() {
    std::vector<std::pair<std::string, Stat>> rows(stats_.begin(), stats_.end());
    if (rows.empty()) return;
    std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.second.ns > b.second.ns; });
    // The first call is listed apart: it can hold one-time costs (the first launch of a
    // kernel loads its module, 44 ms on an H100, run JA) that would swamp a per-call mean.
    std::fprintf(stderr,
                 "convt host trace (CONVT_HOST_TRACE=1): section, calls, total ms, first call us, "
                 "us per later call\n");
    for (const auto& [name, s] : rows) {
      const double later = s.calls > 1 ? (s.ns - s.first_ns) / 1e3 / static_cast<double>(s.calls - 1) : 0.0;
      std::fprintf(stderr, "  %-40s %10lld %12.3f %12.2f %10.2f\n", name.c_str(), static_cast<long long>(s.calls),
                   s.ns / 1e6, s.first_ns / 1e3, later);
    }
  }

 private:
  std::mutex mutex_;
  std::map<std::string, Stat> stats_;
};

Table& table() {
  static Table t;
  return t;
}

}  // namespace

bool enabled() {
  static const bool on = [] {
    const char* e = std::getenv("CONVT_HOST_TRACE");
    return e != nullptr && std::strcmp(e, "1") == 0;
  }();
  return on;
}

void add(const char* name, int64_t ns) { table().add(name, ns); }

}  // namespace trace
}  // namespace convt
