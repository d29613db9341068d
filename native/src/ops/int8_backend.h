#pragma once
// Which exact int8 GEMM runs. Integer sums are exact, so every backend gives the same int32
// accumulators and the same dequantized bits; they differ in speed and in what the CPU needs:
//   amx     hand-written AMX tile kernel, weights read in place, dequant fused (AMX-INT8, K % 64 == 0)
//   onednn  oneDNN's s8s8 matmul (exact only where oneDNN uses VNNI or AMX: plain AVX2 saturates int16)
//   native  hand-written AVX2 int16-madd kernel, or scalar (any CPU)
// The default is the first that the CPU can run; NINODES_INT8_BACKEND names one for the process,
// and int8Matmul / int8Linear take one per call.
#include <string>
#include <vector>

namespace ninodes {

enum class Int8Backend { kAmx, kOnednn, kNative };

const char* int8_backend_name(Int8Backend backend);
std::vector<Int8Backend> available_int8_backends();
// "auto" resolves to the default; an unknown name fails INVALID_ARGUMENT and one this machine
// cannot run fails BACKEND_UNAVAILABLE naming the ones it can.
Int8Backend resolve_int8_backend(const std::string& name);

}  // namespace ninodes
