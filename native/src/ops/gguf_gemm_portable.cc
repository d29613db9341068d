// The GGUF linear on any x86-64 CPU: the sums of gguf_linear.h on row-major codes, the int8 dot of
// each sub-block auto-vectorized in the AVX2 build. Explicit fmaf calls give the single roundings
// the VNNI kernel has, so both produce the same bits.
#pragma GCC optimize("fp-contract=off")
#include <cmath>

#include "core/cpu_features.h"
#include "ops/gguf_linear.h"

namespace ninodes {
namespace {

template <size_t G>
[[gnu::always_inline]] inline int32_t dot(const int8_t* a, const int8_t* b) {
  int32_t s = 0;
  for (size_t i = 0; i < G; ++i) s += static_cast<int32_t>(a[i]) * static_cast<int32_t>(b[i]);
  return s;
}

template <size_t G, size_t A, bool kMins>
[[gnu::always_inline]] inline void group(const GgufActivations& act, size_t m, size_t k, const GgufRows& rows, size_t n0, size_t nv, const GgufOutput& out) {
  const size_t kg = k / G;
  for (size_t r = 0; r < m; ++r) {
    const size_t blk = r / kGgufRowBlock, lane = r % kGgufRowBlock;
    const float* dx = act.scale + blk * (k / A) * kGgufRowBlock + lane;
    const float* xs = kMins ? act.sum + blk * (k / 32) * kGgufRowBlock + lane : nullptr;
    const int8_t* qx = act.q + r * k;
    for (size_t c = 0; c < nv; ++c) {
      const int8_t* qw = rows.q + c * k;
      const float* scale = rows.scale + c * kg;
      float y = 0.0f;
      for (size_t ab = 0; ab < k / A; ++ab) {
        float f = 0.0f;
        for (size_t g = ab * (A / G); g < (ab + 1) * (A / G); ++g) {
          f = std::fmaf(static_cast<float>(dot<G>(qx + g * G, qw + g * G)), scale[g], f);
          // Mins come with G = 32: sub-block g is input sum g.
          if (kMins) y = std::fmaf(-rows.min[c * kg + g], xs[g * kGgufRowBlock], y);
        }
        y = std::fmaf(f, dx[ab * kGgufRowBlock], y);
      }
      if (out.bias != nullptr) y += out.bias[n0 + c];
      out.y[r * out.n + n0 + c] = y;
    }
  }
}

template <size_t G, size_t A, bool kMins>
NINODES_TARGET_AVX2 void group_avx2(const GgufActivations& act, size_t m, size_t k, const GgufRows& rows, size_t n0, size_t nv, const GgufOutput& out) {
  group<G, A, kMins>(act, m, k, rows, n0, nv, out);
}

template <size_t G, size_t A, bool kMins>
void run(const GgufActivations& act, size_t m, size_t k, const GgufRows& rows, size_t n0, size_t nv, const GgufOutput& out, bool avx2) {
  if (avx2) {
    group_avx2<G, A, kMins>(act, m, k, rows, n0, nv, out);
  } else {
    group<G, A, kMins>(act, m, k, rows, n0, nv, out);
  }
}

}  // namespace

void gguf_portable_group(const GgufActivations& act, size_t m, size_t k, const GgufLinearLayout& layout, const GgufRows& rows,
                         size_t n0, size_t nv, const GgufOutput& out, bool avx2) {
  if (layout.a == 32) return run<32, 32, false>(act, m, k, rows, n0, nv, out, avx2);
  if (layout.g == 16) return run<16, 256, false>(act, m, k, rows, n0, nv, out, avx2);
  return run<32, 256, true>(act, m, k, rows, n0, nv, out, avx2);
}

}  // namespace ninodes
