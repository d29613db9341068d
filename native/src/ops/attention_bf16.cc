// GCC 12's AVX-512 headers start several intrinsics from _mm512_undefined_*(), which trips these
// warnings in every caller (a known false positive); nothing here reads an undefined value.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
// Scaled dot-product attention on the CPU's bf16 units (AVX512_BF16, vdpbf16ps), what PyTorch's
// bf16 SDPA computes on CPU: q, k, v rounded to bf16 (nearest even), q·kᵀ with f32 accumulation,
// the online softmax in f32 (running max, sum of the f32 exps), the exps rounded to bf16 for P·V,
// which accumulates in f32; out = acc / sum, f32.
//
// The tiling is attention.cc's: units of (head, 32 queries), keys streamed in blocks of 64, so
// extra memory is O(S·D) per thread (one head's packed k and v), never O(S·T). vdpbf16ps multiplies
// pairs, so the operands are packed pairwise: k as [key block][D/2][64 keys][2] (pairs along D for
// the scores), v as [key block][32 key pairs][D][2] (pairs along the keys for P·V). Every row's
// arithmetic is fixed by the block sizes alone: bit-identical for any thread count or head split.
//
// Only where cpu_has_bf16_units(): anywhere else the binding fails BACKEND_UNAVAILABLE (the model
// then runs attention in f32 and says so), never a silent f32 run.
#include <napi.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "core/async.h"
#include "core/cpu_features.h"
#include "core/errors.h"
#include "core/registry.h"
#include "core/thread_pool.h"
#include "ops/attention_args.h"
#include "ops/vec_math.h"

namespace {

using ninodes::fail;
using Problem = ninodes::ops::AttentionProblem;

#if NINODES_HAS_X86
#define NINODES_TARGET_BF16 __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx512bf16,avx2,fma,f16c")))

constexpr size_t kQueryBlock = 32;
constexpr size_t kKeyBlock = 64;
constexpr size_t kScoreRows = 8;
constexpr size_t kScoreKeys = 32;
constexpr size_t kPvRows = 4;
constexpr float kNegInf = -std::numeric_limits<float>::infinity();

size_t round_up(size_t n, size_t m) { return (n + m - 1) / m * m; }

inline uint32_t pair_at(const uint16_t* p) {
  uint32_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

struct Scratch {
  size_t dp = 0;  // head dim padded to 16 (one zmm of f32 lanes, an even number of bf16)
  std::vector<uint16_t> qb;  // [kQueryBlock][dp] bf16
  std::vector<float> ob;     // [kQueryBlock][dp] accumulators
  std::vector<float> pb;     // [kQueryBlock][kKeyBlock] scores, then f32 exps
  std::vector<uint16_t> ph;  // [kQueryBlock][kKeyBlock] exps in bf16
  std::vector<float> m, l, alpha;
  // One head's keys and values, packed for vdpbf16ps (see the header), built once per head visited.
  std::vector<uint16_t> kfull, vfull;
  size_t packed_head = SIZE_MAX;
  void init(size_t dim) {
    dp = round_up(std::max<size_t>(dim, 1), 16);
    qb.assign(kQueryBlock * dp, 0);
    ob.assign(kQueryBlock * dp, 0.f);
    pb.assign(kQueryBlock * kKeyBlock, 0.f);
    ph.assign(kQueryBlock * kKeyBlock, 0);
    m.assign(kQueryBlock, 0.f);
    l.assign(kQueryBlock, 0.f);
    alpha.assign(kQueryBlock, 0.f);
  }
};

// Scores for 8 query rows x 32 keys: 16 zmm accumulators, each vdpbf16ps adds two terms of D.
NINODES_TARGET_BF16 void scores_8x32(const uint16_t* qb, const uint16_t* kt, float* pb, size_t dp, size_t jc, float scale) {
  __m512 a[8][2];
  for (int r = 0; r < 8; ++r) a[r][0] = a[r][1] = _mm512_setzero_ps();
  for (size_t d2 = 0; d2 < dp / 2; ++d2) {
    const uint16_t* row = kt + d2 * kKeyBlock * 2 + jc * 2;
    const __m512bh k0 = (__m512bh)_mm512_loadu_si512(row);
    const __m512bh k1 = (__m512bh)_mm512_loadu_si512(row + 32);
    for (int r = 0; r < 8; ++r) {
      const __m512bh q = (__m512bh)_mm512_set1_epi32(static_cast<int>(pair_at(qb + r * dp + 2 * d2)));
      a[r][0] = _mm512_dpbf16_ps(a[r][0], q, k0);
      a[r][1] = _mm512_dpbf16_ps(a[r][1], q, k1);
    }
  }
  const __m512 s = _mm512_set1_ps(scale);
  for (int r = 0; r < 8; ++r) {
    _mm512_storeu_ps(pb + r * kKeyBlock + jc, _mm512_mul_ps(a[r][0], s));
    _mm512_storeu_ps(pb + r * kKeyBlock + jc + 16, _mm512_mul_ps(a[r][1], s));
  }
}

// Online softmax of one row (nkp scores, the last nkp - nk padding): f32 exps summed into l, then
// rounded to bf16 into ph for P·V (as PyTorch's flash kernel does for reduced-precision inputs).
NINODES_TARGET_BF16 void softmax_row(float* pr, uint16_t* hr, size_t nk, size_t nkp, float* m, float* l, float* alpha) {
  for (size_t j = nk; j < nkp; ++j) pr[j] = kNegInf;
  __m512 vmax = _mm512_set1_ps(kNegInf);
  for (size_t j = 0; j < nkp; j += 16) vmax = _mm512_max_ps(vmax, _mm512_loadu_ps(pr + j));
  const float mnew = std::max(*m, _mm512_reduce_max_ps(vmax));
  const __m512 vm = _mm512_set1_ps(mnew);
  __m512 vsum = _mm512_setzero_ps();
  for (size_t j = 0; j < nkp; j += 16) {
    const __m512 e = ninodes::ops::exp512(_mm512_sub_ps(_mm512_loadu_ps(pr + j), vm));
    vsum = _mm512_add_ps(vsum, e);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(hr + j), (__m256i)_mm512_cvtneps_pbh(e));
  }
  *alpha = std::exp(*m - mnew);
  *l = *l * *alpha + _mm512_reduce_add_ps(vsum);
  *m = mnew;
}

// o[r] = o[r] * alpha[r] + sum_j p[r][j] * v[j] for NR rows and NV 16-lane vectors of the head
// dimension, two keys per vdpbf16ps.
template <int NR, int NV>
NINODES_TARGET_BF16 void pv_tile(const uint16_t* ph, const uint16_t* vt, float* ob, const float* alpha, size_t dp, size_t dc, size_t pairs) {
  __m512 acc[NR][NV];
  for (int r = 0; r < NR; ++r) {
    const __m512 a = _mm512_set1_ps(alpha[r]);
    for (int i = 0; i < NV; ++i) acc[r][i] = _mm512_mul_ps(_mm512_loadu_ps(ob + r * dp + dc + 16 * i), a);
  }
  for (size_t j2 = 0; j2 < pairs; ++j2) {
    __m512bh vv[NV];
    for (int i = 0; i < NV; ++i) vv[i] = (__m512bh)_mm512_loadu_si512(vt + j2 * dp * 2 + (dc + 16 * i) * 2);
    for (int r = 0; r < NR; ++r) {
      const __m512bh pj = (__m512bh)_mm512_set1_epi32(static_cast<int>(pair_at(ph + r * kKeyBlock + 2 * j2)));
      for (int i = 0; i < NV; ++i) acc[r][i] = _mm512_dpbf16_ps(acc[r][i], pj, vv[i]);
    }
  }
  for (int r = 0; r < NR; ++r) {
    for (int i = 0; i < NV; ++i) _mm512_storeu_ps(ob + r * dp + dc + 16 * i, acc[r][i]);
  }
}

template <int NR>
void pv_rows(const uint16_t* ph, const uint16_t* vt, float* ob, const float* alpha, size_t dp, size_t pairs) {
  size_t dc = 0;
  for (; dc + 64 <= dp; dc += 64) pv_tile<NR, 4>(ph, vt, ob, alpha, dp, dc, pairs);
  switch ((dp - dc) / 16) {
    case 3: pv_tile<NR, 3>(ph, vt, ob, alpha, dp, dc, pairs); break;
    case 2: pv_tile<NR, 2>(ph, vt, ob, alpha, dp, dc, pairs); break;
    case 1: pv_tile<NR, 1>(ph, vt, ob, alpha, dp, dc, pairs); break;
    default: break;
  }
}

// f32 -> bf16 of n ≤ 16 values (zeros past n), nearest even; vcvtneps2bf16 also flushes f32
// denormals to zero, a change below 1.2e-38 that no attention output can show.
NINODES_TARGET_BF16 inline __m256i bf16x16(const float* src, size_t n) {
  const __mmask16 m = n >= 16 ? static_cast<__mmask16>(0xFFFF) : static_cast<__mmask16>((1u << n) - 1);
  return (__m256i)_mm512_cvtneps_pbh(_mm512_maskz_loadu_ps(m, src));
}

// Packs one head's k and v into the pairwise layouts (zero padded: padded keys get p = 0, padded
// head-dim columns contribute 0 to the scores and are never written out).
NINODES_TARGET_BF16 void pack_head(const Problem& p, size_t head, Scratch& sc) {
  const size_t d = p.dim, dp = sc.dp, blocks = (p.seq_k + kKeyBlock - 1) / kKeyBlock;
  sc.kfull.assign(blocks * kKeyBlock * dp, 0);
  sc.vfull.assign(blocks * kKeyBlock * dp, 0);
  const float* kh = p.k + head * p.seq_k * d;
  const float* vh = p.v + head * p.seq_k * d;
  alignas(64) uint32_t pairs[8];
  for (size_t j = 0; j < p.seq_k; ++j) {
    // k row j: 8 pairs along D per conversion, each to its (pair, key) slot of the block.
    uint32_t* kb = reinterpret_cast<uint32_t*>(sc.kfull.data() + (j / kKeyBlock) * kKeyBlock * dp) + j % kKeyBlock;
    for (size_t i = 0; i < d; i += 16) {
      _mm256_store_si256(reinterpret_cast<__m256i*>(pairs), bf16x16(kh + j * d + i, d - i));
      for (size_t t = 0; t < 8; ++t) kb[(i / 2 + t) * kKeyBlock] = pairs[t];
    }
  }
  // v rows j, j + 1 (j even, so both in one block): their bf16 values interleaved along D.
  const __m512i interleave = _mm512_set_epi16(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8, 23, 7, 22, 6, 21, 5, 20, 4, 19, 3, 18, 2, 17,
                                              1, 16, 0);
  for (size_t j = 0; j < p.seq_k; j += 2) {
    const bool second = j + 1 < p.seq_k;
    uint16_t* vb = sc.vfull.data() + (j / kKeyBlock) * kKeyBlock * dp + ((j % kKeyBlock) / 2) * dp * 2;
    for (size_t i = 0; i < d; i += 16) {
      const __m256i a = bf16x16(vh + j * d + i, d - i);
      const __m256i b = second ? bf16x16(vh + (j + 1) * d + i, d - i) : _mm256_setzero_si256();
      const __m512i ab = _mm512_inserti64x4(_mm512_castsi256_si512(a), b, 1);
      _mm512_storeu_si512(vb + i * 2, _mm512_permutexvar_epi16(interleave, ab));
    }
  }
  sc.packed_head = head;
}

NINODES_TARGET_BF16 void unit(const Problem& p, size_t head, size_t q0, size_t nq, Scratch& sc) {
  const size_t d = p.dim, dp = sc.dp;
  if (sc.packed_head != head) pack_head(p, head, sc);
  std::fill(sc.qb.begin(), sc.qb.end(), 0);
  for (size_t r = 0; r < nq; ++r) {
    const float* qr = p.q + (head * p.seq_q + q0 + r) * d;
    for (size_t i = 0; i < d; i += 16) _mm256_storeu_si256(reinterpret_cast<__m256i*>(sc.qb.data() + r * dp + i), bf16x16(qr + i, d - i));
  }
  std::fill(sc.ob.begin(), sc.ob.end(), 0.f);
  std::fill(sc.m.begin(), sc.m.end(), kNegInf);
  std::fill(sc.l.begin(), sc.l.end(), 0.f);
  const size_t nqs = round_up(nq, kScoreRows);
  for (size_t kb = 0; kb < p.seq_k; kb += kKeyBlock) {
    const size_t nk = std::min(kKeyBlock, p.seq_k - kb);
    const size_t nkp = round_up(nk, kScoreKeys);
    const uint16_t* kt = sc.kfull.data() + kb * dp;
    const uint16_t* vt = sc.vfull.data() + kb * dp;
    for (size_t r = 0; r < nqs; r += kScoreRows) {
      for (size_t jc = 0; jc < nkp; jc += kScoreKeys) scores_8x32(sc.qb.data() + r * dp, kt, sc.pb.data() + r * kKeyBlock, dp, jc, p.scale);
    }
    for (size_t r = 0; r < nq; ++r)
      softmax_row(sc.pb.data() + r * kKeyBlock, sc.ph.data() + r * kKeyBlock, nk, nkp, &sc.m[r], &sc.l[r], &sc.alpha[r]);
    // An odd last key pairs with a padded key whose p is exp(-inf) = 0 and whose v is 0.
    const size_t pairs = (nk + 1) / 2;
    size_t r = 0;
    for (; r + kPvRows <= nq; r += kPvRows) pv_rows<kPvRows>(sc.ph.data() + r * kKeyBlock, vt, sc.ob.data() + r * dp, sc.alpha.data() + r, dp, pairs);
    for (; r < nq; ++r) pv_rows<1>(sc.ph.data() + r * kKeyBlock, vt, sc.ob.data() + r * dp, sc.alpha.data() + r, dp, pairs);
  }
  for (size_t r = 0; r < nq; ++r) {
    float* o = ninodes::ops::attention_out_row(p, head, q0 + r);
    if (p.seq_k == 0) {
      std::fill(o, o + d, 0.f);
      continue;
    }
    const float* a = sc.ob.data() + r * dp;
    const float l = sc.l[r];
    for (size_t i = 0; i < d; ++i) o[i] = a[i] / l;
  }
}

void run_bf16(const Problem& p) {
  if (ninodes::ops::attention_output_empty(p)) return;
  const size_t blocks = (p.seq_q + kQueryBlock - 1) / kQueryBlock;
  ninodes::parallel_for(p.heads * blocks, 1, [&](size_t u0, size_t u1) {
    Scratch sc;
    sc.init(p.dim);
    for (size_t u = u0; u < u1; ++u) {
      const size_t head = u / blocks, q0 = (u % blocks) * kQueryBlock;
      unit(p, head, q0, std::min(kQueryBlock, p.seq_q - q0), sc);
    }
  });
}
#endif

Napi::Value attention_bf16(const Napi::CallbackInfo& info) {
  return ninodes::guarded(info, [](const Napi::CallbackInfo& info) -> Napi::Value {
    const Problem p = ninodes::ops::parse_attention(info, "attentionBf16");
    if (!ninodes::cpu_has_bf16_units())
      fail("BACKEND_UNAVAILABLE", "attention precision 'bf16' needs a CPU with AVX512_BF16 (this one has none, or NINODES_SIMD caps it)");
#if NINODES_HAS_X86
    return ninodes::AsyncOp::start(
        info.Env(), "ninodes.attentionBf16", [p] { run_bf16(p); }, [](Napi::Env env) -> Napi::Value { return env.Undefined(); },
        {info[0], info[1], info[2], info[3]});
#else
    return info.Env().Undefined();
#endif
  });
}

}  // namespace

NINODES_MODULE(attention_bf16) {
  exports.Set("attentionBf16", Napi::Function::New(env, attention_bf16, "attentionBf16"));
}
