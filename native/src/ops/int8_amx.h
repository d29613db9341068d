#pragma once
// Exact int8 GEMM on AMX tiles (Sapphire Rapids and later), computed as Cᵀ = W · qxᵀ: the weight
// [N, K] is then AMX's row-major A operand and is read in place, with no per-call reorder (oneDNN
// reorders plain weights on every call). The activations, small and produced by int8Linear's own
// quantize pass anyway, are packed into AMX's VNNI B layout instead. The epilogue writes raw int32
// accumulators and/or dequantizes y = float(acc) * (x_scale * w_scale) + bias while the tile is
// still in L1, so the M x N int32 round trip through memory disappears. Integer sums are exact:
// results equal every other backend's, bit for bit, for any thread count.
#include <cstddef>
#include <cstdint>

#include "ops/int8_quantize.h"

namespace ninodes {

// The CPU has AMX-INT8 and AVX-512BW, the OS enables tile state, and Linux granted this process the
// tile permission (arch_prctl ARCH_REQ_XCOMP_PERM). Checked once.
bool amx_int8_supported();

// K must be a multiple of this (one tile row is 64 int8 values).
constexpr size_t kAmxKStep = 64;

// Bytes of the packed activation buffer for m rows of k (rows padded to a multiple of 32).
size_t amx_packed_bytes(size_t m, size_t k);

// qx [m, k] row-major -> 16-row blocks, each [k/4][16 rows][4 bytes]; padding rows are zero.
void amx_pack_activations(const int8_t* qx, size_t m, size_t k, int8_t* packed, ParallelFor pfor);

// quantize_rows_int8 (same bits) written straight into the packed layout, 16 rows at a time while
// they are in cache: int8Linear's activations never exist row-major.
void amx_quantize_pack(const float* x, size_t m, size_t k, size_t group, bool regular, const float* external_scale,
                       int8_t* packed, float* scale, ParallelFor pfor);

// What the epilogue writes; either pointer may be null (not both). With y: x_scale [m], w_scale [n]
// and optional bias [n].
struct Int8Epilogue {
  int32_t* acc = nullptr;  // [m, n] raw accumulators
  float* y = nullptr;      // [m, n] dequantized output
  const float* x_scale = nullptr;
  const float* w_scale = nullptr;
  const float* bias = nullptr;
};

// packed (from amx_pack_activations or amx_quantize_pack) x w [n, k] -> epilogue. Requires amx_int8_supported() and
// k % kAmxKStep == 0; output columns are split across threads in whole 32-column blocks.
void amx_int8_gemm(const int8_t* packed, const int8_t* w, size_t m, size_t k, size_t n, const Int8Epilogue& out, ParallelFor pfor);

}  // namespace ninodes
