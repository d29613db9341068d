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

}  // namespace

// __builtin_cpu_supports also checks that the OS saves the ZMM and mask state (XCR0).
bool cpu_has_avx512() {
#if NINODES_HAS_X86
  __builtin_cpu_init();
  return cpu_has_avx2() && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
#else
  return false;
#endif
}

namespace {

bool can_run(SimdPath path) {
  switch (path) {
    case SimdPath::kScalar: return true;
    case SimdPath::kAvx2: return cpu_has_avx2();
    case SimdPath::kAvx512: return cpu_has_avx512();
  }
  return false;
}

SimdPath best_path() { return cpu_has_avx512() ? SimdPath::kAvx512 : (cpu_has_avx2() ? SimdPath::kAvx2 : SimdPath::kScalar); }

// NINODES_SIMD caps the path (scalar, avx2); the best the CPU runs otherwise.
SimdPath initial_path() {
  const char* forced = std::getenv("NINODES_SIMD");
  if (forced != nullptr && std::strcmp(forced, "scalar") == 0) return SimdPath::kScalar;
  if (forced != nullptr && std::strcmp(forced, "avx2") == 0 && cpu_has_avx2()) return SimdPath::kAvx2;
  return best_path();
}

std::atomic<SimdPath>& current() {
  static std::atomic<SimdPath> path{initial_path()};
  return path;
}

}  // namespace

bool cpu_has_bf16_units() {
#if NINODES_HAS_X86
  return simd_path() == SimdPath::kAvx512 && __builtin_cpu_supports("avx512bf16");
#else
  return false;
#endif
}

SimdPath simd_path() { return current().load(std::memory_order_relaxed); }

const char* simd_path_name(SimdPath path) {
  switch (path) {
    case SimdPath::kAvx512: return "avx512";
    case SimdPath::kAvx2: return "avx2";
    case SimdPath::kScalar: return "scalar";
  }
  return "scalar";
}

bool set_simd_path(const std::string& name) {
  for (SimdPath path : {SimdPath::kScalar, SimdPath::kAvx2, SimdPath::kAvx512}) {
    if (name != simd_path_name(path)) continue;
    if (!can_run(path)) return false;
    current().store(path);
    return true;
  }
  return false;
}

}  // namespace ninodes
