// Per-block int8 quantization of a GGUF linear's input rows (see gguf_linear.h). Each row is
// computed by one thread in a fixed order, so the codes, scales and sums never depend on the split.
#include <cmath>

#include "core/cpu_features.h"
#include "ops/gguf_linear.h"

namespace ninodes {
namespace {

// Written so the AVX2 build vectorizes it: plain comparisons instead of fmax/fmin (library calls
// that keep NaN semantics), NaN and ±inf found by one OR over the block.
template <bool kMins>
[[gnu::always_inline]] inline void quantize_row(const float* x, size_t k, size_t a, int8_t* q, float* scale, float* sum) {
  // scale and sum point at lane 0 of this row; consecutive blocks are 16 lanes apart.
  for (size_t b = 0; b < k / a; ++b) {
    const float* xb = x + b * a;
    float amax = 0.0f;
    int bad = 0;
    for (size_t i = 0; i < a; ++i) {
      const float v = std::fabs(xb[i]);
      bad |= !(v <= 3.402823466e38f);  // NaN or ±inf
      amax = v > amax ? v : amax;
    }
    int8_t* qb = q + b * a;
    if (bad != 0 || amax == 0.0f) {
      for (size_t i = 0; i < a; ++i) qb[i] = 0;
      scale[b * kGgufRowBlock] = bad != 0 ? NAN : 0.0f;
      continue;
    }
    const float inv = 127.0f / amax;
    for (size_t i = 0; i < a; ++i) {
      float v = std::nearbyint(xb[i] * inv);
      v = v > 127.0f ? 127.0f : v;
      v = v < -127.0f ? -127.0f : v;
      qb[i] = static_cast<int8_t>(static_cast<int>(v));
    }
    scale[b * kGgufRowBlock] = amax / 127.0f;
  }
  if (kMins) {
    for (size_t s = 0; s < k / 32; ++s) {
      float t = 0.0f;
      for (size_t i = 0; i < 32; ++i) t += x[32 * s + i];
      sum[s * kGgufRowBlock] = t;
    }
  }
}

template <bool kMins>
[[gnu::always_inline]] inline void quantize_rows(const float* x, size_t r0, size_t r1, size_t m, size_t k, size_t a, const GgufActivations& out) {
  for (size_t r = r0; r < r1; ++r) {
    const size_t blk = r / kGgufRowBlock, lane = r % kGgufRowBlock;
    float* scale = out.scale + blk * (k / a) * kGgufRowBlock + lane;
    float* sum = kMins ? out.sum + blk * (k / 32) * kGgufRowBlock + lane : nullptr;
    if (r < m) {
      quantize_row<kMins>(x + r * k, k, a, out.q + r * k, scale, sum);
    } else {
      // Padding lanes of the last 16-row block: zero scales and sums (their outputs are not stored).
      for (size_t b = 0; b < k / a; ++b) scale[b * kGgufRowBlock] = 0.0f;
      if (kMins) for (size_t s = 0; s < k / 32; ++s) sum[s * kGgufRowBlock] = 0.0f;
    }
  }
}

template <bool kMins>
NINODES_TARGET_AVX2 void quantize_rows_avx2(const float* x, size_t r0, size_t r1, size_t m, size_t k, size_t a, const GgufActivations& out) {
  quantize_rows<kMins>(x, r0, r1, m, k, a, out);
}

}  // namespace

void gguf_quantize_activations(const float* x, size_t m, size_t k, const GgufLinearLayout& layout, const GgufActivations& out,
                               ParallelFor pfor) {
  const size_t padded = gguf_row_blocks(m) * kGgufRowBlock;
  const bool avx2 = use_avx2();
  pfor(padded, kGgufRowBlock, [&](size_t r0, size_t r1) {
    if (layout.mins) {
      avx2 ? quantize_rows_avx2<true>(x, r0, r1, m, k, layout.a, out) : quantize_rows<true>(x, r0, r1, m, k, layout.a, out);
    } else {
      avx2 ? quantize_rows_avx2<false>(x, r0, r1, m, k, layout.a, out) : quantize_rows<false>(x, r0, r1, m, k, layout.a, out);
    }
  });
}

}  // namespace ninodes
