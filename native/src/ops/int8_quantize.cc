#pragma GCC optimize("fp-contract=off")
// GCC 12's AVX-512 headers trip this warning in every caller (a known false positive).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include "ops/int8_quantize.h"

#include <napi.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <string>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "core/cpu_features.h"
#include "core/errors.h"
#include "core/registry.h"
#include "core/thread_pool.h"
#include "ops/hadamard.h"
#include "ops/span_args.h"

namespace ninodes {
namespace {

float row_scale_scalar(const float* x, size_t n) {
  float m = 0.0f;
  for (size_t i = 0; i < n; ++i) {
    const float a = std::fabs(x[i]);
    if (a > m) m = a;  // NaN never compares greater: ignored
  }
  const float s = m / 127.0f;
  return s > 1e-30f ? s : 1e-30f;
}

void quantize_scalar(const float* x, size_t n, float scale, int8_t* q) {
  for (size_t i = 0; i < n; ++i) {
    float v = std::nearbyint(x[i] / scale);
    if (std::isnan(v)) v = 0.0f;
    v = v < -128.0f ? -128.0f : (v > 127.0f ? 127.0f : v);
    q[i] = static_cast<int8_t>(v);
  }
}

#if NINODES_HAS_X86
NINODES_TARGET_AVX2 float row_scale_avx2(const float* x, size_t n) {
  const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF));
  __m256 m = _mm256_setzero_ps();
  size_t i = 0;
  // max_ps returns the second operand when either is NaN: keep the running max second.
  for (; i + 8 <= n; i += 8) m = _mm256_max_ps(_mm256_and_ps(_mm256_loadu_ps(x + i), abs_mask), m);
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, m);
  float best = 0.0f;
  for (float v : lanes) best = v > best ? v : best;
  for (; i < n; ++i) {
    const float a = std::fabs(x[i]);
    if (a > best) best = a;
  }
  const float s = best / 127.0f;
  return s > 1e-30f ? s : 1e-30f;
}

NINODES_TARGET_AVX2 void quantize_avx2(const float* x, size_t n, float scale, int8_t* q) {
  const __m256 s = _mm256_set1_ps(scale);
  const __m256 lo = _mm256_set1_ps(-128.0f), hi = _mm256_set1_ps(127.0f);
  size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    __m256i w[4];
    for (int k = 0; k < 4; ++k) {
      __m256 v = _mm256_div_ps(_mm256_loadu_ps(x + i + 8 * k), s);
      v = _mm256_round_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
      v = _mm256_and_ps(v, _mm256_cmp_ps(v, v, _CMP_ORD_Q));  // NaN -> 0
      v = _mm256_min_ps(_mm256_max_ps(v, lo), hi);
      w[k] = _mm256_cvtps_epi32(v);
    }
    const __m256i p01 = _mm256_packs_epi32(w[0], w[1]);
    const __m256i p23 = _mm256_packs_epi32(w[2], w[3]);
    __m256i b = _mm256_packs_epi16(p01, p23);
    b = _mm256_permutevar8x32_epi32(b, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(q + i), b);
  }
  quantize_scalar(x + i, n - i, scale, q + i);
}

// 16 lanes, the same operations per element as quantize_avx2 (x / scale correctly rounded, round
// half to even, NaN -> 0, clamp), and a narrowing store instead of the pack/permute dance.
NINODES_TARGET_AVX512 void quantize_avx512(const float* x, size_t n, float scale, int8_t* q) {
  const __m512 s = _mm512_set1_ps(scale);
  const __m512 lo = _mm512_set1_ps(-128.0f), hi = _mm512_set1_ps(127.0f);
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    __m512 v = _mm512_roundscale_ps(_mm512_div_ps(_mm512_loadu_ps(x + i), s), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    v = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(v, v, _CMP_ORD_Q), v);
    v = _mm512_min_ps(_mm512_max_ps(v, lo), hi);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(q + i), _mm512_cvtepi32_epi8(_mm512_cvtps_epi32(v)));
  }
  quantize_scalar(x + i, n - i, scale, q + i);
}
#endif

void quantize_row(const float* x, size_t n, float scale, int8_t* q) {
#if NINODES_HAS_X86
  if (use_avx512()) return quantize_avx512(x, n, scale, q);
  if (use_avx2()) return quantize_avx2(x, n, scale, q);
#endif
  quantize_scalar(x, n, scale, q);
}

}  // namespace

void quantize_rows_int8(const float* x, size_t rows, size_t cols, size_t group, bool regular,
                        const float* external_scale, int8_t* q, float* scale, ParallelFor pfor, float* rotated) {
  const bool avx2 = use_avx2();
  pfor(rows, std::max<size_t>(1, 8192 / std::max<size_t>(cols, 1)), [&](size_t b, size_t e) {
    std::unique_ptr<float[]> own(group != 0 && rotated == nullptr ? new float[cols] : nullptr);
    for (size_t r = b; r < e; ++r) {
      const float* row = x + r * cols;
      // The rotated row goes to the caller's buffer when it wants it, else to scratch.
      float* tmp = rotated != nullptr ? rotated + r * cols : own.get();
      float absmax = 0.0f;
      if (group != 0 && fwht_copy_absmax(row, tmp, cols, group, regular, &absmax)) {
        // Rotation, normalization and absmax in one pass over the row (same bits as below).
        float s = absmax / 127.0f;
        s = s > 1e-30f ? s : 1e-30f;
        if (external_scale != nullptr) s = external_scale[r];
        quantize_row(tmp, cols, s, q + r * cols);
        scale[r] = s;
        continue;
      }
      if (group != 0) {
        std::memcpy(tmp, row, cols * sizeof(float));
        fwht_inplace(tmp, cols, group, regular);
        row = tmp;
      } else if (rotated != nullptr) {
        std::memcpy(tmp, row, cols * sizeof(float));
      }
      float s;
#if NINODES_HAS_X86
      if (avx2) {
        s = external_scale != nullptr ? external_scale[r] : row_scale_avx2(row, cols);
      } else
#endif
      {
        s = external_scale != nullptr ? external_scale[r] : row_scale_scalar(row, cols);
      }
      quantize_row(row, cols, s, q + r * cols);
      scale[r] = s;
    }
  });
}

namespace {

// quantizeRowsInt8(x f32, q i8, scale f32, rows, cols, external, group, order, rotated f32 | null?)
Napi::Value quantize_rows_binding(const Napi::CallbackInfo& info) {
  return guarded(info, [](const Napi::CallbackInfo& info) -> Napi::Value {
    const args::Bytes xb = args::bytes(info, 0, "quantizeRowsInt8 input");
    const args::Bytes qb = args::bytes(info, 1, "quantizeRowsInt8 output");
    const args::Bytes sb = args::bytes(info, 2, "quantizeRowsInt8 scale");
    const size_t rows = args::dim(info, 3, "rows");
    const size_t cols = args::dim(info, 4, "columns");
    const bool external = args::boolean(info, 5, "external scale flag");
    const size_t group = args::dim(info, 6, "rotation group");
    const std::string order = args::string(info, 7, "hadamard order");
    if (order != "regular" && order != "sylvester") fail("INVALID_ARGUMENT", "hadamard order must be 'regular' or 'sylvester'");
    if (group != 0) check_hadamard_group(cols, group, order == "regular");
    const size_t n = args::mul(rows, cols, "quantizeRowsInt8");
    const float* x = args::as<float>(xb, n, "quantizeRowsInt8 input");
    int8_t* q = args::as<int8_t>(qb, n, "quantizeRowsInt8 output");
    float* scale = args::as<float>(sb, rows, "quantizeRowsInt8 scale");
    if (external) {
      for (size_t r = 0; r < rows; ++r) {
        if (!(std::isfinite(scale[r]) && scale[r] > 0)) fail("INVALID_ARGUMENT", "external scale of row " + std::to_string(r) + " is not a positive finite number");
      }
    }
    float* rotated = nullptr;
    if (info.Length() > 8 && !info[8].IsNull() && !info[8].IsUndefined()) {
      rotated = args::as<float>(args::bytes(info, 8, "quantizeRowsInt8 rotated"), n, "quantizeRowsInt8 rotated");
      if (static_cast<const void*>(rotated) == static_cast<const void*>(x)) fail("INVALID_ARGUMENT", "quantizeRowsInt8: the rotated output must not be the input");
    }
    quantize_rows_int8(x, rows, cols, group, order == "regular", external ? scale : nullptr, q, scale, parallel_for, rotated);
    return info.Env().Undefined();
  });
}

}  // namespace
}  // namespace ninodes

NINODES_MODULE(int8_quantize) {
  exports.Set("quantizeRowsInt8", Napi::Function::New(env, ninodes::quantize_rows_binding, "quantizeRowsInt8"));
}
