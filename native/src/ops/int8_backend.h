#pragma once
// Which exact int8 GEMM runs. Integer sums are exact, so every backend gives the same int32
// accumulators and the same dequantized bits; they differ in speed and in what the CPU needs:
//   amx     hand-written AMX tile kernel, weights read in place, dequant fused (AMX-INT8, K % 64 == 0)
//   vnni    hand-written AVX512-VNNI kernel, weights read in place, dequant fused (K % 4 == 0)
//   onednn  oneDNN's s8s8 matmul (exact only where oneDNN uses VNNI or AMX: plain AVX2 saturates int16)
//   native  hand-written AVX2 int16-madd kernel, or scalar (any CPU)
// The default is the first that the CPU can run; NINODES_INT8_BACKEND names one for the process,
// and int8Matmul / int8Linear take one per call.
#include <cstddef>
#include <string>
#include <vector>

namespace ninodes {

enum class Int8Backend { kAmx, kVnni, kOnednn, kNative };

const char* int8_backend_name(Int8Backend backend);
std::vector<Int8Backend> available_int8_backends();
// The backend for an [m, k] x [k, n] GEMM: "auto" takes the default, or the next one where the
// shape rules the AMX kernel (k % 64 != 0) or the VNNI kernel (k % 4 != 0, or m < 16 where oneDNN
// runs) out. An unknown name fails INVALID_ARGUMENT; one this
// machine (or this k) cannot run fails BACKEND_UNAVAILABLE naming why.
Int8Backend resolve_int8_backend(const std::string& name, size_t m, size_t k);

}  // namespace ninodes
