#pragma once
// Run-time SIMD selection: kernels compile an AVX2/FMA variant with target attributes and pick it
// only when the CPU (and the NINODES_SIMD override) allows, so one binary runs on any x86-64.
#include <string>

namespace ninodes {

enum class SimdPath { kScalar, kAvx2 };

SimdPath simd_path();
const char* simd_path_name(SimdPath path);
// Forces a path ("scalar" or "avx2"); returns false if the CPU cannot run it.
bool set_simd_path(const std::string& name);

}  // namespace ninodes

#if defined(__x86_64__) || defined(__i386__)
#define NINODES_TARGET_AVX2 __attribute__((target("avx2,fma,f16c")))
#define NINODES_HAS_X86 1
#else
#define NINODES_TARGET_AVX2
#define NINODES_HAS_X86 0
#endif
