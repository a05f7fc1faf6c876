// Test and measurement knobs: environment variables a kernel family reads once per process.
// Each caller keeps the answer in a function-local static (getenv scans the environment, and
// a knob must not change its mind mid-run).
#pragma once

#include <cstdlib>
#include <cstring>

namespace convt {

// True when the environment variable `name` is set to exactly `value`.
inline bool env_equals(const char* name, const char* value) {
  const char* e = std::getenv(name);
  return e != nullptr && std::strcmp(e, value) == 0;
}

// The three-way knobs (a route or tile kind with a default rule): unset, or any other value, is
// the rule; "0" never; "all" wherever the kernel applies (for measuring).
enum class KnobMode { kRule, kNever, kAll };
inline KnobMode env_mode(const char* name) {
  return env_equals(name, "0") ? KnobMode::kNever : env_equals(name, "all") ? KnobMode::kAll : KnobMode::kRule;
}

}  // namespace convt
