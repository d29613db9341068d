// GCC 12's AVX-512 headers start several intrinsics from _mm512_undefined_*(), which trips this
// warning in every caller (a known false positive); nothing here reads an undefined value.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include "ops/hadamard.h"

#include <napi.h>

#include <cmath>
#include <cstring>
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

namespace ninodes {
namespace {

int log_base(size_t n, size_t base) {
  int p = 0;
  while (n > 1) {
    if (n % base != 0) return -1;
    n /= base;
    ++p;
  }
  return p;
}

// One radix-4 stage of the regular transform. With S = (a+b)+(c+d) the four outputs are
// S-2d, S-2c, S-2b, S-2a (rows of [[1,1,1,-1],[1,1,-1,1],[1,-1,1,1],[-1,1,1,1]]).
inline void regular_stage_scalar(float* x, size_t group, size_t s) {
  for (size_t base = 0; base < group; base += 4 * s) {
    for (size_t j = base; j < base + s; ++j) {
      const float a = x[j], b = x[j + s], c = x[j + 2 * s], d = x[j + 3 * s];
      const float S = (a + b) + (c + d);
      x[j] = S - (d + d);
      x[j + s] = S - (c + c);
      x[j + 2 * s] = S - (b + b);
      x[j + 3 * s] = S - (a + a);
    }
  }
}

inline void sylvester_stage_scalar(float* x, size_t group, size_t h) {
  for (size_t base = 0; base < group; base += 2 * h) {
    for (size_t j = base; j < base + h; ++j) {
      const float a = x[j], b = x[j + h];
      x[j] = a + b;
      x[j + h] = a - b;
    }
  }
}

float norm_of(size_t group, bool regular) {
  if (regular) return std::ldexp(1.0f, -log_base(group, 4));
  return static_cast<float>(1.0 / std::sqrt(static_cast<double>(group)));
}

void fwht_scalar(float* x, size_t group, bool regular) {
  if (regular) {
    for (size_t s = 1; s < group; s *= 4) regular_stage_scalar(x, group, s);
  } else {
    for (size_t h = 1; h < group; h *= 2) sylvester_stage_scalar(x, group, h);
  }
  const float k = norm_of(group, regular);
  for (size_t i = 0; i < group; ++i) x[i] *= k;
}

#if NINODES_HAS_X86
NINODES_TARGET_AVX2 inline __m256 swap128(__m256 v) { return _mm256_permute2f128_ps(v, v, 0x01); }

// Strides 1 and 4 inside each 16-float block, reading `src` and writing `x` (may be the same).
NINODES_TARGET_AVX2 inline void regular_first_stages_avx2(const float* src, float* x, size_t group) {
  for (size_t i = 0; i < group; i += 16) {
    __m256 v0 = _mm256_loadu_ps(src + i), v1 = _mm256_loadu_ps(src + i + 8);
    for (__m256* v : {&v0, &v1}) {
      const __m256 t = _mm256_add_ps(*v, _mm256_permute_ps(*v, 0xB1));  // a+b | c+d per pair
      const __m256 S = _mm256_add_ps(t, _mm256_permute_ps(t, 0x4E));
      const __m256 r = _mm256_permute_ps(*v, 0x1B);  // d c b a
      *v = _mm256_sub_ps(S, _mm256_add_ps(r, r));
    }
    const __m256 ab = _mm256_add_ps(v0, swap128(v0));
    const __m256 cd = _mm256_add_ps(v1, swap128(v1));
    const __m256 S = _mm256_add_ps(ab, cd);
    const __m256 r0 = swap128(v1), r1 = swap128(v0);  // [d, c], [b, a]
    _mm256_storeu_ps(x + i, _mm256_sub_ps(S, _mm256_add_ps(r0, r0)));
    _mm256_storeu_ps(x + i + 8, _mm256_sub_ps(S, _mm256_add_ps(r1, r1)));
  }
}

// One radix-4 stage of stride s (>= 8) over the group.
NINODES_TARGET_AVX2 inline void regular_stage_avx2(float* x, size_t group, size_t s) {
  for (size_t base = 0; base < group; base += 4 * s) {
    for (size_t j = base; j < base + s; j += 8) {
      const __m256 a = _mm256_loadu_ps(x + j), b = _mm256_loadu_ps(x + j + s);
      const __m256 c = _mm256_loadu_ps(x + j + 2 * s), d = _mm256_loadu_ps(x + j + 3 * s);
      const __m256 S = _mm256_add_ps(_mm256_add_ps(a, b), _mm256_add_ps(c, d));
      _mm256_storeu_ps(x + j, _mm256_sub_ps(S, _mm256_add_ps(d, d)));
      _mm256_storeu_ps(x + j + s, _mm256_sub_ps(S, _mm256_add_ps(c, c)));
      _mm256_storeu_ps(x + j + 2 * s, _mm256_sub_ps(S, _mm256_add_ps(b, b)));
      _mm256_storeu_ps(x + j + 3 * s, _mm256_sub_ps(S, _mm256_add_ps(a, a)));
    }
  }
}

NINODES_TARGET_AVX2 void fwht_regular_avx2(float* x, size_t group) {
  regular_first_stages_avx2(x, x, group);
  for (size_t s = 16; s < group; s *= 4) regular_stage_avx2(x, group, s);
  const __m256 k = _mm256_set1_ps(norm_of(group, true));
  for (size_t i = 0; i < group; i += 8) _mm256_storeu_ps(x + i, _mm256_mul_ps(_mm256_loadu_ps(x + i), k));
}

// The same float operations as fwht_regular_avx2 (so the same bits) in fewer passes: the first
// stage reads `src`, and the last stage applies the normalization as it stores and folds |x| into
// `absmax` (max over a set: order-free; NaN never wins, as in the separate absmax pass). group >= 64.
NINODES_TARGET_AVX2 __m256 fwht_regular_avx2_fused(const float* src, float* x, size_t group, __m256 absmax) {
  regular_first_stages_avx2(src, x, group);
  size_t s = 16;
  for (; 4 * s < group; s *= 4) regular_stage_avx2(x, group, s);
  const __m256 k = _mm256_set1_ps(norm_of(group, true));
  const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF));
  for (size_t j = 0; j < s; j += 8) {
    const __m256 a = _mm256_loadu_ps(x + j), b = _mm256_loadu_ps(x + j + s);
    const __m256 c = _mm256_loadu_ps(x + j + 2 * s), d = _mm256_loadu_ps(x + j + 3 * s);
    const __m256 S = _mm256_add_ps(_mm256_add_ps(a, b), _mm256_add_ps(c, d));
    const __m256 o0 = _mm256_mul_ps(_mm256_sub_ps(S, _mm256_add_ps(d, d)), k);
    const __m256 o1 = _mm256_mul_ps(_mm256_sub_ps(S, _mm256_add_ps(c, c)), k);
    const __m256 o2 = _mm256_mul_ps(_mm256_sub_ps(S, _mm256_add_ps(b, b)), k);
    const __m256 o3 = _mm256_mul_ps(_mm256_sub_ps(S, _mm256_add_ps(a, a)), k);
    _mm256_storeu_ps(x + j, o0);
    _mm256_storeu_ps(x + j + s, o1);
    _mm256_storeu_ps(x + j + 2 * s, o2);
    _mm256_storeu_ps(x + j + 3 * s, o3);
    // max_ps returns its second operand when either is NaN: the running max stays second.
    absmax = _mm256_max_ps(_mm256_and_ps(o0, abs_mask), absmax);
    absmax = _mm256_max_ps(_mm256_and_ps(o1, abs_mask), absmax);
    absmax = _mm256_max_ps(_mm256_and_ps(o2, abs_mask), absmax);
    absmax = _mm256_max_ps(_mm256_and_ps(o3, abs_mask), absmax);
  }
  return absmax;
}

NINODES_TARGET_AVX2 float fwht_regular_fused_row(const float* src, float* dst, size_t count, size_t group) {
  __m256 m = _mm256_setzero_ps();
  for (size_t g = 0; g < count; g += group) m = fwht_regular_avx2_fused(src + g, dst + g, group, m);
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, m);
  float best = 0.0f;
  for (float v : lanes) best = v > best ? v : best;
  return best;
}

// AVX-512: a group of 64 or 256 floats lives in 4 or 16 registers, so all four (or three) radix-4
// stages run without touching memory. Every output is computed with the float operations of the
// AVX2 path, operands in the same order (NaN payloads included), so the bits are the same.
NINODES_TARGET_AVX512 inline __m512 regular_first_stages_avx512(__m512 v) {
  // Stride 1 inside each 128-bit lane, exactly as regular_first_stages_avx2.
  const __m512 t = _mm512_add_ps(v, _mm512_permute_ps(v, 0xB1));
  const __m512 s1 = _mm512_add_ps(t, _mm512_permute_ps(t, 0x4E));
  const __m512 r = _mm512_permute_ps(v, 0x1B);
  v = _mm512_sub_ps(s1, _mm512_add_ps(r, r));
  // Stride 4 across the lanes a b c d: p = [a+b, b+a, c+d, d+c], S = [p0+p2, p1+p3, p0+p2, p1+p3]
  // (the AVX2 path's ab + cd), outputs S - 2·[d, c, b, a].
  const __m512 p = _mm512_add_ps(v, _mm512_shuffle_f32x4(v, v, 0xB1));
  const __m512 s4 = _mm512_add_ps(_mm512_shuffle_f32x4(p, p, 0x44), _mm512_shuffle_f32x4(p, p, 0xEE));
  const __m512 rev = _mm512_shuffle_f32x4(v, v, 0x1B);
  return _mm512_sub_ps(s4, _mm512_add_ps(rev, rev));
}

// One radix-4 stage between registers s apart (s = 1: stride 16 floats, s = 4: stride 64).
template <int R>
NINODES_TARGET_AVX512 inline void regular_register_stage(__m512 (&z)[R], int s) {
  for (int base = 0; base < R; base += 4 * s) {
    for (int j = base; j < base + s; ++j) {
      const __m512 a = z[j], b = z[j + s], c = z[j + 2 * s], d = z[j + 3 * s];
      const __m512 S = _mm512_add_ps(_mm512_add_ps(a, b), _mm512_add_ps(c, d));
      z[j] = _mm512_sub_ps(S, _mm512_add_ps(d, d));
      z[j + s] = _mm512_sub_ps(S, _mm512_add_ps(c, c));
      z[j + 2 * s] = _mm512_sub_ps(S, _mm512_add_ps(b, b));
      z[j + 3 * s] = _mm512_sub_ps(S, _mm512_add_ps(a, a));
    }
  }
}

// Groups of 16·R floats (R = 4: group 64, R = 16: group 256) from src to dst (may alias), scaled by
// the normalization; returns max(|dst|, absmax) with NaN never winning.
template <int R>
NINODES_TARGET_AVX512 __m512 fwht_regular_avx512(const float* src, float* dst, size_t count, __m512 absmax) {
  const __m512 k = _mm512_set1_ps(norm_of(16 * R, true));
  const __m512 abs_mask = _mm512_castsi512_ps(_mm512_set1_epi32(0x7FFFFFFF));
  for (size_t g = 0; g < count; g += 16 * R) {
    __m512 z[R];
    for (int i = 0; i < R; ++i) z[i] = regular_first_stages_avx512(_mm512_loadu_ps(src + g + 16 * i));
    regular_register_stage<R>(z, 1);
    if (R == 16) regular_register_stage<R>(z, 4);
    for (int i = 0; i < R; ++i) {
      const __m512 o = _mm512_mul_ps(z[i], k);
      _mm512_storeu_ps(dst + g + 16 * i, o);
      absmax = _mm512_max_ps(_mm512_and_ps(o, abs_mask), absmax);
    }
  }
  return absmax;
}

// group 64 or 256 on the AVX-512 path; returns false otherwise.
NINODES_TARGET_AVX512 bool fwht_regular_avx512_rows(const float* src, float* dst, size_t count, size_t group, float* absmax) {
  __m512 m = _mm512_setzero_ps();
  if (group == 256) {
    m = fwht_regular_avx512<16>(src, dst, count, m);
  } else if (group == 64) {
    m = fwht_regular_avx512<4>(src, dst, count, m);
  } else {
    return false;
  }
  if (absmax != nullptr) {
    alignas(64) float lanes[16];
    _mm512_store_ps(lanes, m);
    float best = 0.0f;
    for (float v : lanes) best = v > best ? v : best;
    *absmax = best;
  }
  return true;
}

NINODES_TARGET_AVX2 void fwht_sylvester_avx2(float* x, size_t group) {
  for (size_t i = 0; i < group; i += 8) {
    __m256 v = _mm256_loadu_ps(x + i);
    __m256 p = _mm256_permute_ps(v, 0xB1);
    v = _mm256_blend_ps(_mm256_add_ps(v, p), _mm256_sub_ps(p, v), 0xAA);
    p = _mm256_permute_ps(v, 0x4E);
    v = _mm256_blend_ps(_mm256_add_ps(v, p), _mm256_sub_ps(p, v), 0xCC);
    p = swap128(v);
    v = _mm256_blend_ps(_mm256_add_ps(v, p), _mm256_sub_ps(p, v), 0xF0);
    _mm256_storeu_ps(x + i, v);
  }
  for (size_t h = 8; h < group; h *= 2) {
    for (size_t base = 0; base < group; base += 2 * h) {
      for (size_t j = base; j < base + h; j += 8) {
        const __m256 a = _mm256_loadu_ps(x + j), b = _mm256_loadu_ps(x + j + h);
        _mm256_storeu_ps(x + j, _mm256_add_ps(a, b));
        _mm256_storeu_ps(x + j + h, _mm256_sub_ps(a, b));
      }
    }
  }
  const __m256 k = _mm256_set1_ps(norm_of(group, false));
  for (size_t i = 0; i < group; i += 8) _mm256_storeu_ps(x + i, _mm256_mul_ps(_mm256_loadu_ps(x + i), k));
}
#endif

}  // namespace

void check_hadamard_group(size_t cols, size_t group, bool regular) {
  if (group == 0 || log_base(group, regular ? 4 : 2) < 0 || group > (size_t(1) << 24)) {
    fail("INVALID_ARGUMENT", std::string("hadamard group ") + std::to_string(group) + " must be a power of " +
                                 (regular ? "4 for the regular order" : "2 for the sylvester order"));
  }
  if (cols % group != 0) {
    fail("GROUP_MISMATCH", "last dimension " + std::to_string(cols) + " is not a multiple of the hadamard group " + std::to_string(group));
  }
}

bool fwht_copy_absmax(const float* src, float* dst, size_t count, size_t group, bool regular, float* absmax) {
#if NINODES_HAS_X86
  if (regular && use_avx512() && fwht_regular_avx512_rows(src, dst, count, group, absmax)) return true;
  if (regular && group >= 64 && use_avx2()) {
    const float m = fwht_regular_fused_row(src, dst, count, group);
    if (absmax != nullptr) *absmax = m;
    return true;
  }
#endif
  return false;
}

void fwht_inplace(float* x, size_t count, size_t group, bool regular) {
#if NINODES_HAS_X86
  if (regular && use_avx512() && fwht_regular_avx512_rows(x, x, count, group, nullptr)) return;
  if (use_avx2() && group >= 16) {
    for (size_t g = 0; g < count; g += group) regular ? fwht_regular_avx2(x + g, group) : fwht_sylvester_avx2(x + g, group);
    return;
  }
#endif
  for (size_t g = 0; g < count; g += group) fwht_scalar(x + g, group, regular);
}

namespace {

struct HadamardArgs {
  const float* src;
  float* dst;
  size_t rows, cols, group;
  bool regular;
};

// hadamard(src f32, dst f32, rows, cols, group, order)
HadamardArgs parse(const Napi::CallbackInfo& info) {
  HadamardArgs a{};
  const args::Bytes src = args::bytes(info, 0, "hadamard input");
  const args::Bytes dst = args::bytes(info, 1, "hadamard output");
  a.rows = args::dim(info, 2, "hadamard rows");
  a.cols = args::dim(info, 3, "hadamard columns");
  a.group = args::dim(info, 4, "hadamard group");
  const std::string order = args::string(info, 5, "hadamard order");
  if (order != "regular" && order != "sylvester") fail("INVALID_ARGUMENT", "hadamard order must be 'regular' or 'sylvester', got '" + order + "'");
  a.regular = order == "regular";
  check_hadamard_group(a.cols, a.group, a.regular);
  const size_t n = args::mul(a.rows, a.cols, "hadamard");
  a.src = args::as<float>(src, n, "hadamard input");
  a.dst = args::as<float>(dst, n, "hadamard output");
  return a;
}

void run(const HadamardArgs& a) {
  const size_t groups = a.rows * (a.cols / a.group);
  const size_t n = a.rows * a.cols;
  const bool disjoint = a.dst + n <= a.src || a.src + n <= a.dst;
  // Each group is transformed independently by one thread: thread-count invariant.
  parallel_for(groups, std::max<size_t>(1, 16384 / a.group), [&](size_t b, size_t e) {
    const size_t off = b * a.group, count = (e - b) * a.group;
    // Out of place, the fused transform reads the source in its first stage (no separate copy).
    if (disjoint && fwht_copy_absmax(a.src + off, a.dst + off, count, a.group, a.regular, nullptr)) return;
    if (a.dst != a.src) std::memmove(a.dst + b * a.group, a.src + b * a.group, (e - b) * a.group * sizeof(float));
    fwht_inplace(a.dst + b * a.group, (e - b) * a.group, a.group, a.regular);
  });
}

Napi::Value hadamard_sync(const Napi::CallbackInfo& info) {
  return guarded(info, [](const Napi::CallbackInfo& info) -> Napi::Value {
    run(parse(info));
    return info.Env().Undefined();
  });
}

Napi::Value hadamard_async(const Napi::CallbackInfo& info) {
  return guarded(info, [](const Napi::CallbackInfo& info) -> Napi::Value {
    const HadamardArgs a = parse(info);
    return AsyncOp::start(
        info.Env(), "ninodes.hadamard", [a] { run(a); }, [](Napi::Env env) { return env.Undefined(); }, {info[0], info[1]});
  });
}

}  // namespace
}  // namespace ninodes

NINODES_MODULE(hadamard) {
  exports.Set("hadamardSync", Napi::Function::New(env, ninodes::hadamard_sync, "hadamardSync"));
  exports.Set("hadamardAsync", Napi::Function::New(env, ninodes::hadamard_async, "hadamardAsync"));
}
