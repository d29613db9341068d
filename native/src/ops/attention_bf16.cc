// GCC 12's AVX-512 headers start several intrinsics from _mm512_undefined_*(), which trips these
// warnings in every caller (a known false positive); nothing here reads an undefined value.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
// Scaled dot-product attention on the CPU's bf16 units (AVX512_BF16, vdpbf16ps), what PyTorch's
// bf16 SDPA computes on CPU: q, k, v rounded to bf16 (nearest even), q·kᵀ with f32 accumulation,
// the online softmax in f32 (running max, sum of the f32 exps), the exps rounded to bf16 for P·V,
// which accumulates in f32; out = acc / sum, f32.
//
// The tiling is attention_tiles.h's, shared with the f32 kernel: units of (head, 32 queries), keys
// streamed in blocks of 64, so extra memory is O(S·D) per thread (one head's packed k and v), never
// O(S·T); every row's arithmetic is fixed by the block sizes alone: bit-identical for any thread count
// or head split. vdpbf16ps multiplies pairs, so the operands are packed pairwise: k as [key
// block][D/2][64 keys][2] (pairs along D for the scores), v as [key block][32 key pairs][D][2]
// (pairs along the keys for P·V).
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
#include "ops/attention_tiles.h"
#include "ops/vec_math.h"

namespace {

using ninodes::fail;
using Problem = ninodes::ops::AttentionProblem;
using namespace ninodes::ops::attention_tiles;

#if NINODES_HAS_X86
#define NINODES_TARGET_BF16 __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx512bf16,avx2,fma,f16c")))

inline uint32_t pair_at(const uint16_t* p) {
  uint32_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

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

// o[r] = o[r] * alpha[r] + sum_j p[r][j] * v[j] for NR rows and NV 16-lane vectors of the head
// dimension, two keys per vdpbf16ps.
template <int NR, int NV>
NINODES_TARGET_BF16 void pv_tile(const uint16_t* ph, const uint16_t* vt, float* ob, const float* alpha, size_t dp, size_t dc, size_t pairs) {
  __m512 acc[NR][NV];
  pv_acc_load(acc, ob, alpha, dp, dc);
  for (size_t j2 = 0; j2 < pairs; ++j2) {
    __m512bh vv[NV];
    for (int i = 0; i < NV; ++i) vv[i] = (__m512bh)_mm512_loadu_si512(vt + j2 * dp * 2 + (dc + 16 * i) * 2);
    for (int r = 0; r < NR; ++r) {
      const __m512bh pj = (__m512bh)_mm512_set1_epi32(static_cast<int>(pair_at(ph + r * kKeyBlock + 2 * j2)));
      for (int i = 0; i < NV; ++i) acc[r][i] = _mm512_dpbf16_ps(acc[r][i], pj, vv[i]);
    }
  }
  pv_acc_store(acc, ob, dp, dc);
}

// f32 -> bf16 of n ≤ 16 values (zeros past n), nearest even; vcvtneps2bf16 also flushes f32
// denormals to zero, a change below 1.2e-38 that no attention output can show.
NINODES_TARGET_BF16 inline __m256i bf16x16(const float* src, size_t n) {
  const __mmask16 m = n >= 16 ? static_cast<__mmask16>(0xFFFF) : static_cast<__mmask16>((1u << n) - 1);
  return (__m256i)_mm512_cvtneps_pbh(_mm512_maskz_loadu_ps(m, src));
}

// online_softmax's store on the bf16 path: the exps rounded to bf16 (nearest even).
struct ExpsToBf16 {
  uint16_t* hr;
  NINODES_TARGET_BF16 void operator()(size_t j, __m512 e) const { _mm256_storeu_si256(reinterpret_cast<__m256i*>(hr + j), (__m256i)_mm512_cvtneps_pbh(e)); }
};

// The bf16 path of attention_tiles.h's run_unit: its packing, scores and P·V on vdpbf16ps.
struct Bf16Tiles {
  static constexpr size_t kScoreRows = 8, kScoreKeys = 32;  // one scores_8x32 call
  static constexpr size_t kPvRows = 4;
  BlockState st;                // dp: the head dim padded to 16 (one zmm of f32 lanes, an even number of bf16)
  std::vector<uint16_t> qb;     // [kQueryBlock][dp] bf16
  std::vector<uint16_t> ph;     // [kQueryBlock][kKeyBlock] the softmax's exps in bf16
  // One head's keys and values, packed for vdpbf16ps (see the header), built once per head visited.
  std::vector<uint16_t> kfull, vfull;
  size_t packed_head = SIZE_MAX;
  const uint16_t* kt = nullptr;  // the current key block of kfull
  const uint16_t* vt = nullptr;  // and of vfull

  explicit Bf16Tiles(size_t dim) : st(dim, 16), qb(kQueryBlock * st.dp, 0), ph(kQueryBlock * kKeyBlock, 0) {}
  // flatten: with the bf16 target every kernel below inlines into run_unit's loops (as calls per
  // scores tile and softmax row they cost ~2%; inlined, the unit is ~4% faster than that).
  NINODES_TARGET_BF16 __attribute__((flatten)) void run(const Problem& p, size_t head, size_t q0, size_t nq) { run_unit(p, head, q0, nq, *this); }

  NINODES_TARGET_BF16 void begin(const Problem& p, size_t head, size_t q0, size_t nq) {
    const size_t d = p.dim, dp = st.dp;
    if (packed_head != head) pack_head(p, head);
    std::fill(qb.begin(), qb.end(), 0);
    for (size_t r = 0; r < nq; ++r) {
      const float* qr = p.q + (head * p.seq_q + q0 + r) * d;
      for (size_t i = 0; i < d; i += 16) _mm256_storeu_si256(reinterpret_cast<__m256i*>(qb.data() + r * dp + i), bf16x16(qr + i, d - i));
    }
  }
  void key_block(const Problem& p, size_t head, size_t kb, size_t nk) {
    kt = kfull.data() + kb * st.dp;
    vt = vfull.data() + kb * st.dp;
  }
  void scores(size_t r, size_t jc, float scale) { scores_8x32(qb.data() + r * st.dp, kt, st.pb + r * kKeyBlock, st.dp, jc, scale); }

  // The f32 online softmax of the AVX-512 path (the exps summed in f32), its exps rounded to bf16
  // into ph for P·V (as PyTorch's flash kernel does for reduced-precision inputs).
  NINODES_TARGET_BF16 void softmax_row(size_t r, size_t nk, size_t nkp) {
    online_softmax<__m512, ninodes::ops::exp512, ninodes::ops::hmax512, ninodes::ops::hsum512>(st.pb + r * kKeyBlock, nk, nkp, st.m + r, st.l + r, st.alpha + r,
                                                                                             ExpsToBf16{ph.data() + r * kKeyBlock});
  }

  template <int NR>
  void pv(size_t r, size_t nk) {
    // An odd last key pairs with a padded key whose p is exp(-inf) = 0 and whose v is 0.
    const size_t pairs = (nk + 1) / 2;
    for_each_dim_tile<16>(st.dp, [&](auto nv, size_t dc) {
      pv_tile<NR, decltype(nv)::value>(ph.data() + r * kKeyBlock, vt, st.ob + r * st.dp, st.alpha + r, st.dp, dc, pairs);
    });
  }

  NINODES_TARGET_BF16 void pack_head(const Problem& p, size_t head);
};

// Packs one head's k and v into the pairwise layouts (zero padded: padded keys get p = 0, padded
// head-dim columns contribute 0 to the scores and are never written out).
NINODES_TARGET_BF16 void Bf16Tiles::pack_head(const Problem& p, size_t head) {
  const size_t d = p.dim, dp = st.dp, blocks = (p.seq_k + kKeyBlock - 1) / kKeyBlock;
  kfull.assign(blocks * kKeyBlock * dp, 0);
  vfull.assign(blocks * kKeyBlock * dp, 0);
  const float* kh = p.k + head * p.seq_k * d;
  const float* vh = p.v + head * p.seq_k * d;
  alignas(64) uint32_t pairs[8];
  for (size_t j = 0; j < p.seq_k; ++j) {
    // k row j: 8 pairs along D per conversion, each to its (pair, key) slot of the block.
    uint32_t* kb = reinterpret_cast<uint32_t*>(kfull.data() + (j / kKeyBlock) * kKeyBlock * dp) + j % kKeyBlock;
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
    uint16_t* vb = vfull.data() + (j / kKeyBlock) * kKeyBlock * dp + ((j % kKeyBlock) / 2) * dp * 2;
    for (size_t i = 0; i < d; i += 16) {
      const __m256i a = bf16x16(vh + j * d + i, d - i);
      const __m256i b = second ? bf16x16(vh + (j + 1) * d + i, d - i) : _mm256_setzero_si256();
      const __m512i ab = _mm512_inserti64x4(_mm512_castsi256_si512(a), b, 1);
      _mm512_storeu_si512(vb + i * 2, _mm512_permutexvar_epi16(interleave, ab));
    }
  }
  packed_head = head;
}
#endif

Napi::Value attention_bf16(const Napi::CallbackInfo& info) {
  return ninodes::guarded(info, [](const Napi::CallbackInfo& info) -> Napi::Value {
    const Problem p = ninodes::ops::parse_attention(info, "attentionBf16");
    if (!ninodes::cpu_has_bf16_units())
      fail("BACKEND_UNAVAILABLE", "attention precision 'bf16' needs a CPU with AVX512_BF16 (this one has none, or NINODES_SIMD caps it)");
#if NINODES_HAS_X86
    return ninodes::AsyncOp::start(
        info.Env(), "ninodes.attentionBf16", [p] { run_units<Bf16Tiles>(p); }, [](Napi::Env env) -> Napi::Value { return env.Undefined(); },
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
