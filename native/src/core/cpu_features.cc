#include "core/cpu_features.h"

#include <atomic>
#include <cstdlib>
#include <cstring>

namespace ninodes {
namespace {

bool cpu_has_avx2() {
#if NINODES_HAS_X86
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c");
#else
  return false;
#endif
}

SimdPath initial_path() {
  const char* forced = std::getenv("NINODES_SIMD");
  if (forced != nullptr && std::strcmp(forced, "scalar") == 0) return SimdPath::kScalar;
  return cpu_has_avx2() ? SimdPath::kAvx2 : SimdPath::kScalar;
}

std::atomic<SimdPath>& current() {
  static std::atomic<SimdPath> path{initial_path()};
  return path;
}

}  // namespace

SimdPath simd_path() { return current().load(std::memory_order_relaxed); }

const char* simd_path_name(SimdPath path) { return path == SimdPath::kAvx2 ? "avx2" : "scalar"; }

bool set_simd_path(const std::string& name) {
  if (name == "scalar") {
    current().store(SimdPath::kScalar);
    return true;
  }
  if (name == "avx2" && cpu_has_avx2()) {
    current().store(SimdPath::kAvx2);
    return true;
  }
  return false;
}

}  // namespace ninodes
