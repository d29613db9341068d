#pragma once
// Run-time SIMD selection: kernels compile an AVX2/FMA variant with target attributes and pick it
// only when the CPU (and the NINODES_SIMD override) allows, so one binary runs on any x86-64.
#include <string>

namespace ninodes {

// Ordered: each path can also run everything below it. kAvx512 (F, BW, DQ, VL) only adds kernels
// where 16 lanes pay (the in-register Hadamard, quantization); elsewhere it runs the AVX2 code.
enum class SimdPath { kScalar, kAvx2, kAvx512 };

SimdPath simd_path();
const char* simd_path_name(SimdPath path);
// Forces a path ("scalar", "avx2" or "avx512"); returns false if the CPU cannot run it.
bool set_simd_path(const std::string& name);

// The CPU and OS run AVX-512 F/BW/DQ/VL, whatever path is selected (the AMX probe builds on it).
bool cpu_has_avx512();

// AVX512_BF16 (vdpbf16ps) on an AVX-512 path: where oneDNN runs bf16 matmuls natively instead of
// emulating them. Follows the selected path, so NINODES_SIMD=avx2 turns it off.
bool cpu_has_bf16_units();

inline bool use_avx2() { return simd_path() >= SimdPath::kAvx2; }
inline bool use_avx512() { return simd_path() == SimdPath::kAvx512; }

}  // namespace ninodes

#if defined(__x86_64__) || defined(__i386__)
#define NINODES_TARGET_AVX2 __attribute__((target("avx2,fma,f16c")))
#define NINODES_TARGET_AVX512 __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx2,fma,f16c")))
#define NINODES_HAS_X86 1
#else
#define NINODES_TARGET_AVX2
#define NINODES_TARGET_AVX512
#define NINODES_HAS_X86 0
#endif
