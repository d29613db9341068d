// Row-wise fp32 kernels: RMSNorm, LayerNorm and softmax over the last dimension.
//
// Each row is computed start to finish by one thread in a fixed order, so results are identical
// for any thread count (the pool only decides which thread owns a row). AVX2 keeps eight partial
// sums per row; the scalar path keeps one.
#include <napi.h>

#include <cmath>
#include <limits>

#include "core/cpu_features.h"
#include "core/errors.h"
#include "core/registry.h"
#include "ops/op_args.h"
#include "ops/row_kernels.h"
#include "ops/row_op.h"
#include "ops/vec_math.h"

namespace {

using ninodes::fail;
using ninodes::use_avx2;
using namespace ninodes::ops;

// ---- RMSNorm: y = x * (1 / sqrt(mean(x^2) + eps)) * w ------------------------------------------

void rms_row_scalar(const float* x, const float* w, float* y, size_t d, float eps) {
  float ss = 0.f;
  for (size_t i = 0; i < d; ++i) ss += x[i] * x[i];
  const float inv = 1.f / std::sqrt(ss / static_cast<float>(d) + eps);
  for (size_t i = 0; i < d; ++i) y[i] = w ? (x[i] * inv) * w[i] : x[i] * inv;
}

#if NINODES_HAS_X86
NINODES_TARGET_AVX2 void rms_row_avx2(const float* x, const float* w, float* y, size_t d, float eps) {
  __m256 acc = _mm256_setzero_ps();
  size_t i = 0;
  for (; i + 8 <= d; i += 8) {
    const __m256 v = _mm256_loadu_ps(x + i);
    acc = _mm256_fmadd_ps(v, v, acc);
  }
  float ss = hsum256(acc);
  for (; i < d; ++i) ss += x[i] * x[i];
  const float inv = 1.f / std::sqrt(ss / static_cast<float>(d) + eps);
  const __m256 vinv = _mm256_set1_ps(inv);
  i = 0;
  for (; i + 8 <= d; i += 8) {
    __m256 v = _mm256_mul_ps(_mm256_loadu_ps(x + i), vinv);
    if (w) v = _mm256_mul_ps(v, _mm256_loadu_ps(w + i));
    _mm256_storeu_ps(y + i, v);
  }
  for (; i < d; ++i) y[i] = w ? (x[i] * inv) * w[i] : x[i] * inv;
}
#endif

// ---- LayerNorm: two-pass mean and variance, y = (x - mean) / sqrt(var + eps) * w + b -------------

void ln_row_scalar(const float* x, const float* w, const float* b, float* y, size_t d, float eps) {
  float s = 0.f;
  for (size_t i = 0; i < d; ++i) s += x[i];
  const float mean = s / static_cast<float>(d);
  float ss = 0.f;
  for (size_t i = 0; i < d; ++i) {
    const float c = x[i] - mean;
    ss += c * c;
  }
  const float inv = 1.f / std::sqrt(ss / static_cast<float>(d) + eps);
  for (size_t i = 0; i < d; ++i) {
    float v = (x[i] - mean) * inv;
    if (w) v = v * w[i];
    if (b) v = v + b[i];
    y[i] = v;
  }
}

#if NINODES_HAS_X86
NINODES_TARGET_AVX2 void ln_row_avx2(const float* x, const float* w, const float* b, float* y, size_t d, float eps) {
  __m256 acc = _mm256_setzero_ps();
  size_t i = 0;
  for (; i + 8 <= d; i += 8) acc = _mm256_add_ps(acc, _mm256_loadu_ps(x + i));
  float s = hsum256(acc);
  for (; i < d; ++i) s += x[i];
  const float mean = s / static_cast<float>(d);
  const __m256 vmean = _mm256_set1_ps(mean);
  acc = _mm256_setzero_ps();
  i = 0;
  for (; i + 8 <= d; i += 8) {
    const __m256 c = _mm256_sub_ps(_mm256_loadu_ps(x + i), vmean);
    acc = _mm256_fmadd_ps(c, c, acc);
  }
  float ss = hsum256(acc);
  for (; i < d; ++i) {
    const float c = x[i] - mean;
    ss += c * c;
  }
  const float inv = 1.f / std::sqrt(ss / static_cast<float>(d) + eps);
  const __m256 vinv = _mm256_set1_ps(inv);
  i = 0;
  for (; i + 8 <= d; i += 8) {
    __m256 v = _mm256_mul_ps(_mm256_sub_ps(_mm256_loadu_ps(x + i), vmean), vinv);
    if (w) v = _mm256_mul_ps(v, _mm256_loadu_ps(w + i));
    if (b) v = _mm256_add_ps(v, _mm256_loadu_ps(b + i));
    _mm256_storeu_ps(y + i, v);
  }
  for (; i < d; ++i) {
    float v = (x[i] - mean) * inv;
    if (w) v = v * w[i];
    if (b) v = v + b[i];
    y[i] = v;
  }
}
#endif

// ---- softmax over the last dimension -------------------------------------------------------------

void softmax_row_scalar(const float* x, float* y, size_t d) {
  float m = -std::numeric_limits<float>::infinity();
  for (size_t i = 0; i < d; ++i) m = std::max(m, x[i]);
  float s = 0.f;
  for (size_t i = 0; i < d; ++i) {
    y[i] = std::exp(x[i] - m);
    s += y[i];
  }
  const float inv = 1.f / s;
  for (size_t i = 0; i < d; ++i) y[i] *= inv;
}

#if NINODES_HAS_X86
NINODES_TARGET_AVX2 void softmax_row_avx2(const float* x, float* y, size_t d) {
  const float ninf = -std::numeric_limits<float>::infinity();
  __m256 vm = _mm256_set1_ps(ninf);
  size_t i = 0;
  for (; i + 8 <= d; i += 8) vm = _mm256_max_ps(vm, _mm256_loadu_ps(x + i));
  float m = hmax256(vm);
  for (; i < d; ++i) m = std::max(m, x[i]);
  const __m256 vmax = _mm256_set1_ps(m);
  __m256 acc = _mm256_setzero_ps();
  i = 0;
  for (; i + 8 <= d; i += 8) {
    const __m256 e = exp256(_mm256_sub_ps(_mm256_loadu_ps(x + i), vmax));
    _mm256_storeu_ps(y + i, e);
    acc = _mm256_add_ps(acc, e);
  }
  if (i < d) {
    const __m256i mask = tail_mask(d - i);
    const __m256 v = _mm256_maskload_ps(x + i, mask);
    __m256 e = exp256(_mm256_sub_ps(v, vmax));
    e = _mm256_and_ps(e, _mm256_castsi256_ps(mask));
    _mm256_maskstore_ps(y + i, mask, e);
    acc = _mm256_add_ps(acc, e);
  }
  const float s = hsum256(acc);
  const __m256 vinv = _mm256_set1_ps(1.f / s);
  i = 0;
  for (; i + 8 <= d; i += 8) _mm256_storeu_ps(y + i, _mm256_mul_ps(_mm256_loadu_ps(y + i), vinv));
  const float inv = 1.f / s;
  for (; i < d; ++i) y[i] *= inv;
}
#endif

// The per-row dispatch of each op to its AVX2 or scalar kernel.
void layer_norm_row(const float* x, const float* w, const float* b, float* y, size_t d, float eps, bool avx2) {
#if NINODES_HAS_X86
  if (avx2) return ln_row_avx2(x, w, b, y, d, eps);
#endif
  (void)avx2;
  ln_row_scalar(x, w, b, y, d, eps);
}

void softmax_row(const float* x, float* y, size_t d, bool avx2) {
#if NINODES_HAS_X86
  if (avx2) return softmax_row_avx2(x, y, d);
#endif
  (void)avx2;
  softmax_row_scalar(x, y, d);
}

}  // namespace

void ninodes::ops::rms_norm_row(const float* x, const float* w, float* y, size_t d, float eps, bool avx2) {
#if NINODES_HAS_X86
  if (avx2) return rms_row_avx2(x, w, y, d, eps);
#endif
  (void)avx2;
  rms_row_scalar(x, w, y, d, eps);
}

namespace {

Napi::Value rms_norm(const Napi::CallbackInfo& info) {
  return ninodes::guarded(info, [](const Napi::CallbackInfo& info) -> Napi::Value {
    const char* op = "rmsNorm";
    const F32Arg x = f32_arg(info, 0, op, "x");
    const F32Arg w = f32_arg(info, 1, op, "weight", true);
    const F32Arg y = f32_arg(info, 2, op, "out");
    const RowShape s = row_shape(info, 3, op, x, y, "out");
    const float eps = static_cast<float>(ninodes::args::number(info, 5, "eps"));
    const float* wp = column_vector(w, s.dim, op, "weight");
    const bool avx2 = use_avx2();
    for_each_row(s, 0, [&](size_t r, float*) { rms_norm_row(x.data + r * s.dim, wp, y.data + r * s.dim, s.dim, eps, avx2); });
    return info.Env().Undefined();
  });
}

Napi::Value layer_norm(const Napi::CallbackInfo& info) {
  return ninodes::guarded(info, [](const Napi::CallbackInfo& info) -> Napi::Value {
    const char* op = "layerNorm";
    const F32Arg x = f32_arg(info, 0, op, "x");
    const F32Arg w = f32_arg(info, 1, op, "weight", true);
    const F32Arg b = f32_arg(info, 2, op, "bias", true);
    const F32Arg y = f32_arg(info, 3, op, "out");
    const RowShape s = row_shape(info, 4, op, x, y, "out");
    const float eps = static_cast<float>(ninodes::args::number(info, 6, "eps"));
    const float* wp = column_vector(w, s.dim, op, "weight");
    const float* bp = column_vector(b, s.dim, op, "bias");
    const bool avx2 = use_avx2();
    for_each_row(s, 0, [&](size_t r, float*) { layer_norm_row(x.data + r * s.dim, wp, bp, y.data + r * s.dim, s.dim, eps, avx2); });
    return info.Env().Undefined();
  });
}

Napi::Value softmax(const Napi::CallbackInfo& info) {
  return ninodes::guarded(info, [](const Napi::CallbackInfo& info) -> Napi::Value {
    const char* op = "softmax";
    const F32Arg x = f32_arg(info, 0, op, "x");
    const F32Arg y = f32_arg(info, 1, op, "out");
    const RowShape s = row_shape(info, 2, op, x, y, "out");
    const bool avx2 = use_avx2();
    for_each_row(s, 0, [&](size_t r, float*) { softmax_row(x.data + r * s.dim, y.data + r * s.dim, s.dim, avx2); });
    return info.Env().Undefined();
  });
}

}  // namespace

NINODES_MODULE(norms) {
  exports.Set("rmsNormF32", Napi::Function::New(env, rms_norm, "rmsNormF32"));
  exports.Set("layerNormF32", Napi::Function::New(env, layer_norm, "layerNormF32"));
  exports.Set("softmaxF32", Napi::Function::New(env, softmax, "softmaxF32"));
}
