#pragma GCC optimize("fp-contract=off")
// fp32 linear (oneDNN matmul), exact int8 matmul (oneDNN s8s8->s32 where the CPU has VNNI/AMX, else
// a hand-written int16-madd kernel) and the fused int8 linear: rotate + quantize rows, int8 matmul,
// then y = float(acc) * (x_scale * w_scale) + bias in exactly that float order (no FMA: the
// pragma above keeps the compiler from contracting it).
#include <napi.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "core/async.h"
#include "core/cpu_features.h"
#include "core/errors.h"
#include "core/registry.h"
#include "core/thread_pool.h"
#include "ops/hadamard.h"
#include "ops/int8_amx.h"
#include "ops/int8_backend.h"
#include "ops/int8_quantize.h"
#include "ops/int8_vnni.h"
#include "ops/onednn_context.h"
#include "ops/span_args.h"
#include "tensor/float_convert.h"

namespace ninodes {
namespace {

using dnnl::memory;

constexpr size_t kMaxK = 131072;  // 127 * 128 * K must fit int32

// kBf16: bf16 x bf16 -> f32 accumulation (PyTorch's bf16 mode), only where the CPU has bf16 units.
enum class MatKind { kF32, kS8, kBf16 };

struct Key {
  MatKind kind;
  size_t m, k, n;
  bool bias;
  size_t ldc = 0;  // row stride of the output in elements; 0 = n (dense)
  bool packed = false;  // kBf16 only: the weight is in packed_bf16_layout, not plain [N, K]
  bool operator==(const Key& o) const { return kind == o.kind && m == o.m && k == o.k && n == o.n && bias == o.bias && ldc == o.ldc && packed == o.packed; }
};
struct KeyHash {
  size_t operator()(const Key& k) const {
    size_t h = (static_cast<size_t>(k.kind) * 31 + k.bias) * 2 + k.packed;
    for (size_t v : {k.m, k.k, k.n, k.ldc}) h = h * 1000003u ^ v;
    return h;
  }
};

// Per-worker scratch reused across calls, so large temporaries do not page-fault fresh memory on
// every call; anything above 64 MiB is returned to the system after the call.
class Scratch {
 public:
  ~Scratch() { std::free(data_); }
  void* get(size_t bytes) {
    bytes = std::max<size_t>(64, (bytes + 63) / 64 * 64);
    if (bytes > size_) {
      std::free(data_);
      data_ = std::aligned_alloc(64, bytes);
      size_ = data_ != nullptr ? bytes : 0;
      if (data_ == nullptr) throw std::bad_alloc();
    }
    return data_;
  }
  void trim() {
    if (size_ > (size_t(64) << 20)) {
      std::free(data_);
      data_ = nullptr;
      size_ = 0;
    }
  }

 private:
  void* data_ = nullptr;
  size_t size_ = 0;
};

// Primitive creation costs milliseconds; DiT layers repeat a handful of shapes.
struct Prim {
  dnnl::matmul matmul;
  memory::desc src, wei, dst, bias;
  // Scratchpad supplied per call (see user_scratchpad): one primitive may run on several threads.
  memory::desc scratch;
  // A packed key's primitive runs only where it wants the packed layout and is the plain one's
  // implementation (see cached_matmul); else the caller unpacks the weight and runs the plain key.
  bool usable = true;
};

// oneDNN's library-owned scratchpad belongs to the primitive, so two threads executing one cached
// primitive (two concurrent linears of one shape) overwrote each other's temporaries and returned
// wrong outputs. With a user scratchpad every call brings its own (a per-worker Scratch).
dnnl::primitive_attr user_scratchpad() {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

memory::desc bf16_weight_plain(size_t k, size_t n) {
  return memory::desc({static_cast<memory::dim>(k), static_cast<memory::dim>(n)}, memory::data_type::bf16, memory::format_tag::ba);
}

// The layout packLinearBf16 stores a bf16 weight in: the one oneDNN's bf16 matmul picks for its
// K x N weight (format_tag::any) at kPackRows rows. oneDNN 2.6 has no "any M" weight layout to ask
// for: with M = DNNL_RUNTIME_DIM_VAL the bf16 matmul falls back to gemm:jit on the plain layout, and
// its brgemm kernels (the ones that pack) need M at creation. Their weight layout follows the ISA
// and N, not M (on AVX512_BF16 it is BA16a64b2a for every M from 1 to 4096, checked), so one packed
// copy serves every M; each call still checks that its own primitive wants this layout (Prim::usable).
constexpr memory::dim kPackRows = 1024;

memory::desc packed_bf16_layout(size_t k, size_t n) {
  static std::mutex mutex;
  static std::unordered_map<Key, memory::desc, KeyHash> cache;
  const Key key{MatKind::kBf16, 0, k, n, false};
  std::lock_guard<std::mutex> lock(mutex);
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  if (cache.size() >= 256) cache.clear();
  const auto K = static_cast<memory::dim>(k), N = static_cast<memory::dim>(n);
  memory::desc src({kPackRows, K}, memory::data_type::bf16, memory::format_tag::ab);
  memory::desc wei({K, N}, memory::data_type::bf16, memory::format_tag::any);
  memory::desc dst({kPackRows, N}, memory::data_type::f32, memory::format_tag::ab);
  const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(src, wei, dst), user_scratchpad(), onednn_engine());
  return cache.emplace(key, pd.weights_desc()).first->second;
}

// Shared pointers: a cache flush never frees a primitive another thread is executing.
std::shared_ptr<Prim> cached_matmul(const Key& key) {
  static std::mutex mutex;
  static std::unordered_map<Key, std::shared_ptr<Prim>, KeyHash> cache;
  std::lock_guard<std::mutex> lock(mutex);
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  if (cache.size() >= 256) cache.clear();
  const auto M = static_cast<memory::dim>(key.m), K = static_cast<memory::dim>(key.k), N = static_cast<memory::dim>(key.n);
  const memory::data_type in = key.kind == MatKind::kF32 ? memory::data_type::f32 : key.kind == MatKind::kBf16 ? memory::data_type::bf16 : memory::data_type::s8;
  memory::desc src({M, K}, in, memory::format_tag::ab);
  // Weights arrive PyTorch-style [N, K]; as the K x N operand that is the transposed layout "ba".
  memory::desc wei({K, N}, in, memory::format_tag::ba);
  const auto ldc = static_cast<memory::dim>(key.ldc != 0 ? key.ldc : key.n);
  memory::desc dst({M, N}, key.kind == MatKind::kS8 ? memory::data_type::s32 : memory::data_type::f32, memory::dims{ldc, 1});
  memory::desc bias({1, N}, memory::data_type::f32, memory::format_tag::ab);
  const dnnl::primitive_attr attr = user_scratchpad();
  auto make = [&](const memory::desc& w) {
    return key.bias ? dnnl::matmul::primitive_desc(dnnl::matmul::desc(src, w, bias, dst), attr, onednn_engine())
                    : dnnl::matmul::primitive_desc(dnnl::matmul::desc(src, w, dst), attr, onednn_engine());
  };
  const dnnl::matmul::primitive_desc plain = make(wei);
  if (!key.packed) return cache.emplace(key, std::make_shared<Prim>(Prim{dnnl::matmul(plain), src, wei, dst, bias, plain.scratchpad_desc()})).first->second;
  // A packed weight's matmul: the primitive oneDNN picks with the weight layout left to it. The
  // plain call's brgemm kernels first copy the weight into this same layout (that copy is what
  // packing saves) and then run the same kernels, so the outputs are the plain call's bits (the
  // tests compare bytes); were the implementation or the layout another, the call unpacks instead.
  const dnnl::matmul::primitive_desc any = make(memory::desc({K, N}, in, memory::format_tag::any));
  const memory::desc layout = packed_bf16_layout(key.k, key.n);
  const bool usable = any.weights_desc() == layout && std::strcmp(any.impl_info_str(), plain.impl_info_str()) == 0;
  auto prim = std::make_shared<Prim>(Prim{dnnl::matmul(any), src, layout, dst, bias, any.scratchpad_desc(), usable});
  return cache.emplace(key, std::move(prim)).first->second;
}

void run_matmul(const Key& key, const void* a, const void* b, const float* bias, void* c) {
  sync_onednn_threads();
  const std::shared_ptr<Prim> held = cached_matmul(key);
  Prim& prim = *held;
  dnnl::engine& eng = onednn_engine();
  dnnl::stream stream(eng);
  std::unordered_map<int, memory> mem{
      {DNNL_ARG_SRC, memory(prim.src, eng, const_cast<void*>(a))},
      {DNNL_ARG_WEIGHTS, memory(prim.wei, eng, const_cast<void*>(b))},
      {DNNL_ARG_DST, memory(prim.dst, eng, c)},
  };
  if (key.bias) mem.emplace(DNNL_ARG_BIAS, memory(prim.bias, eng, const_cast<float*>(bias)));
  thread_local Scratch spad;
  mem.emplace(DNNL_ARG_SCRATCHPAD, memory(prim.scratch, eng, spad.get(prim.scratch.get_size())));
  prim.matmul.execute(stream, mem);
  stream.wait();
}

// int8Linear in row panels: the weights are reordered once per call into oneDNN's blocked layout
// (used only where that layout is the plain AMX one, see int8_linear), then each panel of rows is quantized, multiplied and dequantized
// while its accumulators are still in cache. Integer accumulation makes this exact, so results
// equal the single-matmul path bit for bit.
struct PanelPrim {
  dnnl::matmul matmul;
  dnnl::reorder weight_reorder;
  memory::desc src, wei_user, wei_blocked, dst;
  bool fast_reorder;
  memory::desc matmul_scratch, reorder_scratch;
};

// W [N, K] row-major into oneDNN's BA16a64b4a view of the K x N operand: 64 x 64 blocks ordered
// [N/64][K/64], inside a block [K/4][64 n][4 k]. Each group of 4 consecutive k of one row is one
// 32-bit word, so a block is a 64 x 16 transpose of words. A pure permutation: exact.
#if NINODES_HAS_X86
// One 64 x 64 byte block as 8 x 2 tiles of 8 x 8 words.
NINODES_TARGET_AVX2 void reorder_block_avx2(const int8_t* src, size_t K, uint32_t* out) {
  for (size_t n = 0; n < 64; n += 8) {
    for (size_t k4 = 0; k4 < 16; k4 += 8) {
      __m256i r[8];
      for (int i = 0; i < 8; ++i) r[i] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + (n + i) * K + k4 * 4));
      const __m256i t0 = _mm256_unpacklo_epi32(r[0], r[1]), t1 = _mm256_unpackhi_epi32(r[0], r[1]);
      const __m256i t2 = _mm256_unpacklo_epi32(r[2], r[3]), t3 = _mm256_unpackhi_epi32(r[2], r[3]);
      const __m256i t4 = _mm256_unpacklo_epi32(r[4], r[5]), t5 = _mm256_unpackhi_epi32(r[4], r[5]);
      const __m256i t6 = _mm256_unpacklo_epi32(r[6], r[7]), t7 = _mm256_unpackhi_epi32(r[6], r[7]);
      const __m256i u0 = _mm256_unpacklo_epi64(t0, t2), u1 = _mm256_unpackhi_epi64(t0, t2);
      const __m256i u2 = _mm256_unpacklo_epi64(t1, t3), u3 = _mm256_unpackhi_epi64(t1, t3);
      const __m256i u4 = _mm256_unpacklo_epi64(t4, t6), u5 = _mm256_unpackhi_epi64(t4, t6);
      const __m256i u6 = _mm256_unpacklo_epi64(t5, t7), u7 = _mm256_unpackhi_epi64(t5, t7);
      const __m256i c[8] = {
          _mm256_permute2x128_si256(u0, u4, 0x20), _mm256_permute2x128_si256(u1, u5, 0x20),
          _mm256_permute2x128_si256(u2, u6, 0x20), _mm256_permute2x128_si256(u3, u7, 0x20),
          _mm256_permute2x128_si256(u0, u4, 0x31), _mm256_permute2x128_si256(u1, u5, 0x31),
          _mm256_permute2x128_si256(u2, u6, 0x31), _mm256_permute2x128_si256(u3, u7, 0x31)};
      for (int j = 0; j < 8; ++j) _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + (k4 + j) * 64 + n), c[j]);
    }
  }
}
#endif

void reorder_ba16a64b4a(const int8_t* w, int8_t* dst, size_t K, size_t N) {
  const size_t kb = K / 64, nb = N / 64;
  const bool avx2 = use_avx2();
  onednn_team_for(nb * kb, 16, [&](size_t b, size_t e) {
    for (size_t t = b; t < e; ++t) {
#if NINODES_HAS_X86
      if (avx2) {
        reorder_block_avx2(w + (t / kb) * 64 * K + (t % kb) * 64, K, reinterpret_cast<uint32_t*>(dst + t * 4096));
        continue;
      }
#endif
      const size_t bn = t / kb, bk = t % kb;
      uint32_t* out = reinterpret_cast<uint32_t*>(dst + t * 4096);
      for (size_t n = 0; n < 64; ++n) {
        uint32_t row[16];
        std::memcpy(row, w + (bn * 64 + n) * K + bk * 64, 64);
        for (size_t k4 = 0; k4 < 16; ++k4) out[k4 * 64 + n] = row[k4];
      }
    }
  });
}

std::shared_ptr<PanelPrim> cached_panel(size_t p, size_t k, size_t n) {
  static std::mutex mutex;
  static std::unordered_map<Key, std::shared_ptr<PanelPrim>, KeyHash> cache;
  const Key key{MatKind::kS8, p, k, n, true};
  std::lock_guard<std::mutex> lock(mutex);
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  if (cache.size() >= 64) cache.clear();
  const auto P = static_cast<memory::dim>(p), K = static_cast<memory::dim>(k), N = static_cast<memory::dim>(n);
  dnnl::engine& eng = onednn_engine();
  memory::desc src({P, K}, memory::data_type::s8, memory::format_tag::ab);
  memory::desc wei_any({K, N}, memory::data_type::s8, memory::format_tag::any);
  memory::desc wei_user({K, N}, memory::data_type::s8, memory::format_tag::ba);
  memory::desc dst({P, N}, memory::data_type::s32, memory::format_tag::ab);
  dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(src, wei_any, dst), user_scratchpad(), eng);
  const memory::desc blocked = pd.weights_desc();
  dnnl::reorder::primitive_desc rpd(eng, wei_user, eng, blocked, user_scratchpad());
  // oneDNN 2.6's generic jit:uni reorder into this layout costs more than the whole matmul at small M;
  // when the layout is the plain AMX one (no compensation, no padding) a 32-bit transpose does it.
  const bool fast = k % 64 == 0 && n % 64 == 0 && blocked == memory::desc({K, N}, memory::data_type::s8, memory::format_tag::BA16a64b4a);
  auto prim = std::make_shared<PanelPrim>(PanelPrim{dnnl::matmul(pd), dnnl::reorder(rpd), src, wei_user, blocked, dst, fast, pd.scratchpad_desc(), rpd.scratchpad_desc()});
  return cache.emplace(key, std::move(prim)).first->second;
}


size_t panel_rows() {
  static const size_t rows = [] {
    const char* env = std::getenv("NINODES_INT8_PANEL");
    const long v = env != nullptr ? std::strtol(env, nullptr, 10) : 0;
    return v >= 16 && v <= 4096 ? static_cast<size_t>(v) : size_t(128);
  }();
  return rows;
}

// Exact int8 GEMM without VNNI: widen to int16 and use madd (no saturation), 4 columns at a time.
void int8_gemm_native(const int8_t* a, const int8_t* b, int32_t* c, size_t M, size_t K, size_t N);

#if NINODES_HAS_X86
NINODES_TARGET_AVX2 int32_t hsum_epi32(__m256i v) {
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4E));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xB1));
  return _mm_cvtsi128_si32(s);
}

NINODES_TARGET_AVX2 void int8_rows_avx2(const int8_t* a, const int8_t* b, int32_t* c, size_t K, size_t N, size_t n0, size_t n1) {
  size_t n = n0;
  for (; n + 4 <= n1; n += 4) {
    __m256i acc[4] = {_mm256_setzero_si256(), _mm256_setzero_si256(), _mm256_setzero_si256(), _mm256_setzero_si256()};
    size_t k = 0;
    for (; k + 16 <= K; k += 16) {
      const __m256i x = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(a + k)));
      for (int j = 0; j < 4; ++j) {
        const __m256i w = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b + (n + j) * K + k)));
        acc[j] = _mm256_add_epi32(acc[j], _mm256_madd_epi16(x, w));
      }
    }
    for (int j = 0; j < 4; ++j) {
      int32_t s = hsum_epi32(acc[j]);
      for (size_t kk = k; kk < K; ++kk) s += static_cast<int32_t>(a[kk]) * b[(n + j) * K + kk];
      c[n + j] = s;
    }
  }
  for (; n < n1; ++n) {
    int32_t s = 0;
    for (size_t k = 0; k < K; ++k) s += static_cast<int32_t>(a[k]) * b[n * K + k];
    c[n] = s;
  }
}
#endif

void int8_gemm_native(const int8_t* a, const int8_t* b, int32_t* c, size_t M, size_t K, size_t N) {
  const size_t tile = 64;
  const size_t ntiles = (N + tile - 1) / tile;
  const bool avx2 = use_avx2();
  parallel_for(M * ntiles, 1, [&](size_t begin, size_t end) {
    for (size_t t = begin; t < end; ++t) {
      const size_t m = t / ntiles, n0 = (t % ntiles) * tile, n1 = std::min(N, n0 + tile);
#if NINODES_HAS_X86
      if (avx2) {
        int8_rows_avx2(a + m * K, b, c + m * N, K, N, n0, n1);
        continue;
      }
#endif
      for (size_t n = n0; n < n1; ++n) {
        int32_t s = 0;
        for (size_t k = 0; k < K; ++k) s += static_cast<int32_t>(a[m * K + k]) * b[n * K + k];
        c[m * N + n] = s;
      }
    }
  });
}

// Between oneDNN calls its OpenMP team keeps spinning; the oneDNN and AMX paths run their own
// passes on that same team rather than on the native pool.
ParallelFor pfor_for(Int8Backend b) { return b == Int8Backend::kNative ? parallel_for : onednn_team_for; }

void int8_gemm(Int8Backend backend, const int8_t* a, const int8_t* b, int32_t* c, size_t M, size_t K, size_t N) {
  if (M == 0 || N == 0) return;
  if (K == 0) {
    std::memset(c, 0, M * N * sizeof(int32_t));
    return;
  }
  switch (backend) {
    case Int8Backend::kAmx:
    case Int8Backend::kVnni: {
      // Both hand-written kernels pack the activations into their own layout, then write raw sums.
      const bool amx = backend == Int8Backend::kAmx;
      thread_local Scratch pbuf;
      auto* packed = static_cast<int8_t*>(pbuf.get(amx ? amx_packed_bytes(M, K) : vnni_packed_bytes(M, K)));
      (amx ? amx_pack_activations : vnni_pack_activations)(a, M, K, packed, onednn_team_for);
      Int8Epilogue out;
      out.acc = c;
      (amx ? amx_int8_gemm : vnni_int8_gemm)(packed, b, M, K, N, out, onednn_team_for);
      pbuf.trim();
      return;
    }
    case Int8Backend::kOnednn: return run_matmul({MatKind::kS8, M, K, N, false}, a, b, nullptr, c);
    case Int8Backend::kNative: return int8_gemm_native(a, b, c, M, K, N);
  }
}

void dequant_rows_scalar(const int32_t* acc, const float* xs, const float* ws, const float* bias, float* y, size_t r0, size_t r1, size_t N) {
  for (size_t m = r0; m < r1; ++m) {
    for (size_t n = 0; n < N; ++n) {
      const float s = xs[m] * ws[n];
      float v = static_cast<float>(acc[m * N + n]) * s;
      if (bias != nullptr) v = v + bias[n];
      y[m * N + n] = v;
    }
  }
}

#if NINODES_HAS_X86
NINODES_TARGET_AVX2 void dequant_rows_avx2(const int32_t* acc, const float* xs, const float* ws, const float* bias, float* y, size_t r0, size_t r1, size_t N) {
  for (size_t m = r0; m < r1; ++m) {
    const __m256 sx = _mm256_set1_ps(xs[m]);
    size_t n = 0;
    for (; n + 8 <= N; n += 8) {
      const __m256 s = _mm256_mul_ps(sx, _mm256_loadu_ps(ws + n));
      __m256 v = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(acc + m * N + n))), s);
      if (bias != nullptr) v = _mm256_add_ps(v, _mm256_loadu_ps(bias + n));
      _mm256_storeu_ps(y + m * N + n, v);
    }
    for (; n < N; ++n) {
      const float s = xs[m] * ws[n];
      float v = static_cast<float>(acc[m * N + n]) * s;
      if (bias != nullptr) v = v + bias[n];
      y[m * N + n] = v;
    }
  }
}
#endif

void dequant(const int32_t* acc, const float* xs, const float* ws, const float* bias, float* y, size_t M, size_t N, ParallelFor pfor) {
  const bool avx2 = use_avx2();
  pfor(M, std::max<size_t>(1, 16384 / std::max<size_t>(N, 1)), [&](size_t b, size_t e) {
#if NINODES_HAS_X86
    if (avx2) return dequant_rows_avx2(acc, xs, ws, bias, y, b, e, N);
#endif
    dequant_rows_scalar(acc, xs, ws, bias, y, b, e, N);
  });
}

struct Dims {
  size_t m, k, n;
};

// Output rows per widened bf16 chunk: about 4 MiB of f32 weights, but never fewer rows than M, so
// re-reading x once per chunk stays small next to the matmul's own work.
size_t bf16_chunk_rows(size_t m, size_t k, size_t n) {
  const size_t by_size = (size_t(4) << 20) / (std::max<size_t>(k, 1) * sizeof(float));
  const size_t rows = std::max<size_t>(64, (std::max(by_size, m) + 63) / 64 * 64);
  return std::min(rows, n);
}

void widen_bf16(const uint16_t* src, float* dst, size_t count) {
  parallel_for(count, 1 << 16, [&](size_t b, size_t e) {
    for (size_t i = b; i < e; ++i) {
      const uint32_t bits = static_cast<uint32_t>(src[i]) << 16;
      std::memcpy(dst + i, &bits, 4);
    }
  });
}

// Activations rounded to bf16 (nearest even) at the linear input, as PyTorch's bf16 autocast does.
void narrow_to_bf16(const float* src, uint16_t* dst, size_t count) {
  // The cast's vectorized converter (same bits as codec::f32_to_bf16): the scalar loop was ~1% of a bf16 step.
  parallel_for(count, 1 << 16, [&](size_t b, size_t e) { f32_to_bf16_n(src + b, dst + b, e - b); });
}

// bf16 compute with a few input rows (adaLN and the timestep MLP: one row per timestep): oneDNN's
// matmul repacks the whole weight for the VNNI layout on every call and reached ~9 GB/s on the
// h3-small adaLN; a dot product per output straight from the [N, K] rows reads each weight once.
constexpr size_t kBf16GemvRows = 4;

#if NINODES_HAS_X86
#define NINODES_TARGET_LINEAR_BF16 __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx512bf16")))
// Outputs [n0, n1) of every row: y[r, j] = Σ_k x[r, k]·w[j, k] (+ bias[j]), vdpbf16ps into two f32
// accumulators (even and odd 32-wide K chunks), then their sum; one thread owns each output, so the
// bits do not depend on the thread count.
NINODES_TARGET_LINEAR_BF16 void gemv_bf16_range(const uint16_t* x, const uint16_t* w, const float* bias, float* y, size_t m, size_t k, size_t n, size_t n0, size_t n1) {
  const size_t tail = k % 32;
  const __mmask32 tail_mask = tail == 0 ? 0 : static_cast<__mmask32>((uint64_t{1} << tail) - 1);
  for (size_t j = n0; j < n1; ++j) {
    const uint16_t* wr = w + j * k;
    for (size_t r = 0; r < m; ++r) {
      const uint16_t* xr = x + r * k;
      __m512 a0 = _mm512_setzero_ps(), a1 = _mm512_setzero_ps();
      size_t i = 0;
      for (; i + 64 <= k; i += 64) {
        a0 = _mm512_dpbf16_ps(a0, (__m512bh)_mm512_loadu_si512(xr + i), (__m512bh)_mm512_loadu_si512(wr + i));
        a1 = _mm512_dpbf16_ps(a1, (__m512bh)_mm512_loadu_si512(xr + i + 32), (__m512bh)_mm512_loadu_si512(wr + i + 32));
      }
      if (i + 32 <= k) {
        a0 = _mm512_dpbf16_ps(a0, (__m512bh)_mm512_loadu_si512(xr + i), (__m512bh)_mm512_loadu_si512(wr + i));
        i += 32;
      }
      if (tail != 0) a1 = _mm512_dpbf16_ps(a1, (__m512bh)_mm512_maskz_loadu_epi16(tail_mask, xr + i), (__m512bh)_mm512_maskz_loadu_epi16(tail_mask, wr + i));
      // A fixed-order lane sum (GCC 12's 512 -> 256 extracts warn of an uninitialized operand).
      alignas(64) float lanes[16];
      _mm512_store_ps(lanes, _mm512_add_ps(a0, a1));
      float dot = 0.f;
      for (float v : lanes) dot += v;
      y[r * n + j] = bias != nullptr ? dot + bias[j] : dot;
    }
  }
}

void gemv_bf16(const uint16_t* x, const uint16_t* w, const float* bias, float* y, size_t m, size_t k, size_t n) {
  parallel_for(n, 64, [&](size_t n0, size_t n1) { gemv_bf16_range(x, w, bias, y, m, k, n, n0, n1); });
}
#endif

Dims dims(const Napi::CallbackInfo& info, size_t at) {
  return {args::dim(info, at, "M"), args::dim(info, at + 1, "K"), args::dim(info, at + 2, "N")};
}

// oneDNN reorders between the plain [N, K] bf16 weight and packed_bf16_layout: a permutation of
// the elements (the padding of the packed copy is zero), so unpacking returns the original bits.
// Created per call: packing runs once per weight, unpacking only on the fallbacks below.
void reorder_bf16_weight(const memory::desc& from, const void* src, const memory::desc& to, void* dst) {
  sync_onednn_threads();
  dnnl::engine& eng = onednn_engine();
  dnnl::stream stream(eng);
  memory a(from, eng, const_cast<void*>(src)), b(to, eng, dst);
  dnnl::reorder(a, b).execute(stream, a, b);
  stream.wait();
}

// linear's bf16 compute: x rounded to bf16, times the plain weight `w` or, when w is null, the
// `packed` one. Few rows run the vdpbf16ps dot products, which read plain rows: a packed weight is
// unpacked for them (the provider packs only weights that see many rows), as it is where the
// primitive for this M would not take the packed layout.
void bf16_linear(const float* x, const uint16_t* w, const void* packed, const float* bias, float* y, const Dims& d) {
  thread_local Scratch xbuf;
  auto* xh = static_cast<uint16_t*>(xbuf.get(d.m * d.k * sizeof(uint16_t)));
  narrow_to_bf16(x, xh, d.m * d.k);
  const Key key{MatKind::kBf16, d.m, d.k, d.n, bias != nullptr, 0, w == nullptr};
  thread_local Scratch wbuf;
  bool few = false;
#if NINODES_HAS_X86
  few = d.m <= kBf16GemvRows;
#endif
  if (w == nullptr && (few || !cached_matmul(key)->usable)) {
    auto* plain = static_cast<uint16_t*>(wbuf.get(d.n * d.k * sizeof(uint16_t)));
    reorder_bf16_weight(packed_bf16_layout(d.k, d.n), packed, bf16_weight_plain(d.k, d.n), plain);
    w = plain;
  }
#if NINODES_HAS_X86
  // cpu_has_bf16_units() was checked by the caller: the bf16 dot-product instructions are there.
  if (few) {
    gemv_bf16(xh, w, bias, y, d.m, d.k, d.n);
  } else
#endif
  {
    run_matmul(w != nullptr ? Key{MatKind::kBf16, d.m, d.k, d.n, bias != nullptr} : key, xh, w != nullptr ? static_cast<const void*>(w) : packed, bias, y);
  }
  wbuf.trim();
  xbuf.trim();
}

void require_bf16_units(const char* what) {
  if (!cpu_has_bf16_units()) fail("BACKEND_UNAVAILABLE", std::string(what) + " needs a CPU with AVX512_BF16 (this one has none, or NINODES_SIMD caps it)");
}

// linearPackedBytes(K, N): bytes of a [N, K] bf16 weight packed for the bf16 matmul (padded blocks).
Napi::Value linear_packed_bytes(const Napi::CallbackInfo& info) {
  return guarded(info, [](const Napi::CallbackInfo& info) -> Napi::Value {
    const size_t k = args::dim(info, 0, "K"), n = args::dim(info, 1, "N");
    if (k == 0 || n == 0) fail("INVALID_SHAPE", "a packed linear weight needs K >= 1 and N >= 1");
    require_bf16_units("a packed bf16 linear weight");
    sync_onednn_threads();
    return Napi::Number::New(info.Env(), static_cast<double>(packed_bf16_layout(k, n).get_size()));
  });
}

// packLinearBf16(w bf16 [N, K], packed [linearPackedBytes], K, N, unpack): w into the packed
// layout, or (unpack) back into w. Off the JS thread.
Napi::Value pack_linear_bf16(const Napi::CallbackInfo& info) {
  return guarded(info, [](const Napi::CallbackInfo& info) -> Napi::Value {
    const args::Bytes wb = args::bytes(info, 0, "plain weight");
    const args::Bytes pb = args::bytes(info, 1, "packed weight");
    const size_t k = args::dim(info, 2, "K"), n = args::dim(info, 3, "N");
    const bool unpack = args::boolean(info, 4, "unpack");
    if (k == 0 || n == 0) fail("INVALID_SHAPE", "a packed linear weight needs K >= 1 and N >= 1");
    require_bf16_units("a packed bf16 linear weight");
    sync_onednn_threads();
    const memory::desc layout = packed_bf16_layout(k, n);
    uint16_t* w = args::as<uint16_t>(wb, args::mul(n, k, "packLinearBf16"), "plain weight");
    void* p = args::as<uint8_t>(pb, layout.get_size(), "packed weight");
    if (reinterpret_cast<uintptr_t>(p) % 64 != 0) fail("MISALIGNED_STORAGE", "packed weight: storage is not 64-byte aligned");
    auto work = [=] {
      if (unpack) reorder_bf16_weight(layout, p, bf16_weight_plain(k, n), w);
      else reorder_bf16_weight(bf16_weight_plain(k, n), w, layout, p);
    };
    return AsyncOp::start(info.Env(), "ninodes.packLinearBf16", work, [](Napi::Env env) { return env.Undefined(); }, {info[0], info[1]});
  });
}

// linearPackedBf16(x f32 [M,K], packed, bias f32 [N] | null, y f32 [M,N], M, K, N): linear's bf16
// compute with a weight packLinearBf16 packed; the same output bits as the plain weight.
Napi::Value linear_packed_bf16(const Napi::CallbackInfo& info) {
  return guarded(info, [](const Napi::CallbackInfo& info) -> Napi::Value {
    const args::Bytes xb = args::bytes(info, 0, "linear input");
    const args::Bytes pb = args::bytes(info, 1, "linear packed weight");
    const args::Bytes bb = args::bytes(info, 2, "linear bias", true);
    const args::Bytes yb = args::bytes(info, 3, "linear output");
    const Dims d = dims(info, 4);
    if (d.k == 0 || d.n == 0) fail("INVALID_SHAPE", "a packed linear weight needs K >= 1 and N >= 1");
    require_bf16_units("linear precision 'bf16'");
    sync_onednn_threads();
    const float* x = args::as<float>(xb, args::mul(d.m, d.k, "linear"), "linear input");
    const void* packed = args::as<uint8_t>(pb, packed_bf16_layout(d.k, d.n).get_size(), "linear packed weight");
    if (reinterpret_cast<uintptr_t>(packed) % 64 != 0) fail("MISALIGNED_STORAGE", "linear packed weight: storage is not 64-byte aligned");
    const float* bias = bb.present ? args::as<float>(bb, d.n, "linear bias") : nullptr;
    float* y = args::as<float>(yb, args::mul(d.m, d.n, "linear"), "linear output");
    args::mul(args::mul(d.m, d.n, "linear"), d.k, "linear work");
    auto work = [=] {
      if (d.m != 0) bf16_linear(x, nullptr, packed, bias, y, d);
    };
    std::vector<Napi::Value> keep{info[0], info[1], info[3]};
    if (bb.present) keep.push_back(info[2]);
    return AsyncOp::start(info.Env(), "ninodes.linearPackedBf16", work, [](Napi::Env env) { return env.Undefined(); }, keep);
  });
}

// linear(x f32 [M,K], w f32|bf16 [N,K], wIsBf16, bias f32 [N] | null, y f32 [M,N], M, K, N, precision)
// precision "f32": bf16 weights are widened exactly and multiplied in f32. "bf16": x is rounded to
// bf16 and multiplied with the bf16 weights on the CPU's bf16 units, accumulating in f32.
Napi::Value linear(const Napi::CallbackInfo& info) {
  return guarded(info, [](const Napi::CallbackInfo& info) -> Napi::Value {
    const args::Bytes xb = args::bytes(info, 0, "linear input");
    const args::Bytes wb = args::bytes(info, 1, "linear weight");
    const bool bf16 = args::boolean(info, 2, "linear weight is bf16");
    const args::Bytes bb = args::bytes(info, 3, "linear bias", true);
    const args::Bytes yb = args::bytes(info, 4, "linear output");
    const Dims d = dims(info, 5);
    const std::string precision = args::string(info, 8, "linear precision");
    if (precision != "f32" && precision != "bf16") fail("INVALID_ARGUMENT", "linear precision must be 'f32' or 'bf16', got '" + precision + "'");
    const bool bf16_compute = precision == "bf16";
    if (bf16_compute && !bf16) fail("INVALID_ARGUMENT", "linear precision 'bf16' needs bf16 weights");
    if (bf16_compute && !cpu_has_bf16_units())
      fail("BACKEND_UNAVAILABLE", "linear precision 'bf16' needs a CPU with AVX512_BF16 (this one has none, or NINODES_SIMD caps it)");
    const float* x = args::as<float>(xb, args::mul(d.m, d.k, "linear"), "linear input");
    const void* w = bf16 ? static_cast<const void*>(args::as<uint16_t>(wb, args::mul(d.n, d.k, "linear"), "linear weight"))
                         : static_cast<const void*>(args::as<float>(wb, args::mul(d.n, d.k, "linear"), "linear weight"));
    const float* bias = bb.present ? args::as<float>(bb, d.n, "linear bias") : nullptr;
    float* y = args::as<float>(yb, args::mul(d.m, d.n, "linear"), "linear output");
    args::mul(args::mul(d.m, d.n, "linear"), d.k, "linear work");
    auto work = [=] {
      if (d.m == 0 || d.n == 0) return;
      if (d.k == 0) {
        for (size_t m = 0; m < d.m; ++m)
          for (size_t n = 0; n < d.n; ++n) y[m * d.n + n] = bias != nullptr ? bias[n] : 0.0f;
        return;
      }
      if (!bf16) return run_matmul({MatKind::kF32, d.m, d.k, d.n, bias != nullptr}, x, w, bias, y);
      if (bf16_compute) return bf16_linear(x, static_cast<const uint16_t*>(w), nullptr, bias, y, d);
      // bf16 weights: widen (exactly) a chunk of output rows at a time into a reused buffer and
      // multiply it into the matching output columns, instead of a fresh N x K f32 copy per call.
      const size_t rows = bf16_chunk_rows(d.m, d.k, d.n);
      thread_local Scratch wbuf;
      auto* wide = static_cast<float*>(wbuf.get(rows * d.k * sizeof(float)));
      const auto* src = static_cast<const uint16_t*>(w);
      for (size_t n0 = 0; n0 < d.n; n0 += rows) {
        const size_t nc = std::min(rows, d.n - n0);
        widen_bf16(src + n0 * d.k, wide, nc * d.k);
        run_matmul({MatKind::kF32, d.m, d.k, nc, bias != nullptr, d.n}, x, wide, bias != nullptr ? bias + n0 : nullptr, y + n0);
      }
      wbuf.trim();
    };
    std::vector<Napi::Value> keep{info[0], info[1], info[4]};
    if (bb.present) keep.push_back(info[3]);
    return AsyncOp::start(info.Env(), "ninodes.linear", work, [](Napi::Env env) { return env.Undefined(); }, keep);
  });
}

// Where int8Linear's activation rows come from: f32 rows x, rotated (group != 0) and quantized on
// the way into each backend's own layout (scales into scale_out, or taken from there when external),
// or rows already quantized by quantizeRowsInt8 (int8LinearQuantized: a sequence-parallel rank's
// rows all-gathered as int8), which skip straight to the GEMM and the same epilogue.
struct Int8Rows {
  bool quantized = false;  // q, not x (an empty tensor's pointer may be null either way)
  const float* x = nullptr;
  const int8_t* q = nullptr;
  size_t group = 0;
  bool regular = true;
  bool external = false;
  float* scale_out = nullptr;  // with x: [m] row scales, written unless external
};

// Rows [r0, r0 + count) of `rows` as int8 into dst [count, k].
void stage_rows(const Int8Rows& rows, size_t r0, size_t count, size_t k, int8_t* dst, ParallelFor pfor) {
  if (rows.quantized) {
    if (count * k != 0) std::memcpy(dst, rows.q + r0 * k, count * k);
    return;
  }
  quantize_rows_int8(rows.x + r0 * k, count, k, rows.group, rows.regular, rows.external ? rows.scale_out + r0 : nullptr, dst, rows.scale_out + r0, pfor);
}

// int8Linear's GEMM and epilogue (out.x_scale holds the row scales once the rows are staged).
void int8_linear_rows(const Int8Rows& rows, const int8_t* w, const Dims& d, const Int8Epilogue& out, Int8Backend backend) {
  const ParallelFor pfor = pfor_for(backend);
  if (backend == Int8Backend::kAmx || backend == Int8Backend::kVnni) {
    // Pack into the kernel's layout (quantizing with the rotation fused, for f32 rows), then the
    // GEMM with the dequant fused.
    const bool amx = backend == Int8Backend::kAmx;
    thread_local Scratch pbuf;
    auto* packed = static_cast<int8_t*>(pbuf.get(amx ? amx_packed_bytes(d.m, d.k) : vnni_packed_bytes(d.m, d.k)));
    if (rows.quantized) {
      (amx ? amx_pack_activations : vnni_pack_activations)(rows.q, d.m, d.k, packed, pfor);
    } else {
      (amx ? amx_quantize_pack : vnni_quantize_pack)(rows.x, d.m, d.k, rows.group, rows.regular, rows.external ? rows.scale_out : nullptr, packed, rows.scale_out, pfor);
    }
    (amx ? amx_int8_gemm : vnni_int8_gemm)(packed, w, d.m, d.k, d.n, out, pfor);
    pbuf.trim();
    return;
  }
  const size_t P = panel_rows();
  // Row panels pay off only where the weight reorder is the plain 32-bit transpose (the AMX
  // layout). Where oneDNN wants its VNNI layout with s8 compensation (AVX512-VNNI without AMX),
  // its generic reorder runs on every call and made int8Linear 1.8x the bare matmul at
  // M = 1024, K = N = 3072 on a Zen 4 EPYC (CPU time); one whole matmul, whose own B packing
  // is amortized inside the kernel, brings it to ~1.1x. Same integer accumulators, same
  // dequant: the results are identical either way.
  const std::shared_ptr<PanelPrim> pp =
      backend == Int8Backend::kOnednn && d.m >= 4 * P && d.k > 0 && d.n > 0 ? cached_panel(P, d.k, d.n) : nullptr;
  if (pp != nullptr && pp->fast_reorder) {
    sync_onednn_threads();
    dnnl::engine& eng = onednn_engine();
    dnnl::stream stream(eng);
    thread_local Scratch wbuf, qbuf, abuf, mspad, rspad;
    const memory mscratch(pp->matmul_scratch, eng, mspad.get(pp->matmul_scratch.get_size()));
    memory wuser(pp->wei_user, eng, const_cast<int8_t*>(w));
    memory wblk(pp->wei_blocked, eng, wbuf.get(pp->wei_blocked.get_size()));
    if (pp->fast_reorder) {
      reorder_ba16a64b4a(w, static_cast<int8_t*>(wblk.get_data_handle()), d.k, d.n);
    } else {
      const memory rscratch(pp->reorder_scratch, eng, rspad.get(pp->reorder_scratch.get_size()));
      pp->weight_reorder.execute(stream, {{DNNL_ARG_FROM, wuser}, {DNNL_ARG_TO, wblk}, {DNNL_ARG_SCRATCHPAD, rscratch}});
    }
    auto* qp = static_cast<int8_t*>(qbuf.get(P * d.k));
    auto* ap = static_cast<int32_t*>(abuf.get(P * d.n * sizeof(int32_t)));
    memory src(pp->src, eng, qp);
    for (size_t m0 = 0; m0 < d.m; m0 += P) {
      const size_t count = std::min(P, d.m - m0);
      stage_rows(rows, m0, count, d.k, qp, pfor);
      if (count < P) std::memset(qp + count * d.k, 0, (P - count) * d.k);
      int32_t* acc = out.acc != nullptr && count == P ? out.acc + m0 * d.n : ap;
      memory dst(pp->dst, eng, acc);
      pp->matmul.execute(stream, {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, wblk}, {DNNL_ARG_DST, dst}, {DNNL_ARG_SCRATCHPAD, mscratch}});
      stream.wait();
      if (out.acc != nullptr && count < P) std::memcpy(out.acc + m0 * d.n, acc, count * d.n * sizeof(int32_t));
      if (out.y != nullptr) dequant(acc, out.x_scale + m0, out.w_scale, out.bias, out.y + m0 * d.n, count, d.n, pfor);
    }
    wbuf.trim();
    return;
  }
  // Reused per worker: fresh multi-MiB temporaries page-fault on every call. Quantized rows are
  // multiplied in place.
  thread_local Scratch qbuf, abuf;
  const int8_t* qx = rows.q;
  if (!rows.quantized) {
    auto* staged = static_cast<int8_t*>(qbuf.get(d.m * d.k));
    stage_rows(rows, 0, d.m, d.k, staged, pfor);
    qx = staged;
  }
  int32_t* acc = out.acc != nullptr ? out.acc : static_cast<int32_t*>(abuf.get(d.m * d.n * sizeof(int32_t)));
  int8_gemm(backend, qx, w, acc, d.m, d.k, d.n);
  if (out.y != nullptr) dequant(acc, out.x_scale, out.w_scale, out.bias, out.y, d.m, d.n, pfor);
  qbuf.trim();
  abuf.trim();
}

// int8Matmul(qx i8 [M,K], qw i8 [N,K], acc i32 [M,N], M, K, N, backend)
Napi::Value int8_matmul(const Napi::CallbackInfo& info) {
  return guarded(info, [](const Napi::CallbackInfo& info) -> Napi::Value {
    const args::Bytes ab = args::bytes(info, 0, "int8Matmul qx");
    const args::Bytes bb = args::bytes(info, 1, "int8Matmul qw");
    const args::Bytes cb = args::bytes(info, 2, "int8Matmul acc");
    const Dims d = dims(info, 3);
    if (d.k > kMaxK) fail("INVALID_SHAPE", "int8Matmul: K = " + std::to_string(d.k) + " exceeds " + std::to_string(kMaxK) + " (int32 accumulators could overflow)");
    const int8_t* a = args::as<int8_t>(ab, args::mul(d.m, d.k, "int8Matmul"), "int8Matmul qx");
    const int8_t* b = args::as<int8_t>(bb, args::mul(d.n, d.k, "int8Matmul"), "int8Matmul qw");
    int32_t* c = args::as<int32_t>(cb, args::mul(d.m, d.n, "int8Matmul"), "int8Matmul acc");
    const Int8Backend backend = resolve_int8_backend(args::string(info, 6, "int8 backend"), d.m, d.k);
    return AsyncOp::start(
        info.Env(), "ninodes.int8Matmul", [=] { int8_gemm(backend, a, b, c, d.m, d.k, d.n); },
        [](Napi::Env env) { return env.Undefined(); }, {info[0], info[1], info[2]});
  });
}

// Row scales supplied by the caller must be positive and finite (quantizeRowsInt8's always are).
void check_row_scales(const float* xs, size_t m) {
  for (size_t r = 0; r < m; ++r) {
    if (!(std::isfinite(xs[r]) && xs[r] > 0)) fail("INVALID_ARGUMENT", "external scale of row " + std::to_string(r) + " is not a positive finite number");
  }
}

// int8Linear(x f32 [M,K], qw i8 [N,K], wScale f32 [N] | null (no y), bias f32 [N] | null, y f32 [M,N] | null,
//            acc i32 [M,N] | null, xScale f32 [M], M, K, N, group, order, externalScale, backend)
// y null (acc given): the accumulators only, no epilogue (row-parallel ranks reduce them first).
Napi::Value int8_linear(const Napi::CallbackInfo& info) {
  return guarded(info, [](const Napi::CallbackInfo& info) -> Napi::Value {
    const args::Bytes xb = args::bytes(info, 0, "int8Linear input");
    const args::Bytes wb = args::bytes(info, 1, "int8Linear weight");
    const args::Bytes wsb = args::bytes(info, 2, "int8Linear weight scale", true);
    const args::Bytes bb = args::bytes(info, 3, "int8Linear bias", true);
    const args::Bytes yb = args::bytes(info, 4, "int8Linear output", true);
    const args::Bytes accb = args::bytes(info, 5, "int8Linear accumulators", true);
    if (!yb.present && !accb.present) fail("INVALID_ARGUMENT", "int8Linear: neither an output nor accumulators to write");
    if (yb.present && !wsb.present) fail("INVALID_ARGUMENT", "int8Linear: an output needs the weight scale");
    const args::Bytes xsb = args::bytes(info, 6, "int8Linear input scale");
    const Dims d = dims(info, 7);
    const size_t group = args::dim(info, 10, "rotation group");
    const std::string order = args::string(info, 11, "hadamard order");
    const bool external = args::boolean(info, 12, "external scale flag");
    if (order != "regular" && order != "sylvester") fail("INVALID_ARGUMENT", "hadamard order must be 'regular' or 'sylvester'");
    if (group != 0) check_hadamard_group(d.k, group, order == "regular");
    if (d.k > kMaxK) fail("INVALID_SHAPE", "int8Linear: K = " + std::to_string(d.k) + " exceeds " + std::to_string(kMaxK));
    const float* x = args::as<float>(xb, args::mul(d.m, d.k, "int8Linear"), "int8Linear input");
    const int8_t* w = args::as<int8_t>(wb, args::mul(d.n, d.k, "int8Linear"), "int8Linear weight");
    const float* ws = wsb.present ? args::as<float>(wsb, d.n, "int8Linear weight scale") : nullptr;
    const float* bias = bb.present ? args::as<float>(bb, d.n, "int8Linear bias") : nullptr;
    float* y = yb.present ? args::as<float>(yb, args::mul(d.m, d.n, "int8Linear"), "int8Linear output") : nullptr;
    int32_t* acc_out = accb.present ? args::as<int32_t>(accb, d.m * d.n, "int8Linear accumulators") : nullptr;
    float* xs = args::as<float>(xsb, d.m, "int8Linear input scale");
    if (external) check_row_scales(xs, d.m);
    const Int8Backend backend = resolve_int8_backend(args::string(info, 13, "int8 backend"), d.m, d.k);
    Int8Rows rows;
    rows.x = x;
    rows.group = group;
    rows.regular = order == "regular";
    rows.external = external;
    rows.scale_out = xs;
    Int8Epilogue out;
    out.acc = acc_out;
    out.y = y;
    out.x_scale = xs;
    out.w_scale = ws;
    out.bias = bias;
    auto work = [=] { int8_linear_rows(rows, w, d, out, backend); };
    std::vector<Napi::Value> keep{info[0], info[1], info[6]};
    if (wsb.present) keep.push_back(info[2]);
    if (yb.present) keep.push_back(info[4]);
    if (bb.present) keep.push_back(info[3]);
    if (accb.present) keep.push_back(info[5]);
    return AsyncOp::start(info.Env(), "ninodes.int8Linear", work, [](Napi::Env env) { return env.Undefined(); }, keep);
  });
}

// int8LinearQuantized(qx i8 [M,K], qw i8 [N,K], wScale f32 [N], bias f32 [N] | null, y f32 [M,N], xScale f32 [M],
//                     M, K, N, backend): int8Linear on rows quantizeRowsInt8 already quantized (no rotation,
// no quantization), through the same GEMM and epilogue, so the bits equal int8Linear's y for the x
// those rows came from.
Napi::Value int8_linear_quantized(const Napi::CallbackInfo& info) {
  return guarded(info, [](const Napi::CallbackInfo& info) -> Napi::Value {
    const args::Bytes qb = args::bytes(info, 0, "int8LinearQuantized qx");
    const args::Bytes wb = args::bytes(info, 1, "int8LinearQuantized weight");
    const args::Bytes wsb = args::bytes(info, 2, "int8LinearQuantized weight scale");
    const args::Bytes bb = args::bytes(info, 3, "int8LinearQuantized bias", true);
    const args::Bytes yb = args::bytes(info, 4, "int8LinearQuantized output");
    const args::Bytes xsb = args::bytes(info, 5, "int8LinearQuantized input scale");
    const Dims d = dims(info, 6);
    if (d.k > kMaxK) fail("INVALID_SHAPE", "int8LinearQuantized: K = " + std::to_string(d.k) + " exceeds " + std::to_string(kMaxK));
    Int8Rows rows;
    rows.quantized = true;
    rows.q = args::as<int8_t>(qb, args::mul(d.m, d.k, "int8LinearQuantized"), "int8LinearQuantized qx");
    const int8_t* w = args::as<int8_t>(wb, args::mul(d.n, d.k, "int8LinearQuantized"), "int8LinearQuantized weight");
    Int8Epilogue out;
    out.w_scale = args::as<float>(wsb, d.n, "int8LinearQuantized weight scale");
    out.bias = bb.present ? args::as<float>(bb, d.n, "int8LinearQuantized bias") : nullptr;
    out.y = args::as<float>(yb, args::mul(d.m, d.n, "int8LinearQuantized"), "int8LinearQuantized output");
    out.x_scale = args::as<float>(xsb, d.m, "int8LinearQuantized input scale");
    check_row_scales(out.x_scale, d.m);
    const Int8Backend backend = resolve_int8_backend(args::string(info, 9, "int8 backend"), d.m, d.k);
    auto work = [=] { int8_linear_rows(rows, w, d, out, backend); };
    std::vector<Napi::Value> keep{info[0], info[1], info[2], info[4], info[5]};
    if (bb.present) keep.push_back(info[3]);
    return AsyncOp::start(info.Env(), "ninodes.int8LinearQuantized", work, [](Napi::Env env) { return env.Undefined(); }, keep);
  });
}

// int8Dequantize(acc i32 [M,N], xScale f32 [M], wScale f32 [N], bias f32 [N] | null, y f32 [M,N], M, N):
// int8Linear's epilogue on accumulators summed elsewhere (tensor-parallel ranks), by the same code.
Napi::Value int8_dequantize(const Napi::CallbackInfo& info) {
  return guarded(info, [](const Napi::CallbackInfo& info) -> Napi::Value {
    const args::Bytes accb = args::bytes(info, 0, "int8Dequantize accumulators");
    const args::Bytes xsb = args::bytes(info, 1, "int8Dequantize input scale");
    const args::Bytes wsb = args::bytes(info, 2, "int8Dequantize weight scale");
    const args::Bytes bb = args::bytes(info, 3, "int8Dequantize bias", true);
    const args::Bytes yb = args::bytes(info, 4, "int8Dequantize output");
    const size_t m = args::dim(info, 5, "M");
    const size_t n = args::dim(info, 6, "N");
    const int32_t* acc = args::as<int32_t>(accb, args::mul(m, n, "int8Dequantize"), "int8Dequantize accumulators");
    const float* xs = args::as<float>(xsb, m, "int8Dequantize input scale");
    const float* ws = args::as<float>(wsb, n, "int8Dequantize weight scale");
    const float* bias = bb.present ? args::as<float>(bb, n, "int8Dequantize bias") : nullptr;
    float* y = args::as<float>(yb, args::mul(m, n, "int8Dequantize"), "int8Dequantize output");
    auto work = [=] { dequant(acc, xs, ws, bias, y, m, n, parallel_for); };
    std::vector<Napi::Value> keep{info[0], info[1], info[2], info[4]};
    if (bb.present) keep.push_back(info[3]);
    return AsyncOp::start(info.Env(), "ninodes.int8Dequantize", work, [](Napi::Env env) { return env.Undefined(); }, keep);
  });
}

}  // namespace
}  // namespace ninodes

NINODES_MODULE(linear) {
  exports.Set("linear", Napi::Function::New(env, ninodes::linear, "linear"));
  exports.Set("linearPackedBytes", Napi::Function::New(env, ninodes::linear_packed_bytes, "linearPackedBytes"));
  exports.Set("packLinearBf16", Napi::Function::New(env, ninodes::pack_linear_bf16, "packLinearBf16"));
  exports.Set("linearPackedBf16", Napi::Function::New(env, ninodes::linear_packed_bf16, "linearPackedBf16"));
  exports.Set("int8Matmul", Napi::Function::New(env, ninodes::int8_matmul, "int8Matmul"));
  exports.Set("int8Linear", Napi::Function::New(env, ninodes::int8_linear, "int8Linear"));
  exports.Set("int8LinearQuantized", Napi::Function::New(env, ninodes::int8_linear_quantized, "int8LinearQuantized"));
  exports.Set("int8Dequantize", Napi::Function::New(env, ninodes::int8_dequantize, "int8Dequantize"));
}
