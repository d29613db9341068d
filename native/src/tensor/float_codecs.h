#pragma once
// Scalar float codecs with PyTorch's bit semantics (c10 Half/BFloat16/Float8 conversions): round to
// nearest even, NaN and infinity kept. The TypeScript reference backend implements the same bit
// operations, so native and reference agree to the bit; the AVX2 paths in float_convert.cc too.
#include <cstdint>
#include <cstring>

namespace ninodes {
namespace codec {

inline uint32_t bits_of(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
inline float float_of(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// f32 -> f16, round to nearest even; NaN -> sign | 0x7E00 (PyTorch's canonical half NaN).
inline uint16_t f32_to_f16(float f) {
  const uint32_t x = bits_of(f);
  const uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t abs = x & 0x7FFFFFFFu;
  if (abs > 0x7F800000u) return static_cast<uint16_t>(sign | 0x7E00u);
  if (abs >= 0x477FF000u) return static_cast<uint16_t>(sign | 0x7C00u);  // rounds to >= 65520: inf
  if (abs < 0x38800000u) {
    // Subnormal half (or zero): add 0.5 (2^-1) so the FPU rounds the low bits away, nearest even.
    const float shifted = float_of(abs) + 0.5f;
    return static_cast<uint16_t>(sign | (bits_of(shifted) - 0x3F000000u));
  }
  const uint32_t odd = (abs >> 13) & 1u;
  abs += 0xC8000FFFu + odd;  // rebias exponent (-112 << 23) and round
  return static_cast<uint16_t>(sign | (abs >> 13));
}

// f16 -> f32, exact; NaN gets the quiet bit (as F16C does).
inline float f16_to_f32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1Fu;
  const uint32_t mant = h & 0x3FFu;
  if (exp == 0x1F) return float_of(sign | 0x7F800000u | (mant != 0 ? 0x400000u | (mant << 13) : 0u));
  if (exp == 0) {
    const float v = static_cast<float>(mant) * 5.9604644775390625e-8f;  // mant * 2^-24, exact
    return float_of(sign | bits_of(v));
  }
  return float_of(sign | ((exp + 112) << 23) | (mant << 13));
}

// f32 -> bf16, round to nearest even; NaN -> 0x7FC0 (PyTorch's canonical bfloat16 NaN).
inline uint16_t f32_to_bf16(float f) {
  const uint32_t x = bits_of(f);
  if ((x & 0x7FFFFFFFu) > 0x7F800000u) return 0x7FC0u;
  return static_cast<uint16_t>((x + 0x7FFFu + ((x >> 16) & 1u)) >> 16);
}

inline float bf16_to_f32(uint16_t b) { return float_of(static_cast<uint32_t>(b) << 16); }

// PyTorch (2.13, the fixtures' producer) float -> float8_e4m3fn: round to nearest even, anything
// beyond 448 (infinity included) saturates to ±448 (0x7E), NaN -> 0x7F with the sign. Older c10
// code turned |x| >= 480 into NaN; the fixture bytes say saturate.
inline uint8_t f32_to_e4m3fn(float f) {
  uint32_t x = bits_of(f);
  const uint32_t sign = x & 0x80000000u;
  x ^= sign;
  uint8_t r;
  if (x > 0x7F800000u) {
    r = 0x7F;
  } else if (x > 0x43E00000u) {  // > 448
    r = 0x7E;
  } else if (x < (121u << 23)) {
    const float shifted = float_of(x) + float_of(141u << 23);
    r = static_cast<uint8_t>(bits_of(shifted) - (141u << 23));
  } else {
    const uint32_t odd = (x >> 20) & 1u;
    x += (static_cast<uint32_t>(7 - 127) << 23) + 0x7FFFFu + odd;
    r = static_cast<uint8_t>(x >> 20);
  }
  return static_cast<uint8_t>(r | (sign >> 24));
}

// PyTorch fp8e5m2_from_fp32_value: >= 65536 -> inf, NaN -> 0x7F, with the sign.
inline uint8_t f32_to_e5m2(float f) {
  uint32_t x = bits_of(f);
  const uint32_t sign = x & 0x80000000u;
  x ^= sign;
  uint8_t r;
  if (x >= (143u << 23)) {
    r = x > 0x7F800000u ? 0x7F : 0x7C;
  } else if (x < (113u << 23)) {
    const float shifted = float_of(x) + float_of(134u << 23);
    r = static_cast<uint8_t>(bits_of(shifted) - (134u << 23));
  } else {
    const uint32_t odd = (x >> 21) & 1u;
    x += (static_cast<uint32_t>(15 - 127) << 23) + 0xFFFFFu + odd;
    r = static_cast<uint8_t>(x >> 21);
  }
  return static_cast<uint8_t>(r | (sign >> 24));
}

inline float e4m3fn_to_f32(uint8_t b) {
  const uint32_t sign = static_cast<uint32_t>(b & 0x80u) << 24;
  const uint32_t exp = (b >> 3) & 0xFu;
  const uint32_t mant = b & 7u;
  if (exp == 0xF && mant == 7) return float_of(sign | 0x7FC00000u);
  if (exp == 0) return float_of(sign | bits_of(static_cast<float>(mant) * 0.001953125f));  // mant * 2^-9
  return float_of(sign | ((exp + 120) << 23) | (mant << 20));
}

inline float e5m2_to_f32(uint8_t b) { return f16_to_f32(static_cast<uint16_t>(b) << 8); }

inline uint32_t fmix32(uint32_t x) {
  x ^= x >> 16;
  x *= 0x85EBCA6Bu;
  x ^= x >> 13;
  x *= 0xC2B2AE35u;
  x ^= x >> 16;
  return x;
}

// Per-element random bits for stochastic rounding: a pure function of (seed, flat index).
inline uint32_t element_hash(uint32_t seed, uint64_t index) {
  const uint32_t lo = static_cast<uint32_t>(index);
  const uint32_t hi = static_cast<uint32_t>(index >> 32);
  return fmix32((lo * 0x9E3779B9u) ^ fmix32(seed + hi));
}

}  // namespace codec
}  // namespace ninodes
