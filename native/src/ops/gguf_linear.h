#pragma once
// GGUF linears computed on the stored blocks (y = x · Wᵀ + bias, W [N, K] in ggml blocks), the way
// ggml's CPU backend does it: activations quantized to int8 per block (ggml's Q8_0 blocks of 32 for
// Q8_0 / Q4_0 weights, Q8_K blocks of 256 for the k-quants), integer dot products per weight
// sub-block, and the block scales applied in float afterwards.
//
// Every supported block type is the same thing once unpacked: int8 codes per sub-block of G values
// with a float scale (and for Q4_K / Q5_K a float min), w = scale · q - min. A thread unpacks a
// group of weight rows into that form once (GgufRows, a bounded per-thread scratch), then runs
// every activation row against it. Per output, in this order and in float32 with single roundings
// (fma), both kernels compute:
//   y = 0; for each activation block a: f = 0
//            for each weight sub-block g in a: f = fma(float(Σ qx·q), scale_g, f)
//                                              y = fma(-min_g, Σ_{i∈g} x_i, y)   (mins only)
//          y = fma(f, dx_a, y)
//   y += bias
// The integer sums are exact, so the VNNI kernel, the portable one (AVX2 or scalar) and any thread
// count give the same bits. The mins multiply the f32 sum of the unquantized inputs, so they add no
// activation-quantization error.
#include <cstddef>
#include <cstdint>
#include <string>

#include "ops/int8_quantize.h"

namespace ninodes {

enum class GgufLinearType { kQ8_0, kQ4_0, kQ4_K, kQ5_K, kQ6_K };

struct GgufLinearLayout {
  size_t block_elems;  // values per stored block
  size_t block_bytes;
  size_t g;            // values per weight sub-block (one scale)
  size_t a;            // values per activation block (one activation scale)
  bool mins;           // w = scale · q - min
};

// The layout of a ggml type name ("q4_k"); false for a type without an integer kernel.
bool gguf_linear_type(const std::string& name, GgufLinearType* type);
GgufLinearLayout gguf_linear_layout(GgufLinearType type);

// Activation sums and scales are kept per 16-row block, lane r = row 16·b + r, so the VNNI kernel
// loads 16 rows' values with one load: [m/16][k/a][16] scales and [m/16][k/32][16] input sums.
constexpr size_t kGgufRowBlock = 16;
inline size_t gguf_row_blocks(size_t m) { return (m + kGgufRowBlock - 1) / kGgufRowBlock; }

struct GgufActivations {
  int8_t* q = nullptr;      // [m, k] row-major codes, |q| <= 127
  float* scale = nullptr;   // [m/16][k/a][16]: x ≈ scale · q over each block (0 for an all-zero block)
  float* sum = nullptr;     // [m/16][k/32][16]: f32 sum of x over each 32 values (mins only, else null)
};

// Quantizes x [m, k] per activation block of `layout`: scale = absmax / 127, q = round half to even
// of x · (127 / absmax). A block holding NaN or ±inf gets a NaN scale (its outputs are NaN).
void gguf_quantize_activations(const float* x, size_t m, size_t k, const GgufLinearLayout& layout, const GgufActivations& out,
                               ParallelFor pfor);

// Weight rows unpacked: codes, and per sub-block the scale, the min, and 128 · Σ q (the VNNI
// kernel multiplies qx + 128 as unsigned bytes and removes this exactly).
struct GgufRows {
  int8_t* q = nullptr;      // [rows, k]
  float* scale = nullptr;   // [rows, k/g]
  float* min = nullptr;     // [rows, k/g] (mins only)
  int32_t* comp = nullptr;  // [rows, k/g]
};

// Unpacks weight rows [row0, row0 + valid) of w (row stride k/block_elems blocks) into rows
// [0, valid) of out; rows [valid, rows) become zero rows (their outputs are not stored).
void gguf_unpack_rows(GgufLinearType type, const uint8_t* w, size_t row0, size_t valid, size_t rows, size_t k, const GgufRows& out);

// What the kernels write: y [m, n] (row stride n), columns [n0, n0 + nv) from unpacked rows [0, nv).
struct GgufOutput {
  float* y = nullptr;
  const float* bias = nullptr;  // [n] or null
  size_t n = 0;
};

// Rows per unpacked group: a thread's share of the weight is unpacked this many rows at a time.
constexpr size_t kGgufGroupRows = 16;

// VNNI: packed activations (vnni_pack_activations of the codes) x unpacked rows [0, kGgufGroupRows).
bool gguf_vnni_supported();
void gguf_vnni_group(const int8_t* packed, const GgufActivations& act, size_t m, size_t k, const GgufLinearLayout& layout,
                     const GgufRows& rows, size_t n0, size_t nv, const GgufOutput& out);

// Portable: the same sums on the row-major codes, compiled for AVX2 (`avx2`, where use_avx2()) and
// for baseline x86-64.
void gguf_portable_group(const GgufActivations& act, size_t m, size_t k, const GgufLinearLayout& layout, const GgufRows& rows,
                         size_t n0, size_t nv, const GgufOutput& out, bool avx2);

}  // namespace ninodes
