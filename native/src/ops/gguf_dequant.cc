// GGUF block decode (ggml block layouts) to f32 or bf16.
//
// Every formula below follows ggml's dequantize_row_* (ggml-quants.c) operation by operation, in
// float32, so results equal gguf-py / llama.cpp bit for bit. No code path here may use FMA: the
// baseline build has none, and the AVX2 build is compiled for "avx2,f16c" without "fma", so the
// compiler can never contract `d * q - m` into a fused multiply-add (which would change the last
// bit). Work is split over blocks with the deterministic pool.
#include <napi.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "core/cpu_features.h"
#if NINODES_HAS_X86
#include <immintrin.h>
#endif

#include "core/async.h"
#include "core/cpu_features.h"
#include "core/errors.h"
#include "core/registry.h"
#include "core/thread_pool.h"
#include "ops/gguf_k_scales.h"
#include "tensor/float_codecs.h"

namespace {

using ninodes::fail;

using ninodes::codec::bf16_to_f32;
using ninodes::codec::f16_to_f32;

// ggml's GGML_FP32_TO_BF16: NaN keeps its payload with the quiet bit forced (PyTorch's cast, in
// float_codecs.h, canonicalizes NaN instead).
inline uint16_t f32_to_bf16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((bits >> 16) | 0x40u);  // quiet NaN
  const uint32_t rounding = 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>((bits + rounding) >> 16);
}

inline uint16_t rd16(const uint8_t* p) {
  uint16_t v;
  std::memcpy(&v, p, 2);
  return v;
}

const int8_t kIq4nl[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};

// ---- block decoders: one block in, blockElements floats out --------------------------------------

[[gnu::always_inline]] inline void dq_q4_0(const uint8_t* b, float* y) {
  const float d = f16_to_f32(rd16(b));
  const uint8_t* qs = b + 2;
  // Low and high nibbles in separate loops: contiguous stores the compiler vectorizes.
  for (int j = 0; j < 16; ++j) y[j] = static_cast<float>((qs[j] & 0x0f) - 8) * d;
  for (int j = 0; j < 16; ++j) y[j + 16] = static_cast<float>((qs[j] >> 4) - 8) * d;
}

[[gnu::always_inline]] inline void dq_q4_1(const uint8_t* b, float* y) {
  const float d = f16_to_f32(rd16(b));
  const float m = f16_to_f32(rd16(b + 2));
  const uint8_t* qs = b + 4;
  for (int j = 0; j < 16; ++j) y[j] = static_cast<float>(qs[j] & 0x0f) * d + m;
  for (int j = 0; j < 16; ++j) y[j + 16] = static_cast<float>(qs[j] >> 4) * d + m;
}

[[gnu::always_inline]] inline void dq_q5_0(const uint8_t* b, float* y) {
  const float d = f16_to_f32(rd16(b));
  uint32_t qh;
  std::memcpy(&qh, b + 2, 4);
  const uint8_t* qs = b + 6;
  // qh is unsigned: the 5-bit value goes through int before subtracting 16.
  for (int j = 0; j < 16; ++j) y[j] = static_cast<float>(static_cast<int>((qs[j] & 0x0f) | (((qh >> j) << 4) & 0x10)) - 16) * d;
  for (int j = 0; j < 16; ++j) y[j + 16] = static_cast<float>(static_cast<int>((qs[j] >> 4) | ((qh >> (j + 12)) & 0x10)) - 16) * d;
}

[[gnu::always_inline]] inline void dq_q5_1(const uint8_t* b, float* y) {
  const float d = f16_to_f32(rd16(b));
  const float m = f16_to_f32(rd16(b + 2));
  uint32_t qh;
  std::memcpy(&qh, b + 4, 4);
  const uint8_t* qs = b + 8;
  for (int j = 0; j < 16; ++j) y[j] = static_cast<float>((qs[j] & 0x0f) | (((qh >> j) << 4) & 0x10)) * d + m;
  for (int j = 0; j < 16; ++j) y[j + 16] = static_cast<float>((qs[j] >> 4) | ((qh >> (j + 12)) & 0x10)) * d + m;
}

[[gnu::always_inline]] inline void dq_q8_0(const uint8_t* b, float* y) {
  const float d = f16_to_f32(rd16(b));
  const int8_t* qs = reinterpret_cast<const int8_t*>(b + 2);
  for (int j = 0; j < 32; ++j) y[j] = static_cast<float>(qs[j]) * d;
}

[[gnu::always_inline]] inline void dq_q2_k(const uint8_t* b, float* y) {
  const uint8_t* scales = b;
  const uint8_t* q = b + 16;
  const float d = f16_to_f32(rd16(b + 80));
  const float dmin = f16_to_f32(rd16(b + 82));
  int is = 0;
  for (int n = 0; n < 256; n += 128) {
    int shift = 0;
    for (int j = 0; j < 4; ++j) {
      for (int half = 0; half < 32; half += 16) {
        const uint8_t sc = scales[is++];
        const float dl = d * static_cast<float>(sc & 0xf);
        const float ml = dmin * static_cast<float>(sc >> 4);
        for (int l = 0; l < 16; ++l) y[l] = dl * static_cast<float>((q[l + half] >> shift) & 3) - ml;
        y += 16;
      }
      shift += 2;
    }
    q += 32;
  }
}

// The 16 6-bit sub-block scales of a q3_K block (12 packed bytes at offset 96: low 4 bits in bytes
// 0-7, high 2 bits in bytes 8-11), unpacked as ggml does; still biased by 32. Shared by the scalar
// and the AVX2 decoders, so both read the same scales.
inline void q3_k_scales(const uint8_t* b, int8_t scales[16]) {
  const uint32_t kmask1 = 0x03030303u;
  const uint32_t kmask2 = 0x0f0f0f0fu;
  uint32_t aux[4];
  std::memcpy(aux, b + 96, 12);
  const uint32_t tmp = aux[2];
  aux[2] = ((aux[0] >> 4) & kmask2) | (((tmp >> 4) & kmask1) << 4);
  aux[3] = ((aux[1] >> 4) & kmask2) | (((tmp >> 6) & kmask1) << 4);
  aux[0] = (aux[0] & kmask2) | (((tmp >> 0) & kmask1) << 4);
  aux[1] = (aux[1] & kmask2) | (((tmp >> 2) & kmask1) << 4);
  std::memcpy(scales, aux, 16);
}

[[gnu::always_inline]] inline void dq_q3_k(const uint8_t* b, float* y) {
  const uint8_t* hm = b;
  const uint8_t* q = b + 32;
  const float d_all = f16_to_f32(rd16(b + 108));
  int8_t scales[16];
  q3_k_scales(b, scales);
  int is = 0;
  uint8_t m = 1;
  for (int n = 0; n < 256; n += 128) {
    int shift = 0;
    for (int j = 0; j < 4; ++j) {
      for (int half = 0; half < 32; half += 16) {
        const float dl = d_all * static_cast<float>(scales[is++] - 32);
        for (int l = 0; l < 16; ++l) {
          const int v = ((q[l + half] >> shift) & 3) - ((hm[l + half] & m) ? 0 : 4);
          y[l] = dl * static_cast<float>(v);
        }
        y += 16;
      }
      shift += 2;
      m = static_cast<uint8_t>(m << 1);
    }
    q += 32;
  }
}

// Sub-block j's scale and min of a q4_K / q5_K block, times the block's d and dmin (ggml's order).
inline void scaled_min_k4(int j, const uint8_t* q, float d, float dmin, float* dl, float* ml) {
  uint8_t sc, m;
  ninodes::ops::scale_min_k4(j, q, &sc, &m);
  *dl = d * static_cast<float>(sc);
  *ml = dmin * static_cast<float>(m);
}

[[gnu::always_inline]] inline void dq_q4_k(const uint8_t* b, float* y) {
  const float d = f16_to_f32(rd16(b));
  const float dmin = f16_to_f32(rd16(b + 2));
  const uint8_t* scales = b + 4;
  const uint8_t* q = b + 16;
  int is = 0;
  for (int j = 0; j < 256; j += 64) {
    float d1, m1, d2, m2;
    scaled_min_k4(is + 0, scales, d, dmin, &d1, &m1);
    scaled_min_k4(is + 1, scales, d, dmin, &d2, &m2);
    for (int l = 0; l < 32; ++l) *y++ = d1 * static_cast<float>(q[l] & 0xf) - m1;
    for (int l = 0; l < 32; ++l) *y++ = d2 * static_cast<float>(q[l] >> 4) - m2;
    q += 32;
    is += 2;
  }
}

[[gnu::always_inline]] inline void dq_q5_k(const uint8_t* b, float* y) {
  const float d = f16_to_f32(rd16(b));
  const float dmin = f16_to_f32(rd16(b + 2));
  const uint8_t* scales = b + 4;
  const uint8_t* qh = b + 16;
  const uint8_t* ql = b + 48;
  int is = 0;
  uint8_t u1 = 1, u2 = 2;
  for (int j = 0; j < 256; j += 64) {
    float d1, m1, d2, m2;
    scaled_min_k4(is + 0, scales, d, dmin, &d1, &m1);
    scaled_min_k4(is + 1, scales, d, dmin, &d2, &m2);
    for (int l = 0; l < 32; ++l) *y++ = d1 * static_cast<float>((ql[l] & 0xf) + ((qh[l] & u1) ? 16 : 0)) - m1;
    for (int l = 0; l < 32; ++l) *y++ = d2 * static_cast<float>((ql[l] >> 4) + ((qh[l] & u2) ? 16 : 0)) - m2;
    ql += 32;
    is += 2;
    u1 = static_cast<uint8_t>(u1 << 2);
    u2 = static_cast<uint8_t>(u2 << 2);
  }
}

[[gnu::always_inline]] inline void dq_q6_k(const uint8_t* b, float* y) {
  const uint8_t* ql = b;
  const uint8_t* qh = b + 128;
  const int8_t* sc = reinterpret_cast<const int8_t*>(b + 192);
  const float d = f16_to_f32(rd16(b + 208));
  for (int n = 0; n < 256; n += 128) {
    // ggml's `d * sc[is] * q` is (d * sc[is]) * q; hoisting d * sc[is] out of the l loop (is is
    // constant over each run of 16) keeps the exact operations and lets the loops vectorize.
    for (int is = 0; is < 2; ++is) {
      const float s1 = d * static_cast<float>(sc[is + 0]);
      const float s2 = d * static_cast<float>(sc[is + 2]);
      const float s3 = d * static_cast<float>(sc[is + 4]);
      const float s4 = d * static_cast<float>(sc[is + 6]);
      for (int l = 16 * is; l < 16 * is + 16; ++l) {
        y[l + 0] = s1 * static_cast<float>(((ql[l + 0] & 0xf) | (((qh[l] >> 0) & 3) << 4)) - 32);
        y[l + 32] = s2 * static_cast<float>(((ql[l + 32] & 0xf) | (((qh[l] >> 2) & 3) << 4)) - 32);
        y[l + 64] = s3 * static_cast<float>(((ql[l + 0] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32);
        y[l + 96] = s4 * static_cast<float>(((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32);
      }
    }
    y += 128;
    ql += 64;
    qh += 32;
    sc += 8;
  }
}

[[gnu::always_inline]] inline void dq_iq4_nl(const uint8_t* b, float* y) {
  const float d = f16_to_f32(rd16(b));
  const uint8_t* qs = b + 2;
  for (int j = 0; j < 16; ++j) y[j] = d * static_cast<float>(kIq4nl[qs[j] & 0xf]);
  for (int j = 0; j < 16; ++j) y[j + 16] = d * static_cast<float>(kIq4nl[qs[j] >> 4]);
}

[[gnu::always_inline]] inline void dq_iq4_xs(const uint8_t* b, float* y) {
  const float d = f16_to_f32(rd16(b));
  const uint16_t scales_h = rd16(b + 2);
  const uint8_t* scales_l = b + 4;
  const uint8_t* qs = b + 8;
  for (int ib = 0; ib < 8; ++ib) {
    const int ls = ((scales_l[ib / 2] >> 4 * (ib % 2)) & 0xf) | (((scales_h >> 2 * ib) & 3) << 4);
    const float dl = d * static_cast<float>(ls - 32);
    for (int j = 0; j < 16; ++j) y[j + 0] = dl * static_cast<float>(kIq4nl[qs[j] & 0xf]);
    for (int j = 0; j < 16; ++j) y[j + 16] = dl * static_cast<float>(kIq4nl[qs[j] >> 4]);
    y += 32;
    qs += 16;
  }
}

enum class Kind { kF32, kF16, kBF16, kQ4_0, kQ4_1, kQ5_0, kQ5_1, kQ8_0, kQ2_K, kQ3_K, kQ4_K, kQ5_K, kQ6_K, kIQ4_NL, kIQ4_XS };

struct BlockType {
  const char* name;
  size_t elements;
  size_t bytes;
  Kind kind;
};

const BlockType kTypes[] = {
    {"f32", 1, 4, Kind::kF32},          {"f16", 1, 2, Kind::kF16},          {"bf16", 1, 2, Kind::kBF16},
    {"q4_0", 32, 18, Kind::kQ4_0},      {"q4_1", 32, 20, Kind::kQ4_1},      {"q5_0", 32, 22, Kind::kQ5_0},
    {"q5_1", 32, 24, Kind::kQ5_1},      {"q8_0", 32, 34, Kind::kQ8_0},      {"q2_k", 256, 84, Kind::kQ2_K},
    {"q3_k", 256, 110, Kind::kQ3_K},    {"q4_k", 256, 144, Kind::kQ4_K},    {"q5_k", 256, 176, Kind::kQ5_K},
    {"q6_k", 256, 210, Kind::kQ6_K},    {"iq4_nl", 32, 18, Kind::kIQ4_NL},  {"iq4_xs", 256, 136, Kind::kIQ4_XS},
};

const BlockType& find_type(const std::string& name) {
  for (const BlockType& t : kTypes) {
    if (name == t.name) return t;
  }
  fail("UNKNOWN_DTYPE", "dequantize: unsupported source dtype '" + name + "'");
}

// Decodes blocks [begin, end) of one kind into y (f32). The switch sits outside the block loop so
// each decoder inlines into its own loop and vectorizes for the target this body is compiled for.
template <Kind K>
[[gnu::always_inline]] inline void decode_blocks(const uint8_t* src, float* y, size_t begin, size_t end, size_t bytes, size_t elems) {
  for (size_t i = begin; i < end; ++i) {
    const uint8_t* b = src + i * bytes;
    float* o = y + i * elems;
    if constexpr (K == Kind::kF16) *o = f16_to_f32(rd16(b));
    if constexpr (K == Kind::kBF16) *o = bf16_to_f32(rd16(b));
    if constexpr (K == Kind::kQ4_0) dq_q4_0(b, o);
    if constexpr (K == Kind::kQ4_1) dq_q4_1(b, o);
    if constexpr (K == Kind::kQ5_0) dq_q5_0(b, o);
    if constexpr (K == Kind::kQ5_1) dq_q5_1(b, o);
    if constexpr (K == Kind::kQ8_0) dq_q8_0(b, o);
    if constexpr (K == Kind::kQ2_K) dq_q2_k(b, o);
    if constexpr (K == Kind::kQ3_K) dq_q3_k(b, o);
    if constexpr (K == Kind::kQ4_K) dq_q4_k(b, o);
    if constexpr (K == Kind::kQ5_K) dq_q5_k(b, o);
    if constexpr (K == Kind::kQ6_K) dq_q6_k(b, o);
    if constexpr (K == Kind::kIQ4_NL) dq_iq4_nl(b, o);
    if constexpr (K == Kind::kIQ4_XS) dq_iq4_xs(b, o);
  }
}

[[gnu::always_inline]] inline void decode_range(Kind kind, const uint8_t* src, float* y, size_t begin, size_t end, size_t bytes,
                                                 size_t elems) {
  switch (kind) {
    case Kind::kF32: std::memcpy(y + begin, src + begin * 4, (end - begin) * 4); break;
    case Kind::kF16: decode_blocks<Kind::kF16>(src, y, begin, end, bytes, elems); break;
    case Kind::kBF16: decode_blocks<Kind::kBF16>(src, y, begin, end, bytes, elems); break;
    case Kind::kQ4_0: decode_blocks<Kind::kQ4_0>(src, y, begin, end, bytes, elems); break;
    case Kind::kQ4_1: decode_blocks<Kind::kQ4_1>(src, y, begin, end, bytes, elems); break;
    case Kind::kQ5_0: decode_blocks<Kind::kQ5_0>(src, y, begin, end, bytes, elems); break;
    case Kind::kQ5_1: decode_blocks<Kind::kQ5_1>(src, y, begin, end, bytes, elems); break;
    case Kind::kQ8_0: decode_blocks<Kind::kQ8_0>(src, y, begin, end, bytes, elems); break;
    case Kind::kQ2_K: decode_blocks<Kind::kQ2_K>(src, y, begin, end, bytes, elems); break;
    case Kind::kQ3_K: decode_blocks<Kind::kQ3_K>(src, y, begin, end, bytes, elems); break;
    case Kind::kQ4_K: decode_blocks<Kind::kQ4_K>(src, y, begin, end, bytes, elems); break;
    case Kind::kQ5_K: decode_blocks<Kind::kQ5_K>(src, y, begin, end, bytes, elems); break;
    case Kind::kQ6_K: decode_blocks<Kind::kQ6_K>(src, y, begin, end, bytes, elems); break;
    case Kind::kIQ4_NL: decode_blocks<Kind::kIQ4_NL>(src, y, begin, end, bytes, elems); break;
    case Kind::kIQ4_XS: decode_blocks<Kind::kIQ4_XS>(src, y, begin, end, bytes, elems); break;
  }
}

void decode_range_base(Kind kind, const uint8_t* src, float* y, size_t begin, size_t end, size_t bytes, size_t elems) {
  decode_range(kind, src, y, begin, end, bytes, elems);
}

#if NINODES_HAS_X86
// 32 int8 values -> float, times dl, plus m when kAdd (one rounding per operation, as in ggml).
template <bool kAdd>
__attribute__((target("avx2,f16c"))) void int8x32_to_f32_avx2(__m256i v, float dl, float m, float* o) {
  const __m256 vd = _mm256_set1_ps(dl);
  const __m256 vm = _mm256_set1_ps(m);
  const __m128i lo = _mm256_castsi256_si128(v);
  const __m128i hi = _mm256_extracti128_si256(v, 1);
  const __m128i parts[4] = {lo, _mm_srli_si128(lo, 8), hi, _mm_srli_si128(hi, 8)};
  for (int i = 0; i < 4; ++i) {
    __m256 f = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(parts[i])), vd);
    if (kAdd) f = _mm256_add_ps(f, vm);
    _mm256_storeu_ps(o + 8 * i, f);
  }
}

// 32 values from 16 bytes of nibbles (low nibbles first, then high), each mapped through a
// 16-entry int8 table, then as int8x32_to_f32_avx2. The same float operations, in the same order, as
// the scalar decoders (int -> float is exact).
template <bool kAdd>
__attribute__((target("avx2,f16c"))) void nibbles32_avx2(const uint8_t* qs, const int8_t* lut, float dl, float m, float* o) {
  const __m128i table = _mm_loadu_si128(reinterpret_cast<const __m128i*>(lut));
  const __m128i low4 = _mm_set1_epi8(0x0f);
  const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs));
  const __m128i lo = _mm_shuffle_epi8(table, _mm_and_si128(q, low4));
  const __m128i hi = _mm_shuffle_epi8(table, _mm_and_si128(_mm_srli_epi16(q, 4), low4));
  int8x32_to_f32_avx2<kAdd>(_mm256_set_m128i(hi, lo), dl, m, o);
}

// Q5_0 / Q5_1: nibbles plus a fifth bit from qh (bit j for value j), as 32 int8 values.
template <bool kQ5_1>
__attribute__((target("avx2,f16c"))) void q5_block_avx2(const uint8_t* b, float* o) {
  const float d = f16_to_f32(rd16(b));
  const float m = kQ5_1 ? f16_to_f32(rd16(b + 2)) : 0.f;
  const uint8_t* qhp = b + (kQ5_1 ? 4 : 2);
  const uint8_t* qs = b + (kQ5_1 ? 8 : 6);
  uint32_t qh;
  std::memcpy(&qh, qhp, 4);
  // Byte k of `bits` is 0xff when bit k of qh is set.
  const __m256i shuf = _mm256_set_epi64x(0x0303030303030303, 0x0202020202020202, 0x0101010101010101, 0x0000000000000000);
  __m256i bits = _mm256_shuffle_epi8(_mm256_set1_epi32(static_cast<int>(qh)), shuf);
  bits = _mm256_cmpeq_epi8(_mm256_or_si256(bits, _mm256_set1_epi64x(0x7fbfdfeff7fbfdfe)), _mm256_set1_epi64x(-1));
  const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs));
  const __m128i low4 = _mm_set1_epi8(0x0f);
  const __m256i nib = _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(q, 4), low4), _mm_and_si128(q, low4));
  __m256i v = _mm256_or_si256(nib, _mm256_and_si256(bits, _mm256_set1_epi8(0x10)));
  if (!kQ5_1) v = _mm256_sub_epi8(v, _mm256_set1_epi8(16));
  int8x32_to_f32_avx2<kQ5_1>(v, d, m, o);
}

// 16 int8 values -> dl * float(v) (- ml when kSub): the K-quant sub-block step.
template <bool kSub>
__attribute__((target("avx2,f16c"))) void int8x16_to_f32_avx2(__m128i v, float dl, float ml, float* o) {
  const __m256 vd = _mm256_set1_ps(dl);
  const __m256 vm = _mm256_set1_ps(ml);
  __m256 a = _mm256_mul_ps(vd, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(v)));
  __m256 b = _mm256_mul_ps(vd, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(v, 8))));
  if (kSub) {
    a = _mm256_sub_ps(a, vm);
    b = _mm256_sub_ps(b, vm);
  }
  _mm256_storeu_ps(o, a);
  _mm256_storeu_ps(o + 8, b);
}

__attribute__((target("avx2,f16c"))) void q2_k_block_avx2(const uint8_t* b, float* y) {
  const uint8_t* scales = b;
  const uint8_t* q = b + 16;
  const float d = f16_to_f32(rd16(b + 80));
  const float dmin = f16_to_f32(rd16(b + 82));
  const __m256i three = _mm256_set1_epi8(3);
  int is = 0;
  for (int n = 0; n < 256; n += 128) {
    const __m256i qv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q));
    for (int shift = 0; shift < 8; shift += 2) {
      const __m256i v = _mm256_and_si256(_mm256_srl_epi16(qv, _mm_cvtsi32_si128(shift)), three);
      for (int half = 0; half < 2; ++half) {
        const uint8_t sc = scales[is++];
        const float dl = d * static_cast<float>(sc & 0xf);
        const float ml = dmin * static_cast<float>(sc >> 4);
        const __m128i part = half == 0 ? _mm256_castsi256_si128(v) : _mm256_extracti128_si256(v, 1);
        int8x16_to_f32_avx2<true>(part, dl, ml, y);
        y += 16;
      }
    }
    q += 32;
  }
}

__attribute__((target("avx2,f16c"))) void q3_k_block_avx2(const uint8_t* b, float* y) {
  const uint8_t* hm = b;
  const uint8_t* q = b + 32;
  const float d_all = f16_to_f32(rd16(b + 108));
  int8_t scales[16];
  q3_k_scales(b, scales);
  const __m256i three = _mm256_set1_epi8(3);
  const __m256i four = _mm256_set1_epi8(4);
  const __m256i hmv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(hm));
  int is = 0;
  int m = 1;
  for (int n = 0; n < 256; n += 128) {
    const __m256i qv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q));
    for (int shift = 0; shift < 8; shift += 2) {
      const __m256i low = _mm256_and_si256(_mm256_srl_epi16(qv, _mm_cvtsi32_si128(shift)), three);
      // 4 where the hmask bit is clear, 0 where set.
      const __m256i clear = _mm256_cmpeq_epi8(_mm256_and_si256(hmv, _mm256_set1_epi8(static_cast<char>(m))), _mm256_setzero_si256());
      const __m256i v = _mm256_sub_epi8(low, _mm256_and_si256(clear, four));
      for (int half = 0; half < 2; ++half) {
        const float dl = d_all * static_cast<float>(scales[is++] - 32);
        const __m128i part = half == 0 ? _mm256_castsi256_si128(v) : _mm256_extracti128_si256(v, 1);
        int8x16_to_f32_avx2<false>(part, dl, 0.f, y);
        y += 16;
      }
      m <<= 1;
    }
    q += 32;
  }
}

const int8_t kQ4_0Values[16] = {-8, -7, -6, -5, -4, -3, -2, -1, 0, 1, 2, 3, 4, 5, 6, 7};
const int8_t kQ4_1Values[16] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};

// F16 (F16C converts exactly: every half is representable in float) or BF16 (the bits shifted up),
// 8 values at a time, the rest one by one.
template <Kind K>
__attribute__((target("avx2,f16c"))) void widen16_avx2(const uint8_t* src, float* y, size_t begin, size_t end) {
  static_assert(K == Kind::kF16 || K == Kind::kBF16, "16-bit floats only");
  size_t i = begin;
  for (; i + 8 <= end; i += 8) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 2 * i));
    if constexpr (K == Kind::kF16) {
      _mm256_storeu_ps(y + i, _mm256_cvtph_ps(h));
    } else {
      _mm256_storeu_ps(y + i, _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16)));
    }
  }
  for (; i < end; ++i) y[i] = K == Kind::kF16 ? f16_to_f32(rd16(src + 2 * i)) : bf16_to_f32(rd16(src + 2 * i));
}

// Blocks [begin, end) through a one-block decoder.
template <void (*Block)(const uint8_t*, float*)>
__attribute__((target("avx2,f16c"))) void each_block_avx2(const uint8_t* src, float* y, size_t begin, size_t end, size_t bytes, size_t elems) {
  for (size_t i = begin; i < end; ++i) Block(src + i * bytes, y + i * elems);
}

// AVX2 without FMA on purpose: wider vectors, but the compiler still cannot fuse `d * q - m`
// (a fused result would differ from ggml in the last bit).
__attribute__((target("avx2,f16c"))) void decode_range_avx2(Kind kind, const uint8_t* src, float* y, size_t begin, size_t end,
                                                             size_t bytes, size_t elems) {
  if (kind == Kind::kF16) return widen16_avx2<Kind::kF16>(src, y, begin, end);
  if (kind == Kind::kBF16) return widen16_avx2<Kind::kBF16>(src, y, begin, end);
  if (kind == Kind::kQ2_K) return each_block_avx2<q2_k_block_avx2>(src, y, begin, end, bytes, elems);
  if (kind == Kind::kQ3_K) return each_block_avx2<q3_k_block_avx2>(src, y, begin, end, bytes, elems);
  if (kind == Kind::kQ5_0) return each_block_avx2<q5_block_avx2<false>>(src, y, begin, end, bytes, elems);
  if (kind == Kind::kQ5_1) return each_block_avx2<q5_block_avx2<true>>(src, y, begin, end, bytes, elems);
  if (kind == Kind::kQ4_0 || kind == Kind::kQ4_1) {
    for (size_t i = begin; i < end; ++i) {
      const uint8_t* b = src + i * bytes;
      const float d = f16_to_f32(rd16(b));
      if (kind == Kind::kQ4_0) {
        nibbles32_avx2<false>(b + 2, kQ4_0Values, d, 0.f, y + i * elems);
      } else {
        nibbles32_avx2<true>(b + 4, kQ4_1Values, d, f16_to_f32(rd16(b + 2)), y + i * elems);
      }
    }
    return;
  }
  if (kind == Kind::kIQ4_NL || kind == Kind::kIQ4_XS) {
    // The 16-entry codebook lookup is one byte shuffle.
    for (size_t i = begin; i < end; ++i) {
      const uint8_t* b = src + i * bytes;
      float* o = y + i * elems;
      const float d = f16_to_f32(rd16(b));
      if (kind == Kind::kIQ4_NL) {
        nibbles32_avx2<false>(b + 2, kIq4nl, d, 0.f, o);
        continue;
      }
      const uint16_t scales_h = rd16(b + 2);
      for (int ib = 0; ib < 8; ++ib) {
        const int ls = ((b[4 + ib / 2] >> 4 * (ib % 2)) & 0xf) | (((scales_h >> 2 * ib) & 3) << 4);
        nibbles32_avx2<false>(b + 8 + 16 * ib, kIq4nl, d * static_cast<float>(ls - 32), 0.f, o + 32 * ib);
      }
    }
    return;
  }
  decode_range(kind, src, y, begin, end, bytes, elems);
}
#endif

struct Job {
  const BlockType* type;
  const uint8_t* src;
  void* dst;
  bool to_bf16;
  size_t blocks;
};

// Values per parallel task: large enough that scheduling is noise, small enough to spread work.
constexpr size_t kGrainElements = 65536;
// bf16 output goes through an f32 staging buffer of this many values per step.
constexpr size_t kStageElements = 4096;

void run_job(const Job& job) {
  const BlockType& t = *job.type;
  const size_t grain = std::max<size_t>(1, kGrainElements / t.elements);
  const bool avx2 = ninodes::use_avx2();
  auto decode = [&](const uint8_t* src, float* y, size_t begin, size_t end) {
#if NINODES_HAS_X86
    if (avx2) return decode_range_avx2(t.kind, src, y, begin, end, t.bytes, t.elements);
#endif
    decode_range_base(t.kind, src, y, begin, end, t.bytes, t.elements);
  };
  ninodes::parallel_for(job.blocks, grain, [&](size_t begin, size_t end) {
    if (!job.to_bf16) {
      decode(job.src, static_cast<float*>(job.dst), begin, end);
      return;
    }
    uint16_t* out = static_cast<uint16_t*>(job.dst);
    std::vector<float> stage(kStageElements);
    const size_t step = std::max<size_t>(1, kStageElements / t.elements);
    for (size_t b = begin; b < end; b += step) {
      const size_t e = std::min(end, b + step);
      // Decode blocks [b, e) as if they started at block 0 of the staging buffer.
      decode(job.src + b * t.bytes, stage.data(), 0, e - b);
      const size_t n = (e - b) * t.elements;
      uint16_t* o = out + b * t.elements;
      for (size_t k = 0; k < n; ++k) o[k] = f32_to_bf16(stage[k]);
    }
  });
}

// Reads (dtype, src Uint8Array, dst Float32Array|Uint16Array) and checks that src holds whole
// blocks and dst holds exactly their elements.
Job parse(const Napi::CallbackInfo& info) {
  if (info.Length() < 3 || !info[0].IsString() || !info[1].IsTypedArray() || !info[2].IsTypedArray()) {
    fail("INVALID_ARGUMENT", "dequantize expects (dtype: string, src: Uint8Array, dst: Float32Array | Uint16Array)");
  }
  const BlockType& t = find_type(info[0].As<Napi::String>());
  Napi::TypedArray src = info[1].As<Napi::TypedArray>();
  Napi::TypedArray dst = info[2].As<Napi::TypedArray>();
  if (src.TypedArrayType() != napi_uint8_array) fail("DTYPE_MISMATCH", "dequantize: src must be a Uint8Array");
  bool to_bf16;
  if (dst.TypedArrayType() == napi_float32_array) {
    to_bf16 = false;
  } else if (dst.TypedArrayType() == napi_uint16_array) {
    to_bf16 = true;
  } else {
    fail("DTYPE_MISMATCH", "dequantize: dst must be a Float32Array (f32) or Uint16Array (bf16)");
  }
  const size_t src_bytes = src.ByteLength();
  if (src_bytes % t.bytes != 0) {
    fail("BLOCK_LENGTH_MISMATCH", std::string("dequantize: ") + std::to_string(src_bytes) + " bytes is not a whole number of " +
                                      t.name + " blocks of " + std::to_string(t.bytes) + " bytes");
  }
  const size_t blocks = src_bytes / t.bytes;
  if (dst.ElementLength() != blocks * t.elements) {
    fail("BLOCK_LENGTH_MISMATCH", std::string("dequantize: ") + std::to_string(blocks) + " " + t.name + " blocks hold " +
                                      std::to_string(blocks * t.elements) + " values but dst has " +
                                      std::to_string(dst.ElementLength()));
  }
  // The typed array's own data pointer (already offset): works for ArrayBuffer, external and
  // SharedArrayBuffer storage alike.
  auto data_of = [&](const Napi::TypedArray& a) -> uint8_t* {
    void* data = nullptr;
    if (napi_get_typedarray_info(info.Env(), a, nullptr, nullptr, &data, nullptr, nullptr) != napi_ok) {
      fail("INVALID_ARGUMENT", "dequantize: cannot read a typed array's memory");
    }
    return static_cast<uint8_t*>(data);
  };
  uint8_t* src_ptr = data_of(src);
  uint8_t* dst_ptr = data_of(dst);
  return Job{&t, src_ptr, dst_ptr, to_bf16, blocks};
}

Napi::Value dequantize_sync(const Napi::CallbackInfo& info) {
  return ninodes::guarded(info, [](const Napi::CallbackInfo& info) -> Napi::Value {
    const Job job = parse(info);
    run_job(job);
    return info.Env().Undefined();
  });
}

Napi::Value dequantize_async(const Napi::CallbackInfo& info) {
  return ninodes::guarded(info, [](const Napi::CallbackInfo& info) -> Napi::Value {
    const Job job = parse(info);
    return ninodes::AsyncOp::start(
        info.Env(), "ninodes.dequantize", [job] { run_job(job); },
        [](Napi::Env env) -> Napi::Value { return env.Undefined(); }, {info[1], info[2]});
  });
}

}  // namespace

NINODES_MODULE(gguf_dequant) {
  exports.Set("ggufDequantize", Napi::Function::New(env, dequantize_sync, "ggufDequantize"));
  exports.Set("ggufDequantizeAsync", Napi::Function::New(env, dequantize_async, "ggufDequantizeAsync"));
}
