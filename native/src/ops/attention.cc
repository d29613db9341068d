// GCC 12's AVX-512 headers start several intrinsics from _mm512_undefined_*(), which trips these
// warnings in every caller (a known false positive); nothing here reads an undefined value.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
// Scaled dot-product attention, fp32, tiled flash-style: q [H,S,D], k/v [H,T,D] -> out [H,S,D].
// The tiling, its memory bound and why results do not depend on the thread count: attention_tiles.h.
// Here the f32 paths: scalar, AVX2 and AVX-512 tiles.
//
// attentionNaiveF32 is the textbook materialized-softmax version (an S×T score matrix per head). It
// is exported only as the benchmark baseline the tiled kernel is measured against.
#include <napi.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "core/async.h"
#include "core/cpu_features.h"
#include "core/errors.h"
#include "core/registry.h"
#include "core/thread_pool.h"
#include "ops/attention_args.h"
#include "ops/attention_tiles.h"
#include "ops/op_args.h"
#include "ops/vec_math.h"

namespace {

using ninodes::fail;
using namespace ninodes::ops;
using namespace ninodes::ops::attention_tiles;
using Problem = ninodes::ops::AttentionProblem;
constexpr auto parse = ninodes::ops::parse_attention;
constexpr auto empty_output = ninodes::ops::attention_output_empty;

// ---- scalar path ---------------------------------------------------------------------------------

struct ScalarUnit {
  std::vector<float> scratch;
  explicit ScalarUnit(size_t dim) : scratch(dim + kKeyBlock, 0.f) {}
  void run(const Problem& p, size_t head, size_t q0, size_t nq);
};

void ScalarUnit::run(const Problem& p, size_t head, size_t q0, size_t nq) {
  const size_t d = p.dim;
  float* acc = scratch.data();
  float* s = acc + d;
  for (size_t r = 0; r < nq; ++r) {
    const float* qr = p.q + (head * p.seq_q + q0 + r) * d;
    std::fill(acc, acc + d, 0.f);
    float m = kNegInf, l = 0.f;
    for (size_t kb = 0; kb < p.seq_k; kb += kKeyBlock) {
      const size_t nk = std::min(kKeyBlock, p.seq_k - kb);
      float mblk = kNegInf;
      for (size_t j = 0; j < nk; ++j) {
        const float* kr = p.k + (head * p.seq_k + kb + j) * d;
        float dot = 0.f;
        for (size_t i = 0; i < d; ++i) dot += qr[i] * kr[i];
        s[j] = dot * p.scale;
        mblk = std::max(mblk, s[j]);
      }
      const float mnew = std::max(m, mblk);
      const float alpha = std::exp(m - mnew);
      float lsum = 0.f;
      for (size_t j = 0; j < nk; ++j) {
        s[j] = std::exp(s[j] - mnew);
        lsum += s[j];
      }
      l = l * alpha + lsum;
      m = mnew;
      for (size_t i = 0; i < d; ++i) acc[i] *= alpha;
      for (size_t j = 0; j < nk; ++j) {
        const float* vr = p.v + (head * p.seq_k + kb + j) * d;
        for (size_t i = 0; i < d; ++i) acc[i] += s[j] * vr[i];
      }
    }
    float* o = ninodes::ops::attention_out_row(p, head, q0 + r);
    for (size_t i = 0; i < d; ++i) o[i] = p.seq_k == 0 ? 0.f : acc[i] / l;
  }
}

// ---- AVX2 and AVX-512 paths ----------------------------------------------------------------------
#if NINODES_HAS_X86

// The f32 SIMD paths' packing and the forwarding of Isa's arithmetic (Avx2 or Avx512 below) to the
// tiled loop. The block's queries are zero padded to dp columns and to 32 rows. The whole head's keys
// are transposed block by block ([T/kKeyBlock][dp][kKeyBlock], zero padded: each block a contiguous
// 16 KiB-ish tile), built once per head this thread visits instead of once per (query block, key
// block): O(seq·dim) per thread. Rows of v are read in place when they are already SIMD-width
// padded (d == dp), else copied padded per key block.
template <class Isa>
struct F32Tiles {
  static constexpr size_t kScoreRows = Isa::kScoreRows, kScoreKeys = Isa::kScoreKeys, kPvRows = Isa::kPvRows;
  BlockState st;
  std::vector<float> qb, vb, kfull;
  size_t kfull_head = SIZE_MAX;
  const float* kt = nullptr;  // the current key block's tile of kfull
  const float* vt = nullptr;  // its rows of v, dp floats apart

  explicit F32Tiles(size_t dim) : st(dim, Isa::kLanes), qb(kQueryBlock * st.dp, 0.f), vb(kKeyBlock * st.dp, 0.f) {}
  void run(const Problem& p, size_t head, size_t q0, size_t nq) { run_unit(p, head, q0, nq, *this); }

  void begin(const Problem& p, size_t head, size_t q0, size_t nq) {
    const size_t d = p.dim, dp = st.dp;
    std::fill(qb.begin(), qb.end(), 0.f);
    for (size_t r = 0; r < nq; ++r) std::memcpy(qb.data() + r * dp, p.q + (head * p.seq_q + q0 + r) * d, d * sizeof(float));
    if (kfull_head == head) return;
    kfull.assign(round_up(p.seq_k, kKeyBlock) * dp, 0.f);
    const float* kh = p.k + head * p.seq_k * d;
    for (size_t j = 0; j < p.seq_k; ++j) {
      const float* kr = kh + j * d;
      float* block = kfull.data() + (j / kKeyBlock) * dp * kKeyBlock + j % kKeyBlock;
      for (size_t i = 0; i < d; ++i) block[i * kKeyBlock] = kr[i];
    }
    kfull_head = head;
  }

  void key_block(const Problem& p, size_t head, size_t kb, size_t nk) {
    const size_t d = p.dim, dp = st.dp;
    const float* vh = p.v + head * p.seq_k * d;
    kt = kfull.data() + kb * dp;
    vt = vh + kb * d;
    if (d == dp) return;
    for (size_t j = 0; j < nk; ++j) std::memcpy(vb.data() + j * dp, vh + (kb + j) * d, d * sizeof(float));
    vt = vb.data();
  }

  void scores(size_t r, size_t jc, float scale) { Isa::scores(qb.data() + r * st.dp, kt, st.pb + r * kKeyBlock, st.dp, jc, scale); }
  void softmax_row(size_t r, size_t nk, size_t nkp) { Isa::softmax_row(st.pb + r * kKeyBlock, nk, nkp, st.m + r, st.l + r, st.alpha + r); }
  template <int NR>
  void pv(size_t r, size_t nk) {
    for_each_dim_tile<Isa::kLanes>(st.dp, [&](auto nv, size_t dc) {
      Isa::template pv_tile<NR, decltype(nv)::value>(st.pb + r * kKeyBlock, vt, st.ob + r * st.dp, st.alpha + r, st.dp, dc, nk);
    });
  }
};

struct Avx2 {
  static constexpr size_t kLanes = 8;
  static constexpr size_t kScoreRows = 4, kScoreKeys = 16;  // one scores call
  static constexpr size_t kPvRows = 2;                      // query rows per P·V call (16 ymm registers)

  // Scores for 4 query rows x 16 keys: fma chains over d in order.
  NINODES_TARGET_AVX2 static void scores(const float* qb, const float* kt, float* pb, size_t dp, size_t jc, float scale) {
    __m256 a00 = _mm256_setzero_ps(), a01 = _mm256_setzero_ps(), a10 = _mm256_setzero_ps(), a11 = _mm256_setzero_ps();
    __m256 a20 = _mm256_setzero_ps(), a21 = _mm256_setzero_ps(), a30 = _mm256_setzero_ps(), a31 = _mm256_setzero_ps();
    for (size_t d = 0; d < dp; ++d) {
      const __m256 k0 = _mm256_loadu_ps(kt + d * kKeyBlock + jc);
      const __m256 k1 = _mm256_loadu_ps(kt + d * kKeyBlock + jc + 8);
      __m256 q = _mm256_broadcast_ss(qb + 0 * dp + d);
      a00 = _mm256_fmadd_ps(q, k0, a00);
      a01 = _mm256_fmadd_ps(q, k1, a01);
      q = _mm256_broadcast_ss(qb + 1 * dp + d);
      a10 = _mm256_fmadd_ps(q, k0, a10);
      a11 = _mm256_fmadd_ps(q, k1, a11);
      q = _mm256_broadcast_ss(qb + 2 * dp + d);
      a20 = _mm256_fmadd_ps(q, k0, a20);
      a21 = _mm256_fmadd_ps(q, k1, a21);
      q = _mm256_broadcast_ss(qb + 3 * dp + d);
      a30 = _mm256_fmadd_ps(q, k0, a30);
      a31 = _mm256_fmadd_ps(q, k1, a31);
    }
    const __m256 s = _mm256_set1_ps(scale);
    _mm256_store_ps(pb + 0 * kKeyBlock + jc, _mm256_mul_ps(a00, s));
    _mm256_store_ps(pb + 0 * kKeyBlock + jc + 8, _mm256_mul_ps(a01, s));
    _mm256_store_ps(pb + 1 * kKeyBlock + jc, _mm256_mul_ps(a10, s));
    _mm256_store_ps(pb + 1 * kKeyBlock + jc + 8, _mm256_mul_ps(a11, s));
    _mm256_store_ps(pb + 2 * kKeyBlock + jc, _mm256_mul_ps(a20, s));
    _mm256_store_ps(pb + 2 * kKeyBlock + jc + 8, _mm256_mul_ps(a21, s));
    _mm256_store_ps(pb + 3 * kKeyBlock + jc, _mm256_mul_ps(a30, s));
    _mm256_store_ps(pb + 3 * kKeyBlock + jc + 8, _mm256_mul_ps(a31, s));
  }

  NINODES_TARGET_AVX2 static void softmax_row(float* pr, size_t nk, size_t nkp, float* m, float* l, float* alpha) {
    online_softmax<__m256, exp256, hmax256, hsum256>(pr, nk, nkp, m, l, alpha, ExpsInPlace{pr});
  }

  // o[r] = o[r] * alpha[r] + sum_j p[r][j] * v[j] for NR rows and NV vectors of the head dimension.
  template <int NR, int NV>
  NINODES_TARGET_AVX2 static void pv_tile(const float* pb, const float* vb, float* ob, const float* alpha, size_t dp, size_t dc, size_t nk) {
    __m256 acc[NR][NV];
    for (int r = 0; r < NR; ++r) {
      const __m256 a = _mm256_set1_ps(alpha[r]);
      for (int i = 0; i < NV; ++i) acc[r][i] = _mm256_mul_ps(_mm256_load_ps(ob + r * dp + dc + 8 * i), a);
    }
    for (size_t j = 0; j < nk; ++j) {
      __m256 vv[NV];
      for (int i = 0; i < NV; ++i) vv[i] = _mm256_loadu_ps(vb + j * dp + dc + 8 * i);
      for (int r = 0; r < NR; ++r) {
        const __m256 pj = _mm256_broadcast_ss(pb + r * kKeyBlock + j);
        for (int i = 0; i < NV; ++i) acc[r][i] = _mm256_fmadd_ps(pj, vv[i], acc[r][i]);
      }
    }
    for (int r = 0; r < NR; ++r) {
      for (int i = 0; i < NV; ++i) _mm256_store_ps(ob + r * dp + dc + 8 * i, acc[r][i]);
    }
  }
};

// The same blocks with 16 lanes (twice the FMA width per instruction).
struct Avx512 {
  static constexpr size_t kLanes = 16;
  static constexpr size_t kScoreRows = 8, kScoreKeys = 32;
  static constexpr size_t kPvRows = 4;  // 32 zmm registers: 4 rows x 4 accumulators + 4 of v

  // Scores for 8 query rows x 32 keys (16 accumulators of the 32 zmm registers).
  NINODES_TARGET_AVX512 static void scores(const float* qb, const float* kt, float* pb, size_t dp, size_t jc, float scale) {
    __m512 a[8][2];
    for (int r = 0; r < 8; ++r) a[r][0] = a[r][1] = _mm512_setzero_ps();
    for (size_t d = 0; d < dp; ++d) {
      const __m512 k0 = _mm512_loadu_ps(kt + d * kKeyBlock + jc);
      const __m512 k1 = _mm512_loadu_ps(kt + d * kKeyBlock + jc + 16);
      for (int r = 0; r < 8; ++r) {
        const __m512 q = _mm512_set1_ps(qb[r * dp + d]);
        a[r][0] = _mm512_fmadd_ps(q, k0, a[r][0]);
        a[r][1] = _mm512_fmadd_ps(q, k1, a[r][1]);
      }
    }
    const __m512 s = _mm512_set1_ps(scale);
    for (int r = 0; r < 8; ++r) {
      _mm512_store_ps(pb + r * kKeyBlock + jc, _mm512_mul_ps(a[r][0], s));
      _mm512_store_ps(pb + r * kKeyBlock + jc + 16, _mm512_mul_ps(a[r][1], s));
    }
  }

  NINODES_TARGET_AVX512 static void softmax_row(float* pr, size_t nk, size_t nkp, float* m, float* l, float* alpha) {
    online_softmax<__m512, exp512, hmax512, hsum512>(pr, nk, nkp, m, l, alpha, ExpsInPlace{pr});
  }

  template <int NR, int NV>
  NINODES_TARGET_AVX512 static void pv_tile(const float* pb, const float* vb, float* ob, const float* alpha, size_t dp, size_t dc, size_t nk) {
    __m512 acc[NR][NV];
    pv_acc_load(acc, ob, alpha, dp, dc);
    for (size_t j = 0; j < nk; ++j) {
      __m512 vv[NV];
      for (int i = 0; i < NV; ++i) vv[i] = _mm512_loadu_ps(vb + j * dp + dc + 16 * i);
      for (int r = 0; r < NR; ++r) {
        const __m512 pj = _mm512_set1_ps(pb[r * kKeyBlock + j]);
        for (int i = 0; i < NV; ++i) acc[r][i] = _mm512_fmadd_ps(pj, vv[i], acc[r][i]);
      }
    }
    pv_acc_store(acc, ob, dp, dc);
  }
};
#endif

void run_tiled(const Problem& p) {
#if NINODES_HAS_X86
  if (ninodes::use_avx512()) return run_units<F32Tiles<Avx512>>(p);
  if (ninodes::use_avx2()) return run_units<F32Tiles<Avx2>>(p);
#endif
  run_units<ScalarUnit>(p);
}

// ---- naive baseline: materialize softmax(q kᵀ · scale) per head, then multiply by v -------------

#if NINODES_HAS_X86
NINODES_TARGET_AVX2 float dot_avx2(const float* a, const float* b, size_t n) {
  __m256 acc = _mm256_setzero_ps();
  size_t i = 0;
  for (; i + 8 <= n; i += 8) acc = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), acc);
  float s = hsum256(acc);
  for (; i < n; ++i) s += a[i] * b[i];
  return s;
}
NINODES_TARGET_AVX2 void axpy_avx2(float a, const float* x, float* y, size_t n) {
  for (size_t i = 0; i < n; ++i) y[i] += a * x[i];
}
#endif

void run_naive(const Problem& p) {
  if (empty_output(p)) return;
  const size_t S = p.seq_q, T = p.seq_k, D = p.dim;
  if (T == 0) {
    std::fill(p.out, p.out + p.heads * S * D, 0.f);
    return;
  }
  const bool avx2 = ninodes::use_avx2();
  std::vector<float> scores(ninodes::args::mul(S, T, "attentionNaive"));
  for (size_t h = 0; h < p.heads; ++h) {
    const float* qh = p.q + h * S * D;
    const float* kh = p.k + h * T * D;
    const float* vh = p.v + h * T * D;
    float* oh = p.out + h * S * D;
    ninodes::parallel_for(S, 1, [&](size_t r0, size_t r1) {
      for (size_t i = r0; i < r1; ++i) {
        float* row = scores.data() + i * T;
        float m = kNegInf;
        for (size_t j = 0; j < T; ++j) {
#if NINODES_HAS_X86
          const float dot = avx2 ? dot_avx2(qh + i * D, kh + j * D, D) : 0.f;
#else
          const float dot = 0.f;
#endif
          float s = dot;
          if (!avx2) {
            s = 0.f;
            for (size_t t = 0; t < D; ++t) s += qh[i * D + t] * kh[j * D + t];
          }
          row[j] = s * p.scale;
          m = std::max(m, row[j]);
        }
        float sum = 0.f;
        for (size_t j = 0; j < T; ++j) {
          row[j] = std::exp(row[j] - m);
          sum += row[j];
        }
        for (size_t j = 0; j < T; ++j) row[j] /= sum;
      }
    });
    ninodes::parallel_for(S, 1, [&](size_t r0, size_t r1) {
      for (size_t i = r0; i < r1; ++i) {
        float* o = oh + i * D;
        std::fill(o, o + D, 0.f);
        for (size_t j = 0; j < T; ++j) {
#if NINODES_HAS_X86
          if (avx2) {
            axpy_avx2(scores[i * T + j], vh + j * D, o, D);
            continue;
          }
#endif
          for (size_t t = 0; t < D; ++t) o[t] += scores[i * T + j] * vh[j * D + t];
        }
      }
    });
  }
}

Napi::Value attention(const Napi::CallbackInfo& info) {
  return ninodes::guarded(info, [](const Napi::CallbackInfo& info) -> Napi::Value {
    const Problem p = parse(info, "attention");
    return ninodes::AsyncOp::start(
        info.Env(), "ninodes.attention", [p] { run_tiled(p); }, [](Napi::Env env) -> Napi::Value { return env.Undefined(); },
        {info[0], info[1], info[2], info[3]});
  });
}

Napi::Value attention_naive(const Napi::CallbackInfo& info) {
  return ninodes::guarded(info, [](const Napi::CallbackInfo& info) -> Napi::Value {
    const Problem p = parse(info, "attentionNaive");
    if (p.seq_major) fail("INVALID_ARGUMENT", "attentionNaive writes [H, S, D] only (seqMajor is the tiled kernels' option)");
    return ninodes::AsyncOp::start(
        info.Env(), "ninodes.attentionNaive", [p] { run_naive(p); },
        [](Napi::Env env) -> Napi::Value { return env.Undefined(); }, {info[0], info[1], info[2], info[3]});
  });
}

}  // namespace

NINODES_MODULE(attention) {
  exports.Set("attentionF32", Napi::Function::New(env, attention, "attentionF32"));
  exports.Set("attentionNaiveF32", Napi::Function::New(env, attention_naive, "attentionNaiveF32"));
}
