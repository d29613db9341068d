// The GGUF linear on AVX512-VNNI (see gguf_linear.h for the sums). Like int8_vnni.cc it computes
// Cᵀ = W · qxᵀ: each 4-byte group of an unpacked weight row is VPDPBUSD's broadcast (signed)
// operand, 16 activation rows packed as qx + 128 the unsigned one; the sums start at -128 · Σ q of
// the sub-block, so every integer sum is exact. A register tile is 4 weight rows x
// two 16-row blocks: 8 int32 sums per sub-block, the float sums of the activation block and the
// outputs, all in registers (3 · 8 + 2 of the 32).
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

// Rows [m0, m0 + mv) (mv <= 32; kTwo: mv > 16, two 16-row blocks) against unpacked rows
// [c0, c0 + 4). The 8 int32
// sums, 8 float sums and 8 outputs are named variables: as arrays GCC 12 kept copying them
// between registers and the stack on every step.
template <size_t G, size_t A, bool kMins, bool kTwo>
NINODES_TARGET_VNNI void tile(const int8_t* packed, const GgufActivations& act, size_t m0, size_t mv, size_t k, const GgufRows& rows, size_t c0,
                              float (*block)[kGgufGroupRows]) {
  const size_t kg = k / G, rb0 = m0 / kGgufRowBlock;
  const int8_t* x0p = packed + m0 * k;
  const int8_t* x1p = kTwo ? x0p + kGgufRowBlock * k : x0p;
  const float* d0p = act.scale + rb0 * (k / A) * kGgufRowBlock;
  const float* d1p = kTwo ? d0p + (k / A) * kGgufRowBlock : d0p;
  const float* s0p = kMins ? act.sum + rb0 * (k / 32) * kGgufRowBlock : nullptr;
  const float* s1p = kMins ? (kTwo ? s0p + (k / 32) * kGgufRowBlock : s0p) : nullptr;
  const int8_t* w0 = rows.q + (c0 + 0) * k;
  const int8_t* w1 = rows.q + (c0 + 1) * k;
  const int8_t* w2 = rows.q + (c0 + 2) * k;
  const int8_t* w3 = rows.q + (c0 + 3) * k;
  const float* sc = rows.scale + c0 * kg;
  const int32_t* cp = rows.comp + c0 * kg;
  const float* mn = kMins ? rows.min + c0 * kg : nullptr;
  const __m512 zf = _mm512_setzero_ps();
  __m512 y00 = zf, y01 = zf, y10 = zf, y11 = zf, y20 = zf, y21 = zf, y30 = zf, y31 = zf;
  for (size_t ab = 0; ab < k / A; ++ab) {
    __m512 f00 = zf, f01 = zf, f10 = zf, f11 = zf, f20 = zf, f21 = zf, f30 = zf, f31 = zf;
    for (size_t g = ab * (A / G); g < (ab + 1) * (A / G); ++g) {
      // The sums start at -128 · Σ q, so they end at Σ q · qx exactly (wrapping int32 arithmetic).
      const __m512i c0 = _mm512_set1_epi32(-cp[0 * kg + g]), c1 = _mm512_set1_epi32(-cp[1 * kg + g]);
      const __m512i c2 = _mm512_set1_epi32(-cp[2 * kg + g]), c3 = _mm512_set1_epi32(-cp[3 * kg + g]);
      __m512i a00 = c0, a01 = c0, a10 = c1, a11 = c1, a20 = c2, a21 = c2, a30 = c3, a31 = c3;
#pragma GCC unroll 8
      for (size_t t = 0; t < G; t += 4) {
        const size_t q = g * G + t;
        const __m512i x0 = _mm512_loadu_si512(x0p + q * kGgufRowBlock);
        const __m512i x1 = kTwo ? _mm512_loadu_si512(x1p + q * kGgufRowBlock) : x0;
#define NINODES_GGUF_STEP(i)                                   \
  {                                                            \
    const __m512i b = _mm512_set1_epi32(word_at(w##i + q));    \
    a##i##0 = _mm512_dpbusd_epi32(a##i##0, x0, b);             \
    if (kTwo) a##i##1 = _mm512_dpbusd_epi32(a##i##1, x1, b);   \
  }
        NINODES_GGUF_STEP(0) NINODES_GGUF_STEP(1) NINODES_GGUF_STEP(2) NINODES_GGUF_STEP(3)
#undef NINODES_GGUF_STEP
      }
      // float(Σ q·qx) · scale into the activation block's sum (for A == G: f = 0 + v·s, one rounding).
#define NINODES_GGUF_SCALE(i)                                                                          \
  {                                                                                                   \
    const __m512 s = _mm512_set1_ps(sc[(i) * kg + g]);                                                 \
    f##i##0 = _mm512_fmadd_ps(_mm512_cvtepi32_ps(a##i##0), s, f##i##0);                                \
    if (kTwo) f##i##1 = _mm512_fmadd_ps(_mm512_cvtepi32_ps(a##i##1), s, f##i##1);                      \
  }
      NINODES_GGUF_SCALE(0) NINODES_GGUF_SCALE(1) NINODES_GGUF_SCALE(2) NINODES_GGUF_SCALE(3)
#undef NINODES_GGUF_SCALE
      if (kMins) {
        const __m512 s0 = _mm512_loadu_ps(s0p + g * kGgufRowBlock);
        const __m512 s1 = kTwo ? _mm512_loadu_ps(s1p + g * kGgufRowBlock) : s0;
#define NINODES_GGUF_MIN(i)                                  \
  {                                                          \
    const __m512 mi = _mm512_set1_ps(mn[(i) * kg + g]);      \
    y##i##0 = _mm512_fnmadd_ps(mi, s0, y##i##0);             \
    if (kTwo) y##i##1 = _mm512_fnmadd_ps(mi, s1, y##i##1);   \
  }
        NINODES_GGUF_MIN(0) NINODES_GGUF_MIN(1) NINODES_GGUF_MIN(2) NINODES_GGUF_MIN(3)
#undef NINODES_GGUF_MIN
      }
    }
    const __m512 d0 = _mm512_loadu_ps(d0p + ab * kGgufRowBlock);
    const __m512 d1 = kTwo ? _mm512_loadu_ps(d1p + ab * kGgufRowBlock) : d0;
    y00 = _mm512_fmadd_ps(f00, d0, y00);
    y01 = _mm512_fmadd_ps(f01, d1, y01);
    y10 = _mm512_fmadd_ps(f10, d0, y10);
    y11 = _mm512_fmadd_ps(f11, d1, y11);
    y20 = _mm512_fmadd_ps(f20, d0, y20);
    y21 = _mm512_fmadd_ps(f21, d1, y21);
    y30 = _mm512_fmadd_ps(f30, d0, y30);
    y31 = _mm512_fmadd_ps(f31, d1, y31);
  }
  alignas(64) float t[kCols][2][kGgufRowBlock];
  _mm512_store_ps(t[0][0], y00);
  _mm512_store_ps(t[0][1], y01);
  _mm512_store_ps(t[1][0], y10);
  _mm512_store_ps(t[1][1], y11);
  _mm512_store_ps(t[2][0], y20);
  _mm512_store_ps(t[2][1], y21);
  _mm512_store_ps(t[3][0], y30);
  _mm512_store_ps(t[3][1], y31);
  // Into the group's output block (in L1): stored to y a whole row of the group at a time, since
  // column by column every store went to a different line of y.
  for (size_t i = 0; i < kCols; ++i) {
    for (size_t r = 0; r < mv; ++r) block[r][c0 + i] = t[i][r / kGgufRowBlock][r % kGgufRowBlock];
  }
}

template <size_t G, size_t A, bool kMins>
NINODES_TARGET_VNNI void group(const int8_t* packed, const GgufActivations& act, size_t m, size_t k, const GgufRows& rows, size_t n0, size_t nv,
                               const GgufOutput& out) {
  static_assert(kGgufGroupRows == 16, "a group's output row is one 16-float register");
  const __mmask16 cols = nv >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << nv) - 1);
  const __m512 bias = out.bias != nullptr ? _mm512_maskz_loadu_ps(cols, out.bias + n0) : _mm512_setzero_ps();
  alignas(64) float block[32][kGgufGroupRows];
  // Each 32-row slice of the activations stays in L1/L2 while the group's 4-row tiles pass over it.
  for (size_t m0 = 0; m0 < m; m0 += 32) {
    const size_t mv = std::min<size_t>(32, m - m0);
    for (size_t c0 = 0; c0 < nv; c0 += kCols) {
      if (mv > kGgufRowBlock) {
        tile<G, A, kMins, true>(packed, act, m0, mv, k, rows, c0, block);
      } else {
        tile<G, A, kMins, false>(packed, act, m0, mv, k, rows, c0, block);
      }
    }
    for (size_t r = 0; r < mv; ++r) {
      __m512 v = _mm512_load_ps(block[r]);
      if (out.bias != nullptr) v = _mm512_add_ps(v, bias);
      _mm512_mask_storeu_ps(out.y + (m0 + r) * out.n + n0, cols, v);
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
