#pragma once
// AVX2 / AVX-512 helpers shared by the fp32 transformer kernels: a Cephes-style exp (max ~2 ulp, exact 0 for
// very negative and -inf inputs, +inf above the float range) and horizontal reductions.
#include <cmath>

#include "core/cpu_features.h"

#if NINODES_HAS_X86
#include <immintrin.h>

namespace ninodes {
namespace ops {

// The exp of both widths, written once: V is __m256 or __m512 and IV the int32 vector of as many
// lanes; their GCC vector operators (+, -, *, <<, >>, comparisons and ?:) are what the
// _mm*_add/sub/mul/cmp/blend intrinsics expand to; Fma, Floor, Max and Min are the width's
// _mm*_fmadd_ps, round-down, _mm*_max_ps and _mm*_min_ps (as ?: GCC would blend instead). Always
// inlined into exp256 / exp512, so it is compiled for their target; every operation rounds once,
// as the intrinsics do, so each width's values are those of its former intrinsic version bit for
// bit. x and out are references because a default-target function taking or returning V by value
// draws a -Wpsabi warning in every translation unit; the calls to the width's functions would too,
// but are never made (they inline). c - V{} splats c (c - (+0) is c for every c, -0 included).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpsabi"
template <class V, class IV, V (*Fma)(V, V, V), V (*Floor)(V), V (*Max)(V, V), V (*Min)(V, V)>
__attribute__((always_inline)) inline void exp_lanes(const V& x, V& out) {
  const V hi = 88.3762626647949f - V{};
  const V lo = -87.3365478515625f - V{};
  const auto underflow = x < lo;
  const auto overflow = x > hi;
  const auto nan = x != x;
  V xc = Min(Max(x, lo), hi);
  const V fx = Floor(Fma(xc, 1.44269504088896341f - V{}, 0.5f - V{}));
  // xc - fx * c (the fnmadd of c) as fma(fx, -c, xc): the negated constant is exact.
  xc = Fma(fx, -0.693359375f - V{}, xc);
  xc = Fma(fx, 2.12194440e-4f - V{}, xc);
  V y = 1.9875691500E-4f - V{};
  y = Fma(y, xc, 1.3981999507E-3f - V{});
  y = Fma(y, xc, 8.3334519073E-3f - V{});
  y = Fma(y, xc, 4.1665795894E-2f - V{});
  y = Fma(y, xc, 1.6666665459E-1f - V{});
  y = Fma(y, xc, 5.0000001201E-1f - V{});
  const V x2 = xc * xc;
  y = Fma(y, x2, xc + (1.0f - V{}));
  // 2^fx: fx is in [-126, 128]; split the power so the exponent field never overflows.
  const IV n = __builtin_convertvector(fx, IV);  // truncates, as cvttps2dq
  const IV n1 = n >> 1;
  const IV n2 = n - n1;
  const V p1 = (V)((n1 + 127) << 23);
  const V p2 = (V)((n2 + 127) << 23);
  y = y * p1 * p2;
  y = underflow ? V{} : y;
  y = overflow ? INFINITY - V{} : y;
  out = nan ? x : y;
}
#pragma GCC diagnostic pop

NINODES_TARGET_AVX2 inline __m256 fmadd256(__m256 a, __m256 b, __m256 c) { return _mm256_fmadd_ps(a, b, c); }
NINODES_TARGET_AVX2 inline __m256 floor256(__m256 x) { return _mm256_floor_ps(x); }
NINODES_TARGET_AVX2 inline __m256 max256(__m256 a, __m256 b) { return _mm256_max_ps(a, b); }
NINODES_TARGET_AVX2 inline __m256 min256(__m256 a, __m256 b) { return _mm256_min_ps(a, b); }
NINODES_TARGET_AVX512 inline __m512 fmadd512(__m512 a, __m512 b, __m512 c) { return _mm512_fmadd_ps(a, b, c); }
NINODES_TARGET_AVX512 inline __m512 floor512(__m512 x) { return _mm512_roundscale_ps(x, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC); }
NINODES_TARGET_AVX512 inline __m512 max512(__m512 a, __m512 b) { return _mm512_max_ps(a, b); }
NINODES_TARGET_AVX512 inline __m512 min512(__m512 a, __m512 b) { return _mm512_min_ps(a, b); }

// Cephes-style exp of 8 and of 16 lanes (max ~2 ulp, exact 0 for very negative and -inf inputs,
// +inf above the float range, NaN kept): the same constants and order, so the same value per element.
NINODES_TARGET_AVX2 inline __m256 exp256(__m256 x) {
  __m256 y;
  exp_lanes<__m256, __v8si, fmadd256, floor256, max256, min256>(x, y);
  return y;
}
NINODES_TARGET_AVX512 inline __m512 exp512(__m512 x) {
  __m512 y;
  exp_lanes<__m512, __v16si, fmadd512, floor512, max512, min512>(x, y);
  return y;
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
