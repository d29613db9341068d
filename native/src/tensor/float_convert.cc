// Element dtype conversions (cast), fp8 encode (PyTorch cast, comfy-kitchen clamp-then-cast, optional
// stochastic rounding) and fp8 decode. Every element is computed independently, so the result does
// not depend on the thread count or the SIMD path.
#include <napi.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <mutex>
#include <string>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "core/async.h"
#include "core/cpu_features.h"
#include "core/errors.h"
#include "core/registry.h"
#include "core/thread_pool.h"
#include "ops/span_args.h"
#include "tensor/float_codecs.h"
#include "tensor/float_convert.h"

namespace ninodes {
namespace {

constexpr size_t kGrain = 1 << 16;

enum class Kind { f32, f16, bf16, e4m3fn, e5m2, i8, u8, i32 };

Kind kind_of(const std::string& name, const char* what) {
  if (name == "f32") return Kind::f32;
  if (name == "f16") return Kind::f16;
  if (name == "bf16") return Kind::bf16;
  if (name == "f8_e4m3fn") return Kind::e4m3fn;
  if (name == "f8_e5m2") return Kind::e5m2;
  if (name == "i8") return Kind::i8;
  if (name == "u8") return Kind::u8;
  if (name == "i32") return Kind::i32;
  fail("DTYPE_MISMATCH", std::string(what) + ": unsupported dtype '" + name + "'");
}

size_t size_of(Kind k) {
  switch (k) {
    case Kind::f32:
    case Kind::i32:
      return 4;
    case Kind::f16:
    case Kind::bf16:
      return 2;
    default:
      return 1;
  }
}

#if NINODES_HAS_X86
NINODES_TARGET_AVX2 void f32_to_f16_avx2(const float* src, uint16_t* dst, size_t n) {
  size_t i = 0;
  const __m256i sign_mask = _mm256_set1_epi32(0x8000);
  const __m256i nan_bits = _mm256_set1_epi32(0x7E00);
  for (; i + 8 <= n; i += 8) {
    const __m256 v = _mm256_loadu_ps(src + i);
    const __m128i h = _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    const __m256 nan = _mm256_cmp_ps(v, v, _CMP_UNORD_Q);
    if (_mm256_movemask_ps(nan) == 0) {
      _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i), h);
      continue;
    }
    // PyTorch's half NaN is sign | 0x7E00, F16C keeps the payload: patch the NaN lanes.
    const __m256i canon = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi32(_mm256_castps_si256(v), 16), sign_mask), nan_bits);
    const __m128i canon16 = _mm_packus_epi32(_mm256_castsi256_si128(canon), _mm256_extracti128_si256(canon, 1));
    const __m256i m = _mm256_castps_si256(nan);
    const __m128i mask16 = _mm_packs_epi32(_mm256_castsi256_si128(m), _mm256_extracti128_si256(m, 1));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i), _mm_blendv_epi8(h, canon16, mask16));
  }
  for (; i < n; ++i) dst[i] = codec::f32_to_f16(src[i]);
}

NINODES_TARGET_AVX2 void f16_to_f32_avx2(const uint16_t* src, float* dst, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i))));
  }
  for (; i < n; ++i) dst[i] = codec::f16_to_f32(src[i]);
}

NINODES_TARGET_AVX2 void f32_to_bf16_avx2(const float* src, uint16_t* dst, size_t n) {
  size_t i = 0;
  const __m256i round = _mm256_set1_epi32(0x7FFF);
  const __m256i one = _mm256_set1_epi32(1);
  const __m256i canon = _mm256_set1_epi32(0x7FC0);
  for (; i + 16 <= n; i += 16) {
    __m256i out[2];
    for (int h = 0; h < 2; ++h) {
      const __m256 v = _mm256_loadu_ps(src + i + 8 * h);
      const __m256i x = _mm256_castps_si256(v);
      const __m256i odd = _mm256_and_si256(_mm256_srli_epi32(x, 16), one);
      __m256i r = _mm256_srli_epi32(_mm256_add_epi32(_mm256_add_epi32(x, round), odd), 16);
      r = _mm256_blendv_epi8(r, canon, _mm256_castps_si256(_mm256_cmp_ps(v, v, _CMP_UNORD_Q)));
      out[h] = r;
    }
    const __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi32(out[0], out[1]), 0xD8);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + i), packed);
  }
  for (; i < n; ++i) dst[i] = codec::f32_to_bf16(src[i]);
}

NINODES_TARGET_AVX2 void bf16_to_f32_avx2(const uint16_t* src, float* dst, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i)));
    _mm256_storeu_ps(dst + i, _mm256_castsi256_ps(_mm256_slli_epi32(w, 16)));
  }
  for (; i < n; ++i) dst[i] = codec::bf16_to_f32(src[i]);
}
#endif

void to_f32(Kind from, const uint8_t* src, float* dst, size_t n) {
  switch (from) {
    case Kind::f32:
      std::memcpy(dst, src, n * 4);
      return;
    case Kind::f16: {
      const auto* s = reinterpret_cast<const uint16_t*>(src);
#if NINODES_HAS_X86
      if (use_avx2()) return f16_to_f32_avx2(s, dst, n);
#endif
      for (size_t i = 0; i < n; ++i) dst[i] = codec::f16_to_f32(s[i]);
      return;
    }
    case Kind::bf16: {
      const auto* s = reinterpret_cast<const uint16_t*>(src);
#if NINODES_HAS_X86
      if (use_avx2()) return bf16_to_f32_avx2(s, dst, n);
#endif
      for (size_t i = 0; i < n; ++i) dst[i] = codec::bf16_to_f32(s[i]);
      return;
    }
    case Kind::e4m3fn:
      for (size_t i = 0; i < n; ++i) dst[i] = codec::e4m3fn_to_f32(src[i]);
      return;
    case Kind::e5m2:
      for (size_t i = 0; i < n; ++i) dst[i] = codec::e5m2_to_f32(src[i]);
      return;
    case Kind::i8:
      for (size_t i = 0; i < n; ++i) dst[i] = static_cast<float>(reinterpret_cast<const int8_t*>(src)[i]);
      return;
    case Kind::u8:
      for (size_t i = 0; i < n; ++i) dst[i] = static_cast<float>(src[i]);
      return;
    case Kind::i32:
      for (size_t i = 0; i < n; ++i) dst[i] = static_cast<float>(reinterpret_cast<const int32_t*>(src)[i]);
      return;
  }
}

void from_f32(Kind to, const float* src, uint8_t* dst, size_t n) {
  auto* d16 = reinterpret_cast<uint16_t*>(dst);
  switch (to) {
    case Kind::f32:
      std::memcpy(dst, src, n * 4);
      return;
    case Kind::f16:
#if NINODES_HAS_X86
      if (use_avx2()) return f32_to_f16_avx2(src, d16, n);
#endif
      for (size_t i = 0; i < n; ++i) d16[i] = codec::f32_to_f16(src[i]);
      return;
    case Kind::bf16:
#if NINODES_HAS_X86
      if (use_avx2()) return f32_to_bf16_avx2(src, d16, n);
#endif
      for (size_t i = 0; i < n; ++i) d16[i] = codec::f32_to_bf16(src[i]);
      return;
    default:
      fail("DTYPE_MISMATCH", "cast: target dtype must be f32, f16 or bf16");
  }
}

// The checked arguments of castElements / castElementsAsync.
struct CastArgs {
  args::Bytes src;
  Kind from;
  args::Bytes dst;
  Kind to;
  size_t n;
};

CastArgs cast_args(const Napi::CallbackInfo& info) {
    const args::Bytes src = args::bytes(info, 0, "cast source");
    const Kind from = kind_of(args::string(info, 1, "cast source dtype"), "cast source");
    const args::Bytes dst = args::bytes(info, 2, "cast target");
    const Kind to = kind_of(args::string(info, 3, "cast target dtype"), "cast target");
    const size_t n = args::dim(info, 4, "cast element count");
    if (to != Kind::f32 && to != Kind::f16 && to != Kind::bf16) fail("DTYPE_MISMATCH", "cast: target dtype must be f32, f16 or bf16");
    if (src.size != args::mul(n, size_of(from), "cast source")) fail("SHAPE_MISMATCH", "cast: source byte length does not match the element count");
    if (dst.size != args::mul(n, size_of(to), "cast target")) fail("SHAPE_MISMATCH", "cast: target byte length does not match the element count");
    if (reinterpret_cast<uintptr_t>(src.data) % size_of(from) != 0 || reinterpret_cast<uintptr_t>(dst.data) % size_of(to) != 0) {
      fail("MISALIGNED_STORAGE", "cast: storage is not aligned to its element size");
    }
    return {src, from, dst, to, n};
}

void cast_elements(const CastArgs& a) {
    const args::Bytes& src = a.src;
    const args::Bytes& dst = a.dst;
    const Kind from = a.from;
    const Kind to = a.to;
    const size_t n = a.n;
    parallel_for(n, kGrain, [&](size_t b, size_t e) {
      if (to == Kind::f32) return to_f32(from, src.data + b * size_of(from), reinterpret_cast<float*>(dst.data) + b, e - b);
      if (from == Kind::f32) return from_f32(to, reinterpret_cast<const float*>(src.data) + b, dst.data + b * size_of(to), e - b);
      float tmp[1024];
      for (size_t i = b; i < e; i += 1024) {
        const size_t m = std::min<size_t>(1024, e - i);
        to_f32(from, src.data + i * size_of(from), tmp, m);
        from_f32(to, tmp, dst.data + i * size_of(to), m);
      }
    });
}

// cast(src, srcDtype, dst, dstDtype, n)
Napi::Value cast(const Napi::CallbackInfo& info) {
  return guarded(info, [](const Napi::CallbackInfo& info) -> Napi::Value {
    cast_elements(cast_args(info));
    return info.Env().Undefined();
  });
}

// castElementsAsync(src, srcDtype, dst, dstDtype, n): the same conversion on a worker thread (a
// weight converted while the model computes); the same bits as castElements.
Napi::Value cast_async(const Napi::CallbackInfo& info) {
  return guarded(info, [](const Napi::CallbackInfo& info) -> Napi::Value {
    const CastArgs a = cast_args(info);
    return AsyncOp::start(info.Env(), "ninodes.castElements", [a]() { cast_elements(a); }, [](Napi::Env env) { return env.Undefined(); }, {info[0], info[2]});
  });
}

struct Fp8Format {
  bool e4m3;
  float max;
  uint8_t (*encode)(float);
  float (*decode)(uint8_t);
};

Fp8Format fp8_format(const std::string& name) {
  if (name == "f8_e4m3fn") return {true, 448.0f, codec::f32_to_e4m3fn, codec::e4m3fn_to_f32};
  if (name == "f8_e5m2") return {false, 57344.0f, codec::f32_to_e5m2, codec::e5m2_to_f32};
  fail("DTYPE_MISMATCH", "fp8 format must be 'f8_e4m3fn' or 'f8_e5m2', got '" + name + "'");
}

// Rounds |v| (finite, <= max) to one of its two fp8 neighbours, up with probability equal to the
// distance from the lower one. All arithmetic is exact in double, so the TS reference matches.
uint8_t stochastic_encode(const Fp8Format& fmt, float v, uint32_t seed, uint64_t index) {
  if (std::isnan(v)) return fmt.encode(v);
  const uint8_t sign = std::signbit(v) ? 0x80 : 0;
  float mag = std::fabs(v);
  if (mag >= fmt.max) return static_cast<uint8_t>(sign | fmt.encode(fmt.max));
  uint8_t code = fmt.encode(mag);
  const float d = fmt.decode(code);
  if (d == mag) return static_cast<uint8_t>(sign | code);
  const uint8_t lo = d < mag ? code : static_cast<uint8_t>(code - 1);
  const double dlo = fmt.decode(lo);
  const double dhi = fmt.decode(static_cast<uint8_t>(lo + 1));
  const double u = static_cast<double>(codec::element_hash(seed, index) >> 8) * (1.0 / 16777216.0);
  const bool up = u * (dhi - dlo) < static_cast<double>(mag) - dlo;
  return static_cast<uint8_t>(sign | (up ? lo + 1 : lo));
}

// The checked arguments of encodeFp8 / encodeFp8Async.
struct EncodeFp8Args {
  const float* x;
  uint8_t* y;
  size_t n;
  Fp8Format fmt;
  bool scaled;
  float inv;
  bool clamp;
  bool stochastic;
  uint32_t seed;
};

EncodeFp8Args encode_fp8_args(const Napi::CallbackInfo& info) {
    const args::Bytes src = args::bytes(info, 0, "encodeFp8 input");
    const args::Bytes dst = args::bytes(info, 1, "encodeFp8 output");
    const size_t n = args::dim(info, 2, "encodeFp8 element count");
    const Fp8Format fmt = fp8_format(args::string(info, 3, "encodeFp8 format"));
    const double scale = args::number(info, 4, "encodeFp8 scale");
    const bool clamp = args::boolean(info, 5, "encodeFp8 clamp");
    const bool stochastic = args::boolean(info, 6, "encodeFp8 stochastic");
    const double seed = args::number(info, 7, "encodeFp8 seed");
    const float* x = args::as<float>(src, n, "encodeFp8 input");
    uint8_t* y = args::as<uint8_t>(dst, n, "encodeFp8 output");
    const bool scaled = !std::isnan(scale);
    if (scaled && !(std::isfinite(scale) && scale > 0)) fail("INVALID_ARGUMENT", "encodeFp8: scale must be a positive finite number");
    if (!(seed >= 0 && seed <= 4294967295.0 && seed == std::floor(seed))) fail("INVALID_ARGUMENT", "encodeFp8: seed must be an integer in 0..2^32-1");
    // comfy-kitchen: x * (1 / scale) with the reciprocal taken in float32.
    const float inv = scaled ? 1.0f / static_cast<float>(scale) : 1.0f;
    return {x, y, n, fmt, scaled, inv, clamp, stochastic, static_cast<uint32_t>(seed)};
}

void encode_fp8_elements(const EncodeFp8Args& a) {
    parallel_for(a.n, kGrain, [&](size_t b, size_t e) {
      for (size_t i = b; i < e; ++i) {
        float v = a.scaled ? a.x[i] * a.inv : a.x[i];
        if (a.clamp && !std::isnan(v)) v = v < -a.fmt.max ? -a.fmt.max : (v > a.fmt.max ? a.fmt.max : v);
        a.y[i] = a.stochastic ? stochastic_encode(a.fmt, v, a.seed, i) : a.fmt.encode(v);
      }
    });
}

// encodeFp8(src f32, dst u8, n, format, scale (NaN = none), clamp, stochastic, seed)
Napi::Value encode_fp8(const Napi::CallbackInfo& info) {
  return guarded(info, [](const Napi::CallbackInfo& info) -> Napi::Value {
    encode_fp8_elements(encode_fp8_args(info));
    return info.Env().Undefined();
  });
}

// encodeFp8Async(...the arguments of encodeFp8): the same encoding on a worker thread (a streamed
// weight converted to fp8 while the model computes); the same bits.
Napi::Value encode_fp8_async(const Napi::CallbackInfo& info) {
  return guarded(info, [](const Napi::CallbackInfo& info) -> Napi::Value {
    const EncodeFp8Args a = encode_fp8_args(info);
    return AsyncOp::start(info.Env(), "ninodes.encodeFp8", [a]() { encode_fp8_elements(a); }, [](Napi::Env env) { return env.Undefined(); }, {info[0], info[1]});
  });
}

// absMaxAsync(src f32, n): Promise<number>, max |x| on a worker thread (0 when empty, NaN when any
// element is NaN, infinity kept): the input of a per-tensor scale. max is exact and associative,
// so the value does not depend on how the pool splits the range.
Napi::Value abs_max_async(const Napi::CallbackInfo& info) {
  return guarded(info, [](const Napi::CallbackInfo& info) -> Napi::Value {
    const args::Bytes src = args::bytes(info, 0, "absMax input");
    const size_t n = args::dim(info, 1, "absMax element count");
    const float* x = args::as<float>(src, n, "absMax input");
    auto result = std::make_shared<float>(0.0f);
    return AsyncOp::start(
        info.Env(), "ninodes.absMax",
        [x, n, result]() {
          std::mutex lock;
          float hi = 0.0f;
          bool nan = false;
          parallel_for(n, kGrain, [&](size_t b, size_t e) {
            float m = 0.0f;
            bool seen_nan = false;
            for (size_t i = b; i < e; ++i) {
              const float v = std::fabs(x[i]);
              if (v > m) m = v;
              else if (std::isnan(v)) seen_nan = true;
            }
            std::lock_guard<std::mutex> guard(lock);
            if (m > hi) hi = m;
            nan = nan || seen_nan;
          });
          *result = nan ? std::numeric_limits<float>::quiet_NaN() : hi;
        },
        [result](Napi::Env env) { return Napi::Number::New(env, static_cast<double>(*result)); }, {info[0]});
  });
}

// decodeFp8(src u8, dst f32, n, format, scale (NaN = none))
Napi::Value decode_fp8(const Napi::CallbackInfo& info) {
  return guarded(info, [](const Napi::CallbackInfo& info) -> Napi::Value {
    const args::Bytes src = args::bytes(info, 0, "decodeFp8 input");
    const args::Bytes dst = args::bytes(info, 1, "decodeFp8 output");
    const size_t n = args::dim(info, 2, "decodeFp8 element count");
    const Fp8Format fmt = fp8_format(args::string(info, 3, "decodeFp8 format"));
    const double scale = args::number(info, 4, "decodeFp8 scale");
    const uint8_t* x = args::as<uint8_t>(src, n, "decodeFp8 input");
    float* y = args::as<float>(dst, n, "decodeFp8 output");
    const bool scaled = !std::isnan(scale);
    if (scaled && !std::isfinite(scale)) fail("INVALID_ARGUMENT", "decodeFp8: scale must be finite");
    float table[256];
    for (int b = 0; b < 256; ++b) {
      const float v = fmt.decode(static_cast<uint8_t>(b));
      table[b] = scaled ? v * static_cast<float>(scale) : v;
    }
    parallel_for(n, kGrain, [&](size_t b, size_t e) {
      for (size_t i = b; i < e; ++i) y[i] = table[x[i]];
    });
    return info.Env().Undefined();
  });
}

}  // namespace

void f32_to_bf16_n(const float* src, uint16_t* dst, size_t n) { from_f32(Kind::bf16, src, reinterpret_cast<uint8_t*>(dst), n); }

}  // namespace ninodes

NINODES_MODULE(float_convert) {
  exports.Set("castElements", Napi::Function::New(env, ninodes::cast, "castElements"));
  exports.Set("castElementsAsync", Napi::Function::New(env, ninodes::cast_async, "castElementsAsync"));
  exports.Set("encodeFp8", Napi::Function::New(env, ninodes::encode_fp8, "encodeFp8"));
  exports.Set("encodeFp8Async", Napi::Function::New(env, ninodes::encode_fp8_async, "encodeFp8Async"));
  exports.Set("absMaxAsync", Napi::Function::New(env, ninodes::abs_max_async, "absMaxAsync"));
  exports.Set("decodeFp8", Napi::Function::New(env, ninodes::decode_fp8, "decodeFp8"));
}
