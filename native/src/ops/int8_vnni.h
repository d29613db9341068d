#pragma once
// Exact int8 GEMM on AVX512-VNNI without AMX (Zen 4, Ice Lake, Cascade Lake), in the spirit of the
// AMX kernel: Cᵀ = W · qxᵀ, so the weight [N, K] is read in place (each 4-byte group of a weight
// row is VPDPBUSD's broadcast operand, the signed one) and only the activations are packed, into
// [K/4][16 rows][4 bytes] blocks as unsigned bytes qx + 128 (VPDPBUSD multiplies u8 by s8). The
// offset is removed exactly: sum (qx + 128)·w - 128·sum w, in wrapping int32 arithmetic whose
// result is the true sum whenever that fits (K <= 131072). The epilogue writes raw accumulators
// and/or y = float(acc) * (x_scale * w_scale) + bias while the block is in registers, so the M x N
// int32 round trip through memory disappears. Integer sums are exact: results equal every other
// backend's, bit for bit, for any thread count.
#include <cstddef>
#include <cstdint>

#include "ops/int8_amx.h"
#include "ops/int8_quantize.h"

namespace ninodes {

// The CPU and OS run AVX-512 F/BW/DQ/VL and AVX512-VNNI, and the AVX-512 SIMD path is selected
// (NINODES_SIMD=avx2 or scalar turns this kernel off).
bool vnni_int8_supported();

// K must be a multiple of this (one broadcast is 4 int8 values of a weight row).
constexpr size_t kVnniKStep = 4;

// "auto" sends GEMMs with fewer rows to oneDNN (most of a 16-row block would be padding).
constexpr size_t kVnniMinRows = 16;

// Bytes of the packed activation buffer for m rows of k (rows padded to a multiple of 16).
size_t vnni_packed_bytes(size_t m, size_t k);

// qx [m, k] row-major -> 16-row blocks of [k/4][16 rows][4 bytes] holding qx + 128.
void vnni_pack_activations(const int8_t* qx, size_t m, size_t k, int8_t* packed, ParallelFor pfor);

// quantize_rows_int8 (same bits, rotation fused) written straight into the packed layout, 16 rows
// at a time while they are in cache.
void vnni_quantize_pack(const float* x, size_t m, size_t k, size_t group, bool regular, const float* external_scale,
                        int8_t* packed, float* scale, ParallelFor pfor);

// packed x w [n, k] -> epilogue (see Int8Epilogue). Requires vnni_int8_supported() and
// k % kVnniKStep == 0; threads take output columns in groups of whole 8-column blocks, one pass
// of rows at a time.
void vnni_int8_gemm(const int8_t* packed, const int8_t* w, size_t m, size_t k, size_t n, const Int8Epilogue& out, ParallelFor pfor);

}  // namespace ninodes
