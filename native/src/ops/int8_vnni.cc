// AVX512-VNNI int8 GEMM with a fused dequant epilogue; see int8_vnni.h for the layout and why the
// u8 offset is removed exactly. fp-contract=off keeps y = float(acc) * (x_scale * w_scale) + bias
// from becoming an FMA.
#pragma GCC optimize("fp-contract=off")
// GCC 12's AVX-512 headers trip this warning in every caller (a known false positive).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include "ops/int8_vnni.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <vector>

#include "core/cpu_features.h"
#include "core/thread_pool.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace ninodes {

#if defined(__x86_64__)
namespace {

#define NINODES_TARGET_VNNI __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx512vnni,avx2,fma")))

// Output columns (weight rows) per register block, and 16-row activation blocks per register block:
// 8 x 3 accumulators + 3 activation registers of the 32, each broadcast feeding 3 VPDPBUSD.
constexpr size_t kCols = 8;
constexpr int kMaxJ = 3;

// Packs one 16-row block: gathers the 4-byte group k4 of each row into one register (word r = row
// r), flips the sign bit (qx + 128 as u8). Rows at or past `valid` are packed as qx = 0.
NINODES_TARGET_VNNI void pack_block(const int8_t* rows0, size_t valid, size_t k, int8_t* out) {
  const __m512i index = _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15), _mm512_set1_epi32(static_cast<int>(k)));
  const __mmask16 rows = valid >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << valid) - 1);
  const __m512i flip = _mm512_set1_epi32(static_cast<int>(0x80808080u));
  for (size_t q = 0; q < k; q += 4) {
    const __m512i v = _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), rows, index, rows0 + q, 1);
    _mm512_storeu_si512(out + q * 16, _mm512_xor_si512(v, flip));
  }
}

// 128 · sum of each of the 8 weight rows, wrapping like the accumulators (exact where it matters).
NINODES_TARGET_VNNI void offset_terms(const int8_t* w, size_t k, int32_t* comp) {
  const __m512i ones = _mm512_set1_epi8(1);
  for (size_t i = 0; i < kCols; ++i) {
    __m512i s = _mm512_setzero_si512();
    size_t q = 0;
    for (; q + 64 <= k; q += 64) s = _mm512_dpbusd_epi32(s, ones, _mm512_loadu_si512(w + i * k + q));
    if (q < k) s = _mm512_dpbusd_epi32(s, ones, _mm512_maskz_loadu_epi8((~0ull) >> (64 - (k - q)), w + i * k + q));
    const uint32_t sum = static_cast<uint32_t>(_mm512_reduce_add_epi32(s));
    comp[i] = static_cast<int32_t>(sum << 7);
  }
}

// r[i] lane m -> out[m] lane i: 8 rows of 16 -> 16 rows of 8.
NINODES_TARGET_VNNI void transpose8x16(const __m512 (&r)[8], __m256 (&out)[16]) {
  __m512 t[8], u[8];
  for (int h = 0; h < 8; h += 4) {
    t[h] = _mm512_unpacklo_ps(r[h], r[h + 1]);
    t[h + 1] = _mm512_unpackhi_ps(r[h], r[h + 1]);
    t[h + 2] = _mm512_unpacklo_ps(r[h + 2], r[h + 3]);
    t[h + 3] = _mm512_unpackhi_ps(r[h + 2], r[h + 3]);
    // u[h + j], 128-bit lane l = rows h..h+3 at m = 4l + j
    u[h] = _mm512_castpd_ps(_mm512_unpacklo_pd(_mm512_castps_pd(t[h]), _mm512_castps_pd(t[h + 2])));
    u[h + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(_mm512_castps_pd(t[h]), _mm512_castps_pd(t[h + 2])));
    u[h + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(_mm512_castps_pd(t[h + 1]), _mm512_castps_pd(t[h + 3])));
    u[h + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(_mm512_castps_pd(t[h + 1]), _mm512_castps_pd(t[h + 3])));
  }
  for (int j = 0; j < 4; ++j) {
    const __m512 a = _mm512_shuffle_f32x4(u[j], u[4 + j], _MM_SHUFFLE(1, 0, 1, 0));  // [u_j l0, u_j l1, u_4+j l0, u_4+j l1]
    const __m512 b = _mm512_shuffle_f32x4(u[j], u[4 + j], _MM_SHUFFLE(3, 2, 3, 2));
    const __m512 x = _mm512_shuffle_f32x4(a, a, _MM_SHUFFLE(3, 1, 2, 0));  // [u_j l0, u_4+j l0, u_j l1, u_4+j l1]
    const __m512 y = _mm512_shuffle_f32x4(b, b, _MM_SHUFFLE(3, 1, 2, 0));
    out[j] = _mm512_castps512_ps256(x);
    out[4 + j] = _mm512_extractf32x8_ps(x, 1);
    out[8 + j] = _mm512_castps512_ps256(y);
    out[12 + j] = _mm512_extractf32x8_ps(y, 1);
  }
}

// The per-block constants of one group of 8 output columns (zero past the last real column).
struct ColBlock {
  size_t n0, nv;
  int32_t comp[kCols];
  float ws[kCols];
  float bias[kCols];
};

// acc[i][j] lane r = C[m0 + 16 j + r][n0 + i] (before the offset); rows at or past mv are padding.
template <int J>
NINODES_TARGET_VNNI void store_tile(__m512i (&acc)[kCols][J], size_t m0, size_t mv, const ColBlock& cb, size_t n, const Int8Epilogue& out) {
  const __mmask8 cols = cb.nv >= kCols ? __mmask8(0xFF) : __mmask8((1u << cb.nv) - 1);
  for (int j = 0; j < J; ++j) {
    const size_t r0 = m0 + 16 * size_t(j);
    if (16 * size_t(j) >= mv) break;
    const size_t rows = std::min<size_t>(16, mv - 16 * size_t(j));
    __m512i a[kCols];
    for (size_t i = 0; i < kCols; ++i) a[i] = _mm512_sub_epi32(acc[i][j], _mm512_set1_epi32(cb.comp[i]));
    __m256 t[16];
    if (out.acc != nullptr) {
      __m512 f[kCols];
      for (size_t i = 0; i < kCols; ++i) f[i] = _mm512_castsi512_ps(a[i]);
      transpose8x16(f, t);
      for (size_t r = 0; r < rows; ++r) _mm256_mask_storeu_epi32(out.acc + (r0 + r) * n + cb.n0, cols, _mm256_castps_si256(t[r]));
    }
    if (out.y != nullptr) {
      const __mmask16 live = rows >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << rows) - 1);
      const __m512 xs = _mm512_maskz_loadu_ps(live, out.x_scale + r0);
      __m512 v[kCols];
      for (size_t i = 0; i < kCols; ++i) {
        // x_scale * w_scale (multiplication commutes bit for bit), times float(acc), plus bias.
        const __m512 s = _mm512_mul_ps(xs, _mm512_set1_ps(cb.ws[i]));
        v[i] = _mm512_mul_ps(_mm512_cvtepi32_ps(a[i]), s);
        if (out.bias != nullptr) v[i] = _mm512_add_ps(v[i], _mm512_set1_ps(cb.bias[i]));
      }
      transpose8x16(v, t);
      for (size_t r = 0; r < rows; ++r) _mm256_mask_storeu_ps(out.y + (r0 + r) * n + cb.n0, cols, t[r]);
    }
  }
}

// One register block: 8 weight rows (stride k) x J packed 16-row activation blocks, over all of K.
// The 8 x J accumulators are named variables: as an array GCC 12 kept them on the stack and
// stored every one after every VPDPBUSD (half the speed).
template <int J>
NINODES_TARGET_VNNI void block(const int8_t* xp, size_t k, const int8_t* w, size_t m0, size_t mv, const ColBlock& cb, size_t n, const Int8Epilogue& out) {
  const __m512i z = _mm512_setzero_si512();
#define NINODES_VNNI_DECL(i) __m512i c##i##0 = z, c##i##1 = z, c##i##2 = z;
  NINODES_VNNI_DECL(0) NINODES_VNNI_DECL(1) NINODES_VNNI_DECL(2) NINODES_VNNI_DECL(3)
  NINODES_VNNI_DECL(4) NINODES_VNNI_DECL(5) NINODES_VNNI_DECL(6) NINODES_VNNI_DECL(7)
  const size_t xstride = 16 * k;
  const int8_t* w0 = w;
  const int8_t* w4 = w + 4 * k;
  for (size_t q = 0; q < k; q += 4) {
    const __m512i x0 = _mm512_loadu_si512(xp + q * 16);
    const __m512i x1 = J > 1 ? _mm512_loadu_si512(xp + xstride + q * 16) : z;
    const __m512i x2 = J > 2 ? _mm512_loadu_si512(xp + 2 * xstride + q * 16) : z;
#define NINODES_VNNI_STEP(i, base, row)                              \
  {                                                                 \
    int32_t word;                                                   \
    std::memcpy(&word, base + (row) * k + q, 4);                    \
    const __m512i b = _mm512_set1_epi32(word);                      \
    c##i##0 = _mm512_dpbusd_epi32(c##i##0, x0, b);                  \
    if (J > 1) c##i##1 = _mm512_dpbusd_epi32(c##i##1, x1, b);       \
    if (J > 2) c##i##2 = _mm512_dpbusd_epi32(c##i##2, x2, b);       \
  }
    NINODES_VNNI_STEP(0, w0, 0) NINODES_VNNI_STEP(1, w0, 1) NINODES_VNNI_STEP(2, w0, 2) NINODES_VNNI_STEP(3, w0, 3)
    NINODES_VNNI_STEP(4, w4, 0) NINODES_VNNI_STEP(5, w4, 1) NINODES_VNNI_STEP(6, w4, 2) NINODES_VNNI_STEP(7, w4, 3)
#undef NINODES_VNNI_STEP
  }
  __m512i acc[kCols][J];
#define NINODES_VNNI_KEEP(i)              \
  acc[i][0] = c##i##0;                    \
  if constexpr (J > 1) acc[i][J > 1 ? 1 : 0] = c##i##1; \
  if constexpr (J > 2) acc[i][J > 2 ? 2 : 0] = c##i##2;
  NINODES_VNNI_KEEP(0) NINODES_VNNI_KEEP(1) NINODES_VNNI_KEEP(2) NINODES_VNNI_KEEP(3)
  NINODES_VNNI_KEEP(4) NINODES_VNNI_KEEP(5) NINODES_VNNI_KEEP(6) NINODES_VNNI_KEEP(7)
#undef NINODES_VNNI_KEEP
#undef NINODES_VNNI_DECL
  store_tile<J>(acc, m0, mv, cb, n, out);
}

// Packed activation rows kept hot in L2 while a thread's weight columns stream past them.
size_t rows_per_pass(size_t k) { return std::max<size_t>(48, (size_t(512) << 10) / std::max<size_t>(k, 1) / 48 * 48); }

// One pass (rows [p0, p1) of the packed activations, hot in L2) against weight blocks [nb0, nb1).
NINODES_TARGET_VNNI void gemm_columns(const int8_t* packed, const int8_t* w, size_t p0, size_t p1, size_t k, size_t n, size_t nb0, size_t nb1,
                                      const Int8Epilogue& out, std::vector<ColBlock>& blocks) {
  thread_local std::vector<int8_t> tail;  // the last, partial 8-row weight block, zero-padded
  for (size_t nb = nb0; nb < nb1; ++nb) {
    ColBlock& cb = blocks[nb];
    const size_t n0 = nb * kCols, nv = std::min(kCols, n - n0);
    const int8_t* w0 = w + n0 * k;
    if (nv < kCols) {
      tail.assign(kCols * k, 0);
      std::memcpy(tail.data(), w0, nv * k);
      w0 = tail.data();
    }
    if (p0 == 0) {
      cb.n0 = n0;
      cb.nv = nv;
      offset_terms(w0, k, cb.comp);
      for (size_t i = 0; i < kCols; ++i) {
        cb.ws[i] = out.w_scale != nullptr && i < nv ? out.w_scale[n0 + i] : 0.0f;
        cb.bias[i] = out.bias != nullptr && i < nv ? out.bias[n0 + i] : 0.0f;
      }
    }
    size_t m0 = p0;
    for (; m0 + 16 * kMaxJ <= p1; m0 += 16 * kMaxJ) block<kMaxJ>(packed + m0 * k, k, w0, m0, 16 * kMaxJ, cb, n, out);
    if (m0 < p1) {
      // The last 1..47 rows: as many 16-row blocks as they need.
      const size_t left = p1 - m0;
      if (left > 32) {
        block<3>(packed + m0 * k, k, w0, m0, left, cb, n, out);
      } else if (left > 16) {
        block<2>(packed + m0 * k, k, w0, m0, left, cb, n, out);
      } else {
        block<1>(packed + m0 * k, k, w0, m0, left, cb, n, out);
      }
    }
  }
}

void serial_for(size_t count, size_t, const RangeFn& fn) {
  if (count != 0) fn(0, count);
}

}  // namespace

bool vnni_int8_supported() {
  static const bool cpu = cpu_has_avx512() && __builtin_cpu_supports("avx512vnni");
  return cpu && use_avx512();
}

size_t vnni_packed_bytes(size_t m, size_t k) { return (m + 15) / 16 * 16 * k; }

void vnni_pack_activations(const int8_t* qx, size_t m, size_t k, int8_t* packed, ParallelFor pfor) {
  pfor((m + 15) / 16, 4, [&](size_t b, size_t e) {
    for (size_t block = b; block < e; ++block) {
      const size_t r0 = block * 16;
      pack_block(qx + r0 * k, std::min<size_t>(16, m - r0), k, packed + block * 16 * k);
    }
  });
}

void vnni_quantize_pack(const float* x, size_t m, size_t k, size_t group, bool regular, const float* external_scale,
                        int8_t* packed, float* scale, ParallelFor pfor) {
  pfor((m + 15) / 16, 1, [&](size_t b, size_t e) {
    thread_local std::vector<int8_t> staging;
    staging.resize(16 * k);
    for (size_t block = b; block < e; ++block) {
      const size_t r0 = block * 16, valid = std::min<size_t>(16, m - r0);
      quantize_rows_int8(x + r0 * k, valid, k, group, regular, external_scale != nullptr ? external_scale + r0 : nullptr, staging.data(), scale + r0, serial_for);
      pack_block(staging.data(), valid, k, packed + block * 16 * k);
    }
  });
}

void vnni_int8_gemm(const int8_t* packed, const int8_t* w, size_t m, size_t k, size_t n, const Int8Epilogue& out, ParallelFor pfor) {
  if (m == 0 || n == 0) return;
  std::vector<ColBlock> blocks((n + kCols - 1) / kCols);
  // Threads take groups of weight blocks from a shared counter, one pass of rows at a time, so a
  // thread the OS slows down (a shared machine) does less of the pass instead of holding up the
  // others at the join. Each output is still computed whole by one thread: same bits.
  const size_t workers = static_cast<size_t>(std::max(1, thread_count()));
  const size_t group = std::max<size_t>(1, std::min<size_t>(8, blocks.size() / (workers * 8)));
  const size_t groups = (blocks.size() + group - 1) / group;
  const size_t pass = rows_per_pass(k);
  for (size_t p0 = 0; p0 < m; p0 += pass) {
    const size_t p1 = std::min(m, p0 + pass);
    std::atomic<size_t> next{0};
    pfor(std::min(workers, groups), 1, [&](size_t, size_t) {
      for (size_t g = next.fetch_add(1); g < groups; g = next.fetch_add(1))
        gemm_columns(packed, w, p0, p1, k, n, g * group, std::min(blocks.size(), (g + 1) * group), out, blocks);
    });
  }
}

#else  // not x86-64: no VNNI; callers check vnni_int8_supported() first
bool vnni_int8_supported() { return false; }
size_t vnni_packed_bytes(size_t m, size_t k) { return (m + 15) / 16 * 16 * k; }
void vnni_pack_activations(const int8_t*, size_t, size_t, int8_t*, ParallelFor) {}
void vnni_quantize_pack(const float*, size_t, size_t, size_t, bool, const float*, int8_t*, float*, ParallelFor) {}
void vnni_int8_gemm(const int8_t*, const int8_t*, size_t, size_t, size_t, const Int8Epilogue&, ParallelFor) {}
#endif

}  // namespace ninodes
