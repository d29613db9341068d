// Elementwise fp32 kernels: SiLU, GELU (tanh), SwiGLU, add / mul / addcmul with suffix
// broadcasting, modulation x*(1+scale)+shift, and scaling.
//
// Every output element depends only on its own inputs, so any split over threads gives the same
// bits. Activations use the AVX2 exp when the CPU has it; the binary ops are plain loops that the
// compiler vectorizes once per SIMD path.
#include <napi.h>

#include <cmath>

#include "core/cpu_features.h"
#include "core/errors.h"
#include "core/registry.h"
#include "core/thread_pool.h"
#include "ops/op_args.h"
#include "ops/row_kernels.h"
#include "ops/vec_math.h"

namespace {

using ninodes::fail;
using ninodes::use_avx2;
using namespace ninodes::ops;

constexpr size_t kGrain = 32768;

// ---- activations ---------------------------------------------------------------------------------

enum class Act { kSilu, kGelu };

// gelu_tanh(x) = 0.5 x (1 + tanh(u)) = x / (1 + exp(-2u)), u = sqrt(2/pi) (x + 0.044715 x^3);
// the second form has no cancellation for negative x.
inline float act_scalar(Act act, float x) {
  if (act == Act::kSilu) return x / (1.f + std::exp(-x));
  const float u = 0.7978845608028654f * (x + 0.044715f * x * x * x);
  return x / (1.f + std::exp(-2.f * u));
}

#if NINODES_HAS_X86
NINODES_TARGET_AVX2 inline __m256 act_avx2(Act act, __m256 x) {
  const __m256 one = _mm256_set1_ps(1.f);
  if (act == Act::kSilu) {
    const __m256 e = exp256(_mm256_sub_ps(_mm256_setzero_ps(), x));
    return _mm256_div_ps(x, _mm256_add_ps(one, e));
  }
  const __m256 x3 = _mm256_mul_ps(_mm256_mul_ps(x, x), x);
  const __m256 inner = _mm256_fmadd_ps(_mm256_set1_ps(0.044715f), x3, x);
  const __m256 m2u = _mm256_mul_ps(_mm256_set1_ps(-2.f * 0.7978845608028654f), inner);
  return _mm256_div_ps(x, _mm256_add_ps(one, exp256(m2u)));
}

NINODES_TARGET_AVX2 void act_range_avx2(Act act, const float* x, float* y, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, act_avx2(act, _mm256_loadu_ps(x + i)));
  if (i < n) {
    const __m256i mask = tail_mask(n - i);
    _mm256_maskstore_ps(y + i, mask, act_avx2(act, _mm256_maskload_ps(x + i, mask)));
  }
}

// out[i] = silu(gate[i]) * up[i]
NINODES_TARGET_AVX2 void swiglu_range_avx2(const float* gate, const float* up, float* y, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    _mm256_storeu_ps(y + i, _mm256_mul_ps(act_avx2(Act::kSilu, _mm256_loadu_ps(gate + i)), _mm256_loadu_ps(up + i)));
  }
  if (i < n) {
    const __m256i mask = tail_mask(n - i);
    const __m256 g = act_avx2(Act::kSilu, _mm256_maskload_ps(gate + i, mask));
    _mm256_maskstore_ps(y + i, mask, _mm256_mul_ps(g, _mm256_maskload_ps(up + i, mask)));
  }
}
#endif

void act_range(Act act, const float* x, float* y, size_t n) {
#if NINODES_HAS_X86
  if (use_avx2()) return act_range_avx2(act, x, y, n);
#endif
  for (size_t i = 0; i < n; ++i) y[i] = act_scalar(act, x[i]);
}

Napi::Value activation(const Napi::CallbackInfo& info, Act act, const char* op) {
  const F32Arg x = f32_arg(info, 0, op, "x");
  const F32Arg y = f32_arg(info, 1, op, "out");
  expect_length(y, x.length, op, "out");
  ninodes::parallel_for(x.length, kGrain, [&](size_t b, size_t e) { act_range(act, x.data + b, y.data + b, e - b); });
  return info.Env().Undefined();
}

Napi::Value silu(const Napi::CallbackInfo& info) {
  return ninodes::guarded(info, [](const Napi::CallbackInfo& info) { return activation(info, Act::kSilu, "silu"); });
}

Napi::Value gelu(const Napi::CallbackInfo& info) {
  return ninodes::guarded(info, [](const Napi::CallbackInfo& info) { return activation(info, Act::kGelu, "gelu"); });
}

Napi::Value swiglu(const Napi::CallbackInfo& info) {
  return ninodes::guarded(info, [](const Napi::CallbackInfo& info) -> Napi::Value {
    const char* op = "swiglu";
    const F32Arg x = f32_arg(info, 0, op, "x");
    const F32Arg y = f32_arg(info, 1, op, "out");
    const size_t rows = ninodes::args::dim(info, 2, "rows");
    const size_t f = ninodes::args::dim(info, 3, "features");
    expect_length(x, ninodes::args::mul(rows, ninodes::args::mul(f, 2, op), op), op, "x");
    expect_length(y, ninodes::args::mul(rows, f, op), op, "out");
    if (y.length == 0) return info.Env().Undefined();
    const bool avx2 = use_avx2();
    ninodes::parallel_for(rows, std::max<size_t>(1, kGrain / std::max<size_t>(f, 1)), [&](size_t r0, size_t r1) {
      for (size_t r = r0; r < r1; ++r) {
        const float* gate = x.data + r * 2 * f;
        const float* up = gate + f;
        float* out = y.data + r * f;
#if NINODES_HAS_X86
        if (avx2) {
          swiglu_range_avx2(gate, up, out, f);
          continue;
        }
#endif
        for (size_t i = 0; i < f; ++i) out[i] = act_scalar(Act::kSilu, gate[i]) * up[i];
      }
    });
    return info.Env().Undefined();
  });
}

// ---- binary ops with a periodic (suffix-broadcast) right operand --------------------------------

enum class Bin { kAdd, kMul };

template <Bin B>
[[gnu::always_inline]] inline void bin_seg(const float* __restrict a, const float* __restrict b, float* __restrict y, size_t n) {
  for (size_t i = 0; i < n; ++i) y[i] = B == Bin::kAdd ? a[i] + b[i] : a[i] * b[i];
}

[[gnu::always_inline]] inline void addcmul_seg(const float* __restrict x, const float* __restrict a, const float* __restrict b,
                                                 float* __restrict y, size_t n) {
  for (size_t i = 0; i < n; ++i) y[i] = x[i] + a[i] * b[i];
}

[[gnu::always_inline]] inline void modulate_seg(const float* __restrict x, const float* __restrict shift,
                                                  const float* __restrict scale, float* __restrict y, size_t n) {
  for (size_t i = 0; i < n; ++i) y[i] = x[i] * (1.f + scale[i]) + shift[i];
}

[[gnu::always_inline]] inline void scale_seg(const float* __restrict x, float s, float* __restrict y, size_t n) {
  for (size_t i = 0; i < n; ++i) y[i] = x[i] * s;
}

template <Bin B>
void bin_seg_base(const float* a, const float* b, float* y, size_t n) { bin_seg<B>(a, b, y, n); }
void addcmul_base(const float* x, const float* a, const float* b, float* y, size_t n) { addcmul_seg(x, a, b, y, n); }
void modulate_base(const float* x, const float* sh, const float* sc, float* y, size_t n) { modulate_seg(x, sh, sc, y, n); }
void scale_base(const float* x, float s, float* y, size_t n) { scale_seg(x, s, y, n); }
#if NINODES_HAS_X86
template <Bin B>
NINODES_TARGET_AVX2 void bin_seg_avx2(const float* a, const float* b, float* y, size_t n) { bin_seg<B>(a, b, y, n); }
NINODES_TARGET_AVX2 void addcmul_avx2(const float* x, const float* a, const float* b, float* y, size_t n) { addcmul_seg(x, a, b, y, n); }
NINODES_TARGET_AVX2 void modulate_avx2(const float* x, const float* sh, const float* sc, float* y, size_t n) {
  modulate_seg(x, sh, sc, y, n);
}
NINODES_TARGET_AVX2 void scale_avx2(const float* x, float s, float* y, size_t n) { scale_seg(x, s, y, n); }
#endif

}  // namespace

void ninodes::ops::modulate_run(const float* x, const float* shift, const float* scale, float* y, size_t n, bool avx2) {
#if NINODES_HAS_X86
  if (avx2) return modulate_avx2(x, shift, scale, y, n);
#endif
  (void)avx2;
  modulate_base(x, shift, scale, y, n);
}

namespace {

// Calls fn(offset, length, period_offset) over [begin, end) cut at multiples of `period`, so each
// call sees contiguous runs of both the full operand and the periodic one.
template <typename Fn>
void periodic_segments(size_t begin, size_t end, size_t period, Fn&& fn) {
  size_t i = begin;
  size_t j = period == 0 ? 0 : begin % period;
  while (i < end) {
    const size_t len = std::min(end - i, period - j);
    fn(i, len, j);
    i += len;
    j = 0;
  }
}

void check_period(const F32Arg& full, const F32Arg& part, const char* op, const char* name) {
  if (part.length == 0 ? full.length != 0 : full.length % part.length != 0) {
    fail("SHAPE_MISMATCH", std::string(op) + ": '" + name + "' (" + std::to_string(part.length) +
                               " elements) does not broadcast over " + std::to_string(full.length) + " elements");
  }
}

template <Bin B>
Napi::Value binary(const Napi::CallbackInfo& info, const char* op) {
  const F32Arg a = f32_arg(info, 0, op, "a");
  const F32Arg b = f32_arg(info, 1, op, "b");
  const F32Arg y = f32_arg(info, 2, op, "out");
  check_period(a, b, op, "b");
  expect_length(y, a.length, op, "out");
  const bool avx2 = use_avx2();
  ninodes::parallel_for(a.length, kGrain, [&](size_t begin, size_t end) {
    periodic_segments(begin, end, b.length, [&](size_t i, size_t len, size_t j) {
#if NINODES_HAS_X86
      if (avx2) return bin_seg_avx2<B>(a.data + i, b.data + j, y.data + i, len);
#endif
      bin_seg_base<B>(a.data + i, b.data + j, y.data + i, len);
    });
  });
  return info.Env().Undefined();
}

Napi::Value add(const Napi::CallbackInfo& info) {
  return ninodes::guarded(info, [](const Napi::CallbackInfo& info) { return binary<Bin::kAdd>(info, "add"); });
}

Napi::Value mul(const Napi::CallbackInfo& info) {
  return ninodes::guarded(info, [](const Napi::CallbackInfo& info) { return binary<Bin::kMul>(info, "mul"); });
}

// addcmul(x, a, b) and modulate(x, shift, scale): both side operands share one period.
Napi::Value ternary(const Napi::CallbackInfo& info, bool modulate, const char* op) {
  const F32Arg x = f32_arg(info, 0, op, "x");
  const F32Arg a = f32_arg(info, 1, op, modulate ? "shift" : "a");
  const F32Arg b = f32_arg(info, 2, op, modulate ? "scale" : "b");
  const F32Arg y = f32_arg(info, 3, op, "out");
  check_period(x, a, op, modulate ? "shift" : "a");
  expect_length(b, a.length, op, modulate ? "scale" : "b");
  expect_length(y, x.length, op, "out");
  const bool avx2 = use_avx2();
  ninodes::parallel_for(x.length, kGrain, [&](size_t begin, size_t end) {
    periodic_segments(begin, end, a.length, [&](size_t i, size_t len, size_t j) {
#if NINODES_HAS_X86
      if (avx2) {
        if (modulate) return modulate_avx2(x.data + i, a.data + j, b.data + j, y.data + i, len);
        return addcmul_avx2(x.data + i, a.data + j, b.data + j, y.data + i, len);
      }
#endif
      if (modulate) return modulate_base(x.data + i, a.data + j, b.data + j, y.data + i, len);
      addcmul_base(x.data + i, a.data + j, b.data + j, y.data + i, len);
    });
  });
  return info.Env().Undefined();
}

Napi::Value addcmul(const Napi::CallbackInfo& info) {
  return ninodes::guarded(info, [](const Napi::CallbackInfo& info) { return ternary(info, false, "addcmul"); });
}

Napi::Value modulate(const Napi::CallbackInfo& info) {
  return ninodes::guarded(info, [](const Napi::CallbackInfo& info) { return ternary(info, true, "modulate"); });
}

Napi::Value scale(const Napi::CallbackInfo& info) {
  return ninodes::guarded(info, [](const Napi::CallbackInfo& info) -> Napi::Value {
    const char* op = "scale";
    const F32Arg x = f32_arg(info, 0, op, "x");
    const float s = static_cast<float>(ninodes::args::number(info, 1, "s"));
    const F32Arg y = f32_arg(info, 2, op, "out");
    expect_length(y, x.length, op, "out");
    const bool avx2 = use_avx2();
    ninodes::parallel_for(x.length, kGrain, [&](size_t b, size_t e) {
#if NINODES_HAS_X86
      if (avx2) return scale_avx2(x.data + b, s, y.data + b, e - b);
#endif
      scale_base(x.data + b, s, y.data + b, e - b);
    });
    return info.Env().Undefined();
  });
}

}  // namespace

NINODES_MODULE(elementwise) {
  exports.Set("siluF32", Napi::Function::New(env, silu, "siluF32"));
  exports.Set("geluTanhF32", Napi::Function::New(env, gelu, "geluTanhF32"));
  exports.Set("swigluF32", Napi::Function::New(env, swiglu, "swigluF32"));
  exports.Set("addF32", Napi::Function::New(env, add, "addF32"));
  exports.Set("mulF32", Napi::Function::New(env, mul, "mulF32"));
  exports.Set("addcmulF32", Napi::Function::New(env, addcmul, "addcmulF32"));
  exports.Set("modulateF32", Napi::Function::New(env, modulate, "modulateF32"));
  exports.Set("scaleF32", Napi::Function::New(env, scale, "scaleF32"));
}
