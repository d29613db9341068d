// Unpacks GGUF weight rows into int8 codes with per-sub-block scales and mins (see gguf_linear.h).
// The bit layouts follow ggml's dequantize_row_* (and gguf_dequant.cc, which equals gguf-py bit for
// bit): scale · q - min here is exactly ggml's dequantized value, because d · sc (an f16 times a
// code of at most 8 bits) and scale · q are exact in float32.
#include <cstring>

#include "core/cpu_features.h"
#include "ops/gguf_k_scales.h"
#include "ops/gguf_linear.h"
#include "tensor/float_codecs.h"

namespace ninodes {
namespace {

using codec::f16_to_f32;

[[gnu::always_inline]] inline float f16_at(const uint8_t* p) {
  uint16_t v;
  std::memcpy(&v, p, 2);
  return f16_to_f32(v);
}

// 128 · Σ q over n codes: the VNNI kernel's offset for multiplying qx + 128.
[[gnu::always_inline]] inline int32_t comp_of(const int8_t* q, size_t n) {
  int32_t s = 0;
  for (size_t i = 0; i < n; ++i) s += q[i];
  return s * 128;
}

// One stored block of each type -> its codes q (block_elems), and per sub-block scale and min.
[[gnu::always_inline]] inline void unpack_q8_0(const uint8_t* b, int8_t* q, float* scale, float*) {
  scale[0] = f16_at(b);
  std::memcpy(q, b + 2, 32);
}

[[gnu::always_inline]] inline void unpack_q4_0(const uint8_t* b, int8_t* q, float* scale, float*) {
  scale[0] = f16_at(b);
  const uint8_t* qs = b + 2;
  for (int j = 0; j < 16; ++j) q[j] = static_cast<int8_t>((qs[j] & 0x0f) - 8);
  for (int j = 0; j < 16; ++j) q[j + 16] = static_cast<int8_t>((qs[j] >> 4) - 8);
}

[[gnu::always_inline]] inline void k_scales(const uint8_t* b, float* scale, float* min) {
  const float d = f16_at(b), dmin = f16_at(b + 2);
  for (int j = 0; j < 8; ++j) {
    uint8_t sc, m;
    ops::scale_min_k4(j, b + 4, &sc, &m);
    scale[j] = d * static_cast<float>(sc);
    min[j] = dmin * static_cast<float>(m);
  }
}

[[gnu::always_inline]] inline void unpack_q4_k(const uint8_t* b, int8_t* q, float* scale, float* min) {
  k_scales(b, scale, min);
  const uint8_t* qs = b + 16;
  for (int j = 0; j < 4; ++j) {
    for (int l = 0; l < 32; ++l) q[64 * j + l] = static_cast<int8_t>(qs[32 * j + l] & 0x0f);
    for (int l = 0; l < 32; ++l) q[64 * j + 32 + l] = static_cast<int8_t>(qs[32 * j + l] >> 4);
  }
}

[[gnu::always_inline]] inline void unpack_q5_k(const uint8_t* b, int8_t* q, float* scale, float* min) {
  k_scales(b, scale, min);
  const uint8_t* qh = b + 16;
  const uint8_t* ql = b + 48;
  for (int j = 0; j < 4; ++j) {
    const int lo = 2 * j, hi = 2 * j + 1;
    for (int l = 0; l < 32; ++l) q[64 * j + l] = static_cast<int8_t>((ql[32 * j + l] & 0x0f) | (((qh[l] >> lo) & 1) << 4));
    for (int l = 0; l < 32; ++l) q[64 * j + 32 + l] = static_cast<int8_t>((ql[32 * j + l] >> 4) | (((qh[l] >> hi) & 1) << 4));
  }
}

[[gnu::always_inline]] inline void unpack_q6_k(const uint8_t* b, int8_t* q, float* scale, float*) {
  const uint8_t* ql = b;
  const uint8_t* qh = b + 128;
  const int8_t* sc = reinterpret_cast<const int8_t*>(b + 192);
  const float d = f16_at(b + 208);
  for (int j = 0; j < 16; ++j) scale[j] = d * static_cast<float>(sc[j]);
  for (int h = 0; h < 2; ++h) {
    int8_t* y = q + 128 * h;
    const uint8_t* l0 = ql + 64 * h;
    const uint8_t* hb = qh + 32 * h;
    for (int l = 0; l < 32; ++l) {
      y[l + 0] = static_cast<int8_t>(((l0[l] & 0x0f) | (((hb[l] >> 0) & 3) << 4)) - 32);
      y[l + 32] = static_cast<int8_t>(((l0[l + 32] & 0x0f) | (((hb[l] >> 2) & 3) << 4)) - 32);
      y[l + 64] = static_cast<int8_t>(((l0[l] >> 4) | (((hb[l] >> 4) & 3) << 4)) - 32);
      y[l + 96] = static_cast<int8_t>(((l0[l + 32] >> 4) | (((hb[l] >> 6) & 3) << 4)) - 32);
    }
  }
}

template <void (*Unpack)(const uint8_t*, int8_t*, float*, float*)>
[[gnu::always_inline]] inline void unpack_rows(const GgufLinearLayout& t, const uint8_t* w, size_t row0, size_t valid, size_t k, const GgufRows& out) {
  const size_t blocks = k / t.block_elems, subs = t.block_elems / t.g, per_row = k / t.g;
  float unused[16];
  for (size_t r = 0; r < valid; ++r) {
    const uint8_t* src = w + (row0 + r) * blocks * t.block_bytes;
    for (size_t b = 0; b < blocks; ++b) {
      const size_t s0 = r * per_row + b * subs;
      Unpack(src + b * t.block_bytes, out.q + r * k + b * t.block_elems, out.scale + s0, t.mins ? out.min + s0 : unused);
    }
    // The offsets in a second pass over the row: reading codes just stored, block by block, stalled
    // on store forwarding (half the time of a q8_0 unpack).
    for (size_t s = 0; s < per_row; ++s) out.comp[r * per_row + s] = comp_of(out.q + r * k + s * t.g, t.g);
  }
}

template <void (*Unpack)(const uint8_t*, int8_t*, float*, float*)>
NINODES_TARGET_AVX2 void unpack_rows_avx2(const GgufLinearLayout& t, const uint8_t* w, size_t row0, size_t valid, size_t k, const GgufRows& out) {
  unpack_rows<Unpack>(t, w, row0, valid, k, out);
}

template <void (*Unpack)(const uint8_t*, int8_t*, float*, float*)>
void dispatch(const GgufLinearLayout& t, const uint8_t* w, size_t row0, size_t valid, size_t k, const GgufRows& out) {
  if (use_avx2()) {
    unpack_rows_avx2<Unpack>(t, w, row0, valid, k, out);
  } else {
    unpack_rows<Unpack>(t, w, row0, valid, k, out);
  }
}

}  // namespace

void gguf_unpack_rows(GgufLinearType type, const uint8_t* w, size_t row0, size_t valid, size_t rows, size_t k, const GgufRows& out) {
  const GgufLinearLayout t = gguf_linear_layout(type);
  switch (type) {
    case GgufLinearType::kQ8_0: dispatch<unpack_q8_0>(t, w, row0, valid, k, out); break;
    case GgufLinearType::kQ4_0: dispatch<unpack_q4_0>(t, w, row0, valid, k, out); break;
    case GgufLinearType::kQ4_K: dispatch<unpack_q4_k>(t, w, row0, valid, k, out); break;
    case GgufLinearType::kQ5_K: dispatch<unpack_q5_k>(t, w, row0, valid, k, out); break;
    case GgufLinearType::kQ6_K: dispatch<unpack_q6_k>(t, w, row0, valid, k, out); break;
  }
  // Padding rows: zero codes, scales and mins, so they add nothing and are never stored.
  const size_t per_row = k / t.g;
  if (rows > valid) {
    std::memset(out.q + valid * k, 0, (rows - valid) * k);
    std::memset(out.scale + valid * per_row, 0, (rows - valid) * per_row * sizeof(float));
    std::memset(out.comp + valid * per_row, 0, (rows - valid) * per_row * sizeof(int32_t));
    if (t.mins) std::memset(out.min + valid * per_row, 0, (rows - valid) * per_row * sizeof(float));
  }
}

bool gguf_linear_type(const std::string& name, GgufLinearType* type) {
  if (name == "q8_0") *type = GgufLinearType::kQ8_0;
  else if (name == "q4_0") *type = GgufLinearType::kQ4_0;
  else if (name == "q4_k") *type = GgufLinearType::kQ4_K;
  else if (name == "q5_k") *type = GgufLinearType::kQ5_K;
  else if (name == "q6_k") *type = GgufLinearType::kQ6_K;
  else return false;
  return true;
}

GgufLinearLayout gguf_linear_layout(GgufLinearType type) {
  switch (type) {
    case GgufLinearType::kQ8_0: return {32, 34, 32, 32, false};
    case GgufLinearType::kQ4_0: return {32, 18, 32, 32, false};
    case GgufLinearType::kQ4_K: return {256, 144, 32, 256, true};
    case GgufLinearType::kQ5_K: return {256, 176, 32, 256, true};
    case GgufLinearType::kQ6_K: return {256, 210, 16, 256, false};
  }
  return {32, 34, 32, 32, false};
}

}  // namespace ninodes
