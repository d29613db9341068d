#pragma once
// AVX2 / AVX-512 helpers shared by the fp32 transformer kernels: a Cephes-style exp (max ~2 ulp, exact 0 for
// very negative and -inf inputs, +inf above the float range) and horizontal reductions.
#include <cmath>

#include "core/cpu_features.h"

#if NINODES_HAS_X86
#include <immintrin.h>

namespace ninodes {
namespace ops {

NINODES_TARGET_AVX2 inline __m256 exp256(__m256 x) {
  const __m256 hi = _mm256_set1_ps(88.3762626647949f);
  const __m256 lo = _mm256_set1_ps(-87.3365478515625f);
  const __m256 underflow = _mm256_cmp_ps(x, lo, _CMP_LT_OQ);
  const __m256 overflow = _mm256_cmp_ps(x, hi, _CMP_GT_OQ);
  const __m256 nan = _mm256_cmp_ps(x, x, _CMP_UNORD_Q);
  __m256 xc = _mm256_min_ps(_mm256_max_ps(x, lo), hi);
  __m256 fx = _mm256_fmadd_ps(xc, _mm256_set1_ps(1.44269504088896341f), _mm256_set1_ps(0.5f));
  fx = _mm256_floor_ps(fx);
  xc = _mm256_fnmadd_ps(fx, _mm256_set1_ps(0.693359375f), xc);
  xc = _mm256_fnmadd_ps(fx, _mm256_set1_ps(-2.12194440e-4f), xc);
  __m256 y = _mm256_set1_ps(1.9875691500E-4f);
  y = _mm256_fmadd_ps(y, xc, _mm256_set1_ps(1.3981999507E-3f));
  y = _mm256_fmadd_ps(y, xc, _mm256_set1_ps(8.3334519073E-3f));
  y = _mm256_fmadd_ps(y, xc, _mm256_set1_ps(4.1665795894E-2f));
  y = _mm256_fmadd_ps(y, xc, _mm256_set1_ps(1.6666665459E-1f));
  y = _mm256_fmadd_ps(y, xc, _mm256_set1_ps(5.0000001201E-1f));
  const __m256 x2 = _mm256_mul_ps(xc, xc);
  y = _mm256_fmadd_ps(y, x2, _mm256_add_ps(xc, _mm256_set1_ps(1.0f)));
  // 2^fx: fx is in [-126, 128]; split the power so the exponent field never overflows.
  __m256i n = _mm256_cvttps_epi32(fx);
  const __m256i n1 = _mm256_srai_epi32(n, 1);
  const __m256i n2 = _mm256_sub_epi32(n, n1);
  const __m256 p1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n1, _mm256_set1_epi32(127)), 23));
  const __m256 p2 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n2, _mm256_set1_epi32(127)), 23));
  y = _mm256_mul_ps(_mm256_mul_ps(y, p1), p2);
  y = _mm256_andnot_ps(underflow, y);
  y = _mm256_blendv_ps(y, _mm256_set1_ps(INFINITY), overflow);
  return _mm256_blendv_ps(y, x, nan);
}

// exp256's operations on 16 lanes (same constants and order, so the same values per element).
NINODES_TARGET_AVX512 inline __m512 exp512(__m512 x) {
  const __m512 hi = _mm512_set1_ps(88.3762626647949f);
  const __m512 lo = _mm512_set1_ps(-87.3365478515625f);
  const __mmask16 underflow = _mm512_cmp_ps_mask(x, lo, _CMP_LT_OQ);
  const __mmask16 overflow = _mm512_cmp_ps_mask(x, hi, _CMP_GT_OQ);
  const __mmask16 nan = _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q);
  __m512 xc = _mm512_min_ps(_mm512_max_ps(x, lo), hi);
  __m512 fx = _mm512_fmadd_ps(xc, _mm512_set1_ps(1.44269504088896341f), _mm512_set1_ps(0.5f));
  fx = _mm512_roundscale_ps(fx, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
  xc = _mm512_fnmadd_ps(fx, _mm512_set1_ps(0.693359375f), xc);
  xc = _mm512_fnmadd_ps(fx, _mm512_set1_ps(-2.12194440e-4f), xc);
  __m512 y = _mm512_set1_ps(1.9875691500E-4f);
  y = _mm512_fmadd_ps(y, xc, _mm512_set1_ps(1.3981999507E-3f));
  y = _mm512_fmadd_ps(y, xc, _mm512_set1_ps(8.3334519073E-3f));
  y = _mm512_fmadd_ps(y, xc, _mm512_set1_ps(4.1665795894E-2f));
  y = _mm512_fmadd_ps(y, xc, _mm512_set1_ps(1.6666665459E-1f));
  y = _mm512_fmadd_ps(y, xc, _mm512_set1_ps(5.0000001201E-1f));
  const __m512 x2 = _mm512_mul_ps(xc, xc);
  y = _mm512_fmadd_ps(y, x2, _mm512_add_ps(xc, _mm512_set1_ps(1.0f)));
  const __m512i n = _mm512_cvttps_epi32(fx);
  const __m512i n1 = _mm512_srai_epi32(n, 1);
  const __m512i n2 = _mm512_sub_epi32(n, n1);
  const __m512 p1 = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_add_epi32(n1, _mm512_set1_epi32(127)), 23));
  const __m512 p2 = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_add_epi32(n2, _mm512_set1_epi32(127)), 23));
  y = _mm512_mul_ps(_mm512_mul_ps(y, p1), p2);
  y = _mm512_maskz_mov_ps(static_cast<__mmask16>(~underflow), y);
  y = _mm512_mask_mov_ps(y, overflow, _mm512_set1_ps(INFINITY));
  return _mm512_mask_mov_ps(y, nan, x);
}

NINODES_TARGET_AVX2 inline float hsum256(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

NINODES_TARGET_AVX2 inline float hmax256(__m256 v) {
  __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_max_ps(s, _mm_movehl_ps(s, s));
  s = _mm_max_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// _mm512_reduce_add_ps / _mm512_reduce_max_ps as functions, to pass where hsum256 / hmax256 go.
NINODES_TARGET_AVX512 inline float hsum512(__m512 v) { return _mm512_reduce_add_ps(v); }
NINODES_TARGET_AVX512 inline float hmax512(__m512 v) { return _mm512_reduce_max_ps(v); }

// Mask with the first n (0..8) lanes set.
NINODES_TARGET_AVX2 inline __m256i tail_mask(size_t n) {
  const __m256i idx = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(n)), idx);
}

}  // namespace ops
}  // namespace ninodes
#endif
