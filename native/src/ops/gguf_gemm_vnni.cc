// The GGUF linear on AVX512-VNNI (see gguf_linear.h for the sums). Like int8_vnni.cc it computes
// Cᵀ = W · qxᵀ: each 4-byte group of an unpacked weight row is VPDPBUSD's broadcast (signed)
// operand, 16 activation rows packed as qx + 128 the unsigned one; 128 · Σ q per sub-block is
// subtracted before the scale, so every integer sum is exact. A register tile is 4 weight rows x
// J 16-row blocks: J·4 int32 sums per sub-block, the float sums of the activation block and the
// outputs, all in registers (3 · 8 + 2 of the 32 for J = 2).
#pragma GCC optimize("fp-contract=off")
// GCC 12's AVX-512 headers trip this warning in every caller (a known false positive).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <algorithm>
#include <cstring>

#include "core/cpu_features.h"
#include "ops/gguf_linear.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace ninodes {

#if defined(__x86_64__)
namespace {

#define NINODES_TARGET_VNNI __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx512vnni,avx2,fma")))

constexpr size_t kCols = 4;

inline int32_t word_at(const int8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

// Rows [m0, m0 + mv) (mv <= 16 J) against unpacked rows [c0, c0 + 4).
template <int J, size_t G, size_t A, bool kMins>
NINODES_TARGET_VNNI void tile(const int8_t* packed, const GgufActivations& act, size_t m0, size_t mv, size_t k, const GgufRows& rows, size_t c0,
                              size_t n0, size_t nv, const GgufOutput& out) {
  const size_t kg = k / G, rb0 = m0 / kGgufRowBlock;
  const int8_t* xp = packed + m0 * k;
  const size_t xstride = kGgufRowBlock * k;
  const float* dx = act.scale + rb0 * (k / A) * kGgufRowBlock;
  const size_t dstride = (k / A) * kGgufRowBlock;
  const float* xs = kMins ? act.sum + rb0 * (k / 32) * kGgufRowBlock : nullptr;
  const size_t sstride = (k / 32) * kGgufRowBlock;
  const int8_t* w[kCols];
  const float* sc[kCols];
  const int32_t* comp[kCols];
  const float* mn[kCols];
  for (size_t i = 0; i < kCols; ++i) {
    w[i] = rows.q + (c0 + i) * k;
    sc[i] = rows.scale + (c0 + i) * kg;
    comp[i] = rows.comp + (c0 + i) * kg;
    mn[i] = kMins ? rows.min + (c0 + i) * kg : nullptr;
  }
  __m512 y[kCols][J];
#pragma GCC unroll 8
  for (size_t i = 0; i < kCols; ++i)
#pragma GCC unroll 2
    for (int j = 0; j < J; ++j) y[i][j] = _mm512_setzero_ps();
  for (size_t ab = 0; ab < k / A; ++ab) {
    __m512 f[kCols][J];
#pragma GCC unroll 8
    for (size_t i = 0; i < kCols; ++i)
#pragma GCC unroll 2
      for (int j = 0; j < J; ++j) f[i][j] = _mm512_setzero_ps();
    for (size_t g = ab * (A / G); g < (ab + 1) * (A / G); ++g) {
      __m512i acc[kCols][J];
#pragma GCC unroll 8
      for (size_t i = 0; i < kCols; ++i)
#pragma GCC unroll 2
        for (int j = 0; j < J; ++j) acc[i][j] = _mm512_setzero_si512();
#pragma GCC unroll 8
      for (size_t q = g * G; q < g * G + G; q += 4) {
        __m512i x[J];
#pragma GCC unroll 2
        for (int j = 0; j < J; ++j) x[j] = _mm512_loadu_si512(xp + j * xstride + q * kGgufRowBlock);
#pragma GCC unroll 8
        for (size_t i = 0; i < kCols; ++i) {
          const __m512i b = _mm512_set1_epi32(word_at(w[i] + q));
#pragma GCC unroll 2
          for (int j = 0; j < J; ++j) acc[i][j] = _mm512_dpbusd_epi32(acc[i][j], x[j], b);
        }
      }
#pragma GCC unroll 8
      for (size_t i = 0; i < kCols; ++i) {
        const __m512i c = _mm512_set1_epi32(comp[i][g]);
        const __m512 s = _mm512_set1_ps(sc[i][g]);
#pragma GCC unroll 2
        for (int j = 0; j < J; ++j) f[i][j] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_sub_epi32(acc[i][j], c)), s, f[i][j]);
      }
      if (kMins) {
#pragma GCC unroll 2
        for (int j = 0; j < J; ++j) {
          const __m512 s = _mm512_loadu_ps(xs + j * sstride + g * kGgufRowBlock);
#pragma GCC unroll 8
          for (size_t i = 0; i < kCols; ++i) y[i][j] = _mm512_fnmadd_ps(_mm512_set1_ps(mn[i][g]), s, y[i][j]);
        }
      }
    }
#pragma GCC unroll 2
    for (int j = 0; j < J; ++j) {
      const __m512 d = _mm512_loadu_ps(dx + j * dstride + ab * kGgufRowBlock);
#pragma GCC unroll 8
      for (size_t i = 0; i < kCols; ++i) y[i][j] = _mm512_fmadd_ps(f[i][j], d, y[i][j]);
    }
  }
  for (size_t i = 0; i < kCols && c0 + i < nv; ++i) {
    const size_t col = n0 + c0 + i;
    const float bias = out.bias != nullptr ? out.bias[col] : 0.0f;
    for (int j = 0; j < J; ++j) {
      alignas(64) float t[kGgufRowBlock];
      _mm512_store_ps(t, y[i][j]);
      for (size_t r = 0; r < kGgufRowBlock && 16 * size_t(j) + r < mv; ++r) {
        const size_t row = m0 + 16 * size_t(j) + r;
        out.y[row * out.n + col] = out.bias != nullptr ? t[r] + bias : t[r];
      }
    }
  }
}

template <size_t G, size_t A, bool kMins>
void group(const int8_t* packed, const GgufActivations& act, size_t m, size_t k, const GgufRows& rows, size_t n0, size_t nv, const GgufOutput& out) {
  // Each 32-row slice of the activations stays in L1/L2 while the group's 4-row tiles pass over it.
  for (size_t m0 = 0; m0 < m; m0 += 32) {
    const size_t mv = std::min<size_t>(32, m - m0);
    for (size_t c0 = 0; c0 < nv; c0 += kCols) {
      if (mv > 16) {
        tile<2, G, A, kMins>(packed, act, m0, mv, k, rows, c0, n0, nv, out);
      } else {
        tile<1, G, A, kMins>(packed, act, m0, mv, k, rows, c0, n0, nv, out);
      }
    }
  }
}

}  // namespace

bool gguf_vnni_supported() {
  static const bool cpu = cpu_has_avx512() && __builtin_cpu_supports("avx512vnni");
  return cpu && use_avx512();
}

void gguf_vnni_group(const int8_t* packed, const GgufActivations& act, size_t m, size_t k, const GgufLinearLayout& layout,
                     const GgufRows& rows, size_t n0, size_t nv, const GgufOutput& out) {
  if (layout.a == 32) return group<32, 32, false>(packed, act, m, k, rows, n0, nv, out);
  if (layout.g == 16) return group<16, 256, false>(packed, act, m, k, rows, n0, nv, out);
  return group<32, 256, true>(packed, act, m, k, rows, n0, nv, out);
}

#else  // not x86-64: callers check gguf_vnni_supported() first
bool gguf_vnni_supported() { return false; }
void gguf_vnni_group(const int8_t*, const GgufActivations&, size_t, size_t, const GgufLinearLayout&, const GgufRows&, size_t, size_t,
                     const GgufOutput&) {}
#endif

}  // namespace ninodes
