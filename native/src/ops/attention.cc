// GCC 12's AVX-512 headers start several intrinsics from _mm512_undefined_*(), which trips these
// warnings in every caller (a known false positive); nothing here reads an undefined value.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
// Scaled dot-product attention, fp32, tiled flash-style: q [H,S,D], k/v [H,T,D] -> out [H,S,D].
//
// Work units are (head, block of kQueryBlock queries); each unit streams the keys in blocks of
// kKeyBlock with an online softmax (running max m, running sum l, rescaled accumulator), so extra
// memory is O(kQueryBlock·D + kKeyBlock·D) per thread, never O(S·T). Every query row's arithmetic
// (the order of its dot products, exps and accumulations) is fixed by the block sizes alone, not by
// which thread runs it or how rows are grouped, so results are bit-identical for any thread count
// and for any split of the heads.
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
#include "ops/op_args.h"
#include "ops/vec_math.h"

namespace {

using ninodes::fail;
using namespace ninodes::ops;
using Problem = ninodes::ops::AttentionProblem;
constexpr auto parse = ninodes::ops::parse_attention;
constexpr auto empty_output = ninodes::ops::attention_output_empty;

constexpr size_t kQueryBlock = 32;
constexpr size_t kKeyBlock = 64;
constexpr float kNegInf = -std::numeric_limits<float>::infinity();

size_t round_up(size_t n, size_t m) { return (n + m - 1) / m * m; }

// ---- scalar path ---------------------------------------------------------------------------------

void unit_scalar(const Problem& p, size_t head, size_t q0, size_t nq, std::vector<float>& scratch) {
  const size_t d = p.dim;
  scratch.assign(d + kKeyBlock, 0.f);
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

// ---- AVX2 path -----------------------------------------------------------------------------------
#if NINODES_HAS_X86

struct Scratch {
  std::vector<float> buf;
  float *qb, *vb, *ob, *pb, *m, *l, *alpha;
  size_t dp;
  // The whole head's keys, transposed block by block ([T/kKeyBlock][dp][kKeyBlock], zero padded:
  // each block a contiguous 16 KiB-ish tile), built once per head this thread visits instead of once
  // per (query block, key block): O(seq·dim) per thread.
  std::vector<float> kfull;
  size_t kfull_head = SIZE_MAX;
  // lanes: the SIMD width in floats; rows are padded to it.
  void init(size_t dim, size_t lanes) {
    dp = round_up(std::max<size_t>(dim, 1), lanes);
    const size_t need = kQueryBlock * dp + kKeyBlock * dp + kQueryBlock * dp + kQueryBlock * kKeyBlock +
                        3 * kQueryBlock + 64;
    buf.assign(need, 0.f);
    // 64-byte alignment for the packed tiles.
    float* base = buf.data();
    base += (16 - (reinterpret_cast<uintptr_t>(base) / 4) % 16) % 16;
    qb = base;
    vb = qb + kQueryBlock * dp;
    ob = vb + kKeyBlock * dp;
    pb = ob + kQueryBlock * dp;
    m = pb + kQueryBlock * kKeyBlock;
    l = m + kQueryBlock;
    alpha = l + kQueryBlock;
  }
};

// Scores for 4 query rows x 16 keys: fma chains over d in order.
NINODES_TARGET_AVX2 void scores_4x16(const float* qb, const float* kt, float* pb, size_t dp, size_t jc, float scale) {
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

// o[r] = o[r] * alpha[r] + sum_j p[r][j] * v[j] for NR rows and NV vectors of the head dimension.
template <int NR, int NV>
NINODES_TARGET_AVX2 void pv_tile(const float* pb, const float* vb, float* ob, const float* alpha, size_t dp, size_t dc,
                                 size_t nk) {
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

template <int NR>
NINODES_TARGET_AVX2 void pv_rows(const float* pb, const float* vb, float* ob, const float* alpha, size_t dp, size_t nk) {
  size_t dc = 0;
  for (; dc + 32 <= dp; dc += 32) pv_tile<NR, 4>(pb, vb, ob, alpha, dp, dc, nk);
  switch ((dp - dc) / 8) {
    case 3: pv_tile<NR, 3>(pb, vb, ob, alpha, dp, dc, nk); break;
    case 2: pv_tile<NR, 2>(pb, vb, ob, alpha, dp, dc, nk); break;
    case 1: pv_tile<NR, 1>(pb, vb, ob, alpha, dp, dc, nk); break;
    default: break;
  }
}

// Online softmax of one row of scores (nkp of them, the last nkp - nk padding): exps in place,
// running max and sum updated, the rescale factor of the old accumulator in *alpha.
NINODES_TARGET_AVX2 void softmax_row_avx2(float* pr, size_t nk, size_t nkp, float* m, float* l, float* alpha) {
  for (size_t j = nk; j < nkp; ++j) pr[j] = kNegInf;
  __m256 vmax = _mm256_set1_ps(kNegInf);
  for (size_t j = 0; j < nkp; j += 8) vmax = _mm256_max_ps(vmax, _mm256_load_ps(pr + j));
  const float mnew = std::max(*m, hmax256(vmax));
  const __m256 vm = _mm256_set1_ps(mnew);
  __m256 vsum = _mm256_setzero_ps();
  for (size_t j = 0; j < nkp; j += 8) {
    const __m256 e = exp256(_mm256_sub_ps(_mm256_load_ps(pr + j), vm));
    _mm256_store_ps(pr + j, e);
    vsum = _mm256_add_ps(vsum, e);
  }
  *alpha = std::exp(*m - mnew);
  *l = *l * *alpha + hsum256(vsum);
  *m = mnew;
}

struct Avx2Kernels {
  static constexpr size_t kLanes = 8;
  static constexpr size_t kScoreRows = 4;   // query rows per scores call
  static constexpr size_t kScoreKeys = 16;  // keys per scores call
  static void scores(const float* qb, const float* kt, float* pb, size_t dp, size_t jc, float scale) { scores_4x16(qb, kt, pb, dp, jc, scale); }
  static void softmax_row(float* pr, size_t nk, size_t nkp, float* m, float* l, float* alpha) { softmax_row_avx2(pr, nk, nkp, m, l, alpha); }
  static constexpr size_t kPvRows = 2;  // query rows per P·V call (16 ymm registers)
  static void pv_wide(const float* pb, const float* vb, float* ob, const float* alpha, size_t dp, size_t nk) { pv_rows<2>(pb, vb, ob, alpha, dp, nk); }
  static void pv1(const float* pb, const float* vb, float* ob, const float* alpha, size_t dp, size_t nk) { pv_rows<1>(pb, vb, ob, alpha, dp, nk); }
};

// One (head, query block) unit on a SIMD path K: packing and loops here, arithmetic in K.
template <class K>
void unit_simd(const Problem& p, size_t head, size_t q0, size_t nq, Scratch& sc) {
  const size_t d = p.dim, dp = sc.dp;
  const size_t nqs = round_up(nq, K::kScoreRows);
  // Queries, zero padded to dp columns and to the block's 32 rows.
  std::memset(sc.qb, 0, sizeof(float) * kQueryBlock * dp);
  for (size_t r = 0; r < nq; ++r) std::memcpy(sc.qb + r * dp, p.q + (head * p.seq_q + q0 + r) * d, d * sizeof(float));
  std::memset(sc.ob, 0, sizeof(float) * kQueryBlock * dp);
  for (size_t r = 0; r < nq; ++r) {
    sc.m[r] = kNegInf;
    sc.l[r] = 0.f;
  }
  const float* kh = p.k + head * p.seq_k * d;
  const float* vh = p.v + head * p.seq_k * d;
  if (sc.kfull_head != head) {
    sc.kfull.assign(round_up(p.seq_k, kKeyBlock) * dp, 0.f);
    for (size_t j = 0; j < p.seq_k; ++j) {
      const float* kr = kh + j * d;
      float* block = sc.kfull.data() + (j / kKeyBlock) * dp * kKeyBlock + j % kKeyBlock;
      for (size_t i = 0; i < d; ++i) block[i * kKeyBlock] = kr[i];
    }
    sc.kfull_head = head;
  }
  // Rows of v are read in place when they are already SIMD-width padded (d == dp).
  const bool v_in_place = d == dp;
  for (size_t kb = 0; kb < p.seq_k; kb += kKeyBlock) {
    const size_t nk = std::min(kKeyBlock, p.seq_k - kb);
    const size_t nkp = round_up(nk, K::kScoreKeys);
    const float* vb = vh + kb * d;
    if (!v_in_place) {
      for (size_t j = 0; j < nk; ++j) std::memcpy(sc.vb + j * dp, vh + (kb + j) * d, d * sizeof(float));
      vb = sc.vb;
    }
    const float* kt = sc.kfull.data() + kb * dp;
    for (size_t r = 0; r < nqs; r += K::kScoreRows) {
      for (size_t jc = 0; jc < nkp; jc += K::kScoreKeys) K::scores(sc.qb + r * dp, kt, sc.pb + r * kKeyBlock, dp, jc, p.scale);
    }
    // Online softmax per row; padded key lanes become exp(-inf) = 0.
    for (size_t r = 0; r < nq; ++r) K::softmax_row(sc.pb + r * kKeyBlock, nk, nkp, sc.m + r, sc.l + r, sc.alpha + r);
    size_t r = 0;
    for (; r + K::kPvRows <= nq; r += K::kPvRows) K::pv_wide(sc.pb + r * kKeyBlock, vb, sc.ob + r * dp, sc.alpha + r, dp, nk);
    for (; r < nq; ++r) K::pv1(sc.pb + r * kKeyBlock, vb, sc.ob + r * dp, sc.alpha + r, dp, nk);
  }
  for (size_t r = 0; r < nq; ++r) {
    float* o = ninodes::ops::attention_out_row(p, head, q0 + r);
    const float* a = sc.ob + r * dp;
    if (p.seq_k == 0) {
      std::fill(o, o + d, 0.f);
      continue;
    }
    const float l = sc.l[r];
    for (size_t i = 0; i < d; ++i) o[i] = a[i] / l;
  }
}

// ---- AVX-512 path: the same blocks with 16 lanes (twice the FMA width per instruction) ----------

// Scores for 8 query rows x 32 keys (16 accumulators of the 32 zmm registers).
NINODES_TARGET_AVX512 void scores_8x32(const float* qb, const float* kt, float* pb, size_t dp, size_t jc, float scale) {
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

NINODES_TARGET_AVX512 void softmax_row_avx512(float* pr, size_t nk, size_t nkp, float* m, float* l, float* alpha) {
  for (size_t j = nk; j < nkp; ++j) pr[j] = kNegInf;
  __m512 vmax = _mm512_set1_ps(kNegInf);
  for (size_t j = 0; j < nkp; j += 16) vmax = _mm512_max_ps(vmax, _mm512_load_ps(pr + j));
  const float mnew = std::max(*m, _mm512_reduce_max_ps(vmax));
  const __m512 vm = _mm512_set1_ps(mnew);
  __m512 vsum = _mm512_setzero_ps();
  for (size_t j = 0; j < nkp; j += 16) {
    const __m512 e = exp512(_mm512_sub_ps(_mm512_load_ps(pr + j), vm));
    _mm512_store_ps(pr + j, e);
    vsum = _mm512_add_ps(vsum, e);
  }
  *alpha = std::exp(*m - mnew);
  *l = *l * *alpha + _mm512_reduce_add_ps(vsum);
  *m = mnew;
}

template <int NR, int NV>
NINODES_TARGET_AVX512 void pv_tile512(const float* pb, const float* vb, float* ob, const float* alpha, size_t dp, size_t dc, size_t nk) {
  __m512 acc[NR][NV];
  for (int r = 0; r < NR; ++r) {
    const __m512 a = _mm512_set1_ps(alpha[r]);
    for (int i = 0; i < NV; ++i) acc[r][i] = _mm512_mul_ps(_mm512_load_ps(ob + r * dp + dc + 16 * i), a);
  }
  for (size_t j = 0; j < nk; ++j) {
    __m512 vv[NV];
    for (int i = 0; i < NV; ++i) vv[i] = _mm512_loadu_ps(vb + j * dp + dc + 16 * i);
    for (int r = 0; r < NR; ++r) {
      const __m512 pj = _mm512_set1_ps(pb[r * kKeyBlock + j]);
      for (int i = 0; i < NV; ++i) acc[r][i] = _mm512_fmadd_ps(pj, vv[i], acc[r][i]);
    }
  }
  for (int r = 0; r < NR; ++r) {
    for (int i = 0; i < NV; ++i) _mm512_store_ps(ob + r * dp + dc + 16 * i, acc[r][i]);
  }
}

template <int NR>
NINODES_TARGET_AVX512 void pv_rows512(const float* pb, const float* vb, float* ob, const float* alpha, size_t dp, size_t nk) {
  size_t dc = 0;
  for (; dc + 64 <= dp; dc += 64) pv_tile512<NR, 4>(pb, vb, ob, alpha, dp, dc, nk);
  switch ((dp - dc) / 16) {
    case 3: pv_tile512<NR, 3>(pb, vb, ob, alpha, dp, dc, nk); break;
    case 2: pv_tile512<NR, 2>(pb, vb, ob, alpha, dp, dc, nk); break;
    case 1: pv_tile512<NR, 1>(pb, vb, ob, alpha, dp, dc, nk); break;
    default: break;
  }
}

struct Avx512Kernels {
  static constexpr size_t kLanes = 16;
  static constexpr size_t kScoreRows = 8;
  static constexpr size_t kScoreKeys = 32;
  static void scores(const float* qb, const float* kt, float* pb, size_t dp, size_t jc, float scale) { scores_8x32(qb, kt, pb, dp, jc, scale); }
  static void softmax_row(float* pr, size_t nk, size_t nkp, float* m, float* l, float* alpha) { softmax_row_avx512(pr, nk, nkp, m, l, alpha); }
  static constexpr size_t kPvRows = 4;  // 32 zmm registers: 4 rows x 4 accumulators + 4 of v
  static void pv_wide(const float* pb, const float* vb, float* ob, const float* alpha, size_t dp, size_t nk) { pv_rows512<4>(pb, vb, ob, alpha, dp, nk); }
  static void pv1(const float* pb, const float* vb, float* ob, const float* alpha, size_t dp, size_t nk) { pv_rows512<1>(pb, vb, ob, alpha, dp, nk); }
};

// Runs units [u0, u1) of one parallel chunk on path K.
template <class K>
void run_units(const Problem& p, size_t blocks, size_t u0, size_t u1) {
  Scratch sc;
  sc.init(p.dim, K::kLanes);
  for (size_t u = u0; u < u1; ++u) {
    const size_t head = u / blocks, q0 = (u % blocks) * kQueryBlock;
    unit_simd<K>(p, head, q0, std::min(kQueryBlock, p.seq_q - q0), sc);
  }
}
#endif


void run_tiled(const Problem& p) {
  if (empty_output(p)) return;
  const size_t blocks = (p.seq_q + kQueryBlock - 1) / kQueryBlock;
  const size_t units = p.heads * blocks;
  const bool avx2 = ninodes::use_avx2(), avx512 = ninodes::use_avx512();
  ninodes::parallel_for(units, 1, [&](size_t u0, size_t u1) {
#if NINODES_HAS_X86
    if (avx512) return run_units<Avx512Kernels>(p, blocks, u0, u1);
    if (avx2) return run_units<Avx2Kernels>(p, blocks, u0, u1);
#endif
    std::vector<float> scratch;
    for (size_t u = u0; u < u1; ++u) {
      const size_t head = u / blocks, q0 = (u % blocks) * kQueryBlock;
      unit_scalar(p, head, q0, std::min(kQueryBlock, p.seq_q - q0), scratch);
    }
  });
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
