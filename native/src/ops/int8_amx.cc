// AMX int8 GEMM with a fused dequant epilogue; see int8_amx.h for why the product is transposed.
// fp-contract=off keeps y = float(acc) * (x_scale * w_scale) + bias from becoming an FMA.
#pragma GCC optimize("fp-contract=off")
// GCC 12's AVX-512 headers start several intrinsics from _mm512_undefined_*(), which trips this
// warning in every caller (a known false positive); nothing here reads an undefined value.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include "ops/int8_amx.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "core/cpu_features.h"

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace ninodes {

#if defined(__x86_64__)
namespace {

#define NINODES_TARGET_AMX __attribute__((target("avx512f,avx512bw,amx-tile,amx-int8")))

constexpr int kArchReqXcompPerm = 0x1023;  // arch_prctl: request permission for a dynamic xstate
constexpr int kXfeatureXtiledata = 18;

// The epilogue and packing are AVX-512 code, so the AVX-512 tier (CPU and OS) comes first; that
// also guarantees OSXSAVE, so XGETBV is safe to run.
bool probe_amx() {
  if (!cpu_has_avx512()) return false;
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (__get_cpuid_count(7, 0, &a, &b, &c, &d) == 0) return false;
  if ((d & (1u << 24)) == 0 || (d & (1u << 25)) == 0) return false;  // AMX-TILE, AMX-INT8
  unsigned lo = 0, hi = 0;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  const unsigned long long xcr0 = (static_cast<unsigned long long>(hi) << 32) | lo;
  const unsigned long long tile_state = 3ull << 17;  // XTILECFG, XTILEDATA
  if ((xcr0 & tile_state) != tile_state) return false;
  // Linux hands tile state out per process on request; refused (old kernel, small sigaltstack) = no AMX.
  return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
}

// LDTILECFG's 64-byte operand: palette 1, eight 16-row x 64-byte tiles.
struct alignas(64) TileConfig {
  uint8_t palette = 1;
  uint8_t start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {};
  uint8_t rows[16] = {};
};

// Tiles: 0..3 accumulators (2 x 2 blocks of 16 n x 16 m), 4..5 weight rows, 6..7 packed activations.
NINODES_TARGET_AMX void load_tile_config() {
  TileConfig cfg;
  for (int t = 0; t < 8; ++t) {
    cfg.colsb[t] = 64;
    cfg.rows[t] = 16;
  }
  _tile_loadconfig(&cfg);
}

// 16 x 16 int32 transpose: dst[j][i] = src[i][j]; strides in elements.
NINODES_TARGET_AMX void transpose16(const int32_t* src, size_t ss, int32_t* dst, size_t ds) {
  __m512i r[16], t[16], u[16];
  for (int i = 0; i < 16; ++i) r[i] = _mm512_loadu_si512(src + i * ss);
  for (int i = 0; i < 16; i += 2) {
    t[i] = _mm512_unpacklo_epi32(r[i], r[i + 1]);
    t[i + 1] = _mm512_unpackhi_epi32(r[i], r[i + 1]);
  }
  // u[4g + j], 128-bit lane l = rows 4g..4g+3 of column 4l + j
  for (int g = 0; g < 16; g += 4) {
    u[g] = _mm512_unpacklo_epi64(t[g], t[g + 2]);
    u[g + 1] = _mm512_unpackhi_epi64(t[g], t[g + 2]);
    u[g + 2] = _mm512_unpacklo_epi64(t[g + 1], t[g + 3]);
    u[g + 3] = _mm512_unpackhi_epi64(t[g + 1], t[g + 3]);
  }
  for (int j = 0; j < 4; ++j) {
    const __m512i x0 = _mm512_shuffle_i32x4(u[j], u[4 + j], 0x44), x1 = _mm512_shuffle_i32x4(u[j], u[4 + j], 0xEE);
    const __m512i y0 = _mm512_shuffle_i32x4(u[8 + j], u[12 + j], 0x44), y1 = _mm512_shuffle_i32x4(u[8 + j], u[12 + j], 0xEE);
    _mm512_storeu_si512(dst + (j)*ds, _mm512_shuffle_i32x4(x0, y0, 0x88));
    _mm512_storeu_si512(dst + (4 + j) * ds, _mm512_shuffle_i32x4(x0, y0, 0xDD));
    _mm512_storeu_si512(dst + (8 + j) * ds, _mm512_shuffle_i32x4(x1, y1, 0x88));
    _mm512_storeu_si512(dst + (12 + j) * ds, _mm512_shuffle_i32x4(x1, y1, 0xDD));
  }
}

// `valid` rows of k int8 starting at `rows0` -> one packed 16-row block; missing rows are zero.
NINODES_TARGET_AMX void pack_block(const int8_t* rows0, size_t valid, size_t k, int8_t* out) {
  alignas(64) int32_t rows[16 * 16];
  for (size_t kc = 0; kc < k; kc += 64) {
    for (size_t r = 0; r < 16; ++r) {
      const __m512i v = r < valid ? _mm512_loadu_si512(rows0 + r * k + kc) : _mm512_setzero_si512();
      _mm512_store_si512(rows + r * 16, v);
    }
    transpose16(rows, 16, reinterpret_cast<int32_t*>(out + kc * 16), 16);
  }
}

// One 32-row x 32-column output block from its four accumulator tiles, stored as ct[m][n].
NINODES_TARGET_AMX void store_block(int32_t* ct, size_t m0, size_t mv, size_t n0, size_t nv, size_t n, const Int8Epilogue& out) {
  for (size_t r = 0; r < mv; ++r) {
    const size_t row = m0 + r;
    for (size_t g = 0; g < 32 && g < nv; g += 16) {
      const __mmask16 mask = nv - g >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << (nv - g)) - 1);
      const __m512i acc = _mm512_load_si512(ct + r * 32 + g);
      const size_t at = row * n + n0 + g;
      if (out.acc != nullptr) _mm512_mask_storeu_epi32(out.acc + at, mask, acc);
      if (out.y != nullptr) {
        const __m512 s = _mm512_mul_ps(_mm512_set1_ps(out.x_scale[row]), _mm512_maskz_loadu_ps(mask, out.w_scale + n0 + g));
        __m512 v = _mm512_mul_ps(_mm512_cvtepi32_ps(acc), s);
        if (out.bias != nullptr) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(mask, out.bias + n0 + g));
        _mm512_mask_storeu_ps(out.y + at, mask, v);
      }
    }
  }
}

// Rows of the packed activations kept hot in L2 while the weights stream past them once.
size_t rows_per_pass(size_t k) { return std::max<size_t>(32, (size_t(1) << 20) / std::max<size_t>(k, 1) / 32 * 32); }

NINODES_TARGET_AMX void gemm_columns(const int8_t* packed, const int8_t* w, size_t m, size_t k, size_t n, size_t nb0, size_t nb1, const Int8Epilogue& out) {
  load_tile_config();
  alignas(64) int32_t cb[32 * 32], ct[32 * 32];
  thread_local std::vector<int8_t> tail;  // the last, partial 32-row weight block, zero-padded
  const size_t pass = rows_per_pass(k);
  for (size_t p0 = 0; p0 < m; p0 += pass) {
    const size_t p1 = std::min(m, p0 + pass);
    for (size_t nb = nb0; nb < nb1; ++nb) {
      const size_t n0 = nb * 32, nv = std::min<size_t>(32, n - n0);
      const int8_t* w0 = w + n0 * k;
      if (nv < 32) {
        tail.assign(32 * k, 0);
        std::memcpy(tail.data(), w0, nv * k);
        w0 = tail.data();
      }
      const int8_t* w1 = w0 + 16 * k;
      for (size_t m0 = p0; m0 < p1; m0 += 32) {
        const int8_t* q0 = packed + m0 * k;
        const int8_t* q1 = q0 + 16 * k;
        _tile_zero(0);
        _tile_zero(1);
        _tile_zero(2);
        _tile_zero(3);
        for (size_t kk = 0; kk < k; kk += 64) {
          _tile_loadd(4, w0 + kk, k);
          _tile_loadd(6, q0 + kk * 16, 64);
          _tile_loadd(7, q1 + kk * 16, 64);
          _tile_dpbssd(0, 4, 6);
          _tile_dpbssd(1, 4, 7);
          _tile_loadd(5, w1 + kk, k);
          _tile_dpbssd(2, 5, 6);
          _tile_dpbssd(3, 5, 7);
        }
        // cb[n][m]: tile (weight half i, activation half j) at cb + i*16*32 + j*16
        _tile_stored(0, cb, 128);
        _tile_stored(1, cb + 16, 128);
        _tile_stored(2, cb + 512, 128);
        _tile_stored(3, cb + 528, 128);
        for (int i = 0; i < 2; ++i)
          for (int j = 0; j < 2; ++j) transpose16(cb + i * 512 + j * 16, 32, ct + j * 512 + i * 16, 32);
        store_block(ct, m0, std::min<size_t>(32, m - m0), n0, nv, n, out);
      }
    }
  }
  _tile_release();
}

}  // namespace

bool amx_int8_supported() {
  static const bool supported = probe_amx();
  return supported;
}

size_t amx_packed_bytes(size_t m, size_t k) { return (m + 31) / 32 * 32 * k; }

void amx_pack_activations(const int8_t* qx, size_t m, size_t k, int8_t* packed, ParallelFor pfor) {
  pfor((m + 31) / 32 * 2, 4, [&](size_t b, size_t e) {
    for (size_t block = b; block < e; ++block) {
      const size_t r0 = block * 16;
      pack_block(qx + std::min(r0, m) * k, r0 < m ? std::min<size_t>(16, m - r0) : 0, k, packed + block * 16 * k);
    }
  });
}

namespace {
void serial_for(size_t count, size_t, const RangeFn& fn) {
  if (count != 0) fn(0, count);
}
}  // namespace

void amx_quantize_pack(const float* x, size_t m, size_t k, size_t group, bool regular, const float* external_scale,
                       int8_t* packed, float* scale, ParallelFor pfor) {
  pfor((m + 31) / 32 * 2, 2, [&](size_t b, size_t e) {
    thread_local std::vector<int8_t> staging;
    staging.resize(16 * k);
    for (size_t block = b; block < e; ++block) {
      const size_t r0 = block * 16, valid = r0 < m ? std::min<size_t>(16, m - r0) : 0;
      if (valid != 0) quantize_rows_int8(x + r0 * k, valid, k, group, regular, external_scale != nullptr ? external_scale + r0 : nullptr, staging.data(), scale + r0, serial_for);
      pack_block(staging.data(), valid, k, packed + block * 16 * k);
    }
  });
}

void amx_int8_gemm(const int8_t* packed, const int8_t* w, size_t m, size_t k, size_t n, const Int8Epilogue& out, ParallelFor pfor) {
  if (m == 0 || n == 0) return;
  pfor((n + 31) / 32, 1, [&](size_t b, size_t e) { gemm_columns(packed, w, m, k, n, b, e, out); });
}

#else  // not x86-64: no AMX; callers check amx_int8_supported() first
void amx_quantize_pack(const float*, size_t, size_t, size_t, bool, const float*, int8_t*, float*, ParallelFor) {}

bool amx_int8_supported() { return false; }
size_t amx_packed_bytes(size_t m, size_t k) { return (m + 31) / 32 * 32 * k; }
void amx_pack_activations(const int8_t*, size_t, size_t, int8_t*, ParallelFor) {}
void amx_int8_gemm(const int8_t*, const int8_t*, size_t, size_t, size_t, const Int8Epilogue&, ParallelFor) {}

#endif

}  // namespace ninodes
