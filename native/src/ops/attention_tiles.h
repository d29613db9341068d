#pragma once
// The tiling both attention kernels share (attention.cc in f32, attention_bf16.cc on the bf16
// units). Work units are (head, block of kQueryBlock queries); each unit streams the keys in blocks
// of kKeyBlock with an online softmax (running max m, running sum l, rescaled accumulator), so extra
// memory is O(kQueryBlock·D + kKeyBlock·D) per thread plus whatever the path packs per head, never
// O(S·T). A path supplies the packing and the per-tile arithmetic (the Tiles concept below); every
// query row's arithmetic is fixed by the block sizes alone, not by which thread runs it or how rows
// are grouped, so results are bit-identical for any thread count and any split of the heads.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#include "core/cpu_features.h"
#include "core/thread_pool.h"
#include "ops/attention_args.h"
#include "ops/vec_math.h"

namespace ninodes {
namespace ops {
namespace attention_tiles {

constexpr size_t kQueryBlock = 32;
constexpr size_t kKeyBlock = 64;
constexpr float kNegInf = -std::numeric_limits<float>::infinity();

inline size_t round_up(size_t n, size_t m) { return (n + m - 1) / m * m; }

// The f32 state of one unit on every tiled path: accumulators ob [kQueryBlock][dp], scores pb
// [kQueryBlock][kKeyBlock] and per row the running max, sum and rescale factor; ob and pb 64-byte
// aligned for the SIMD paths' aligned loads and stores.
struct BlockState {
  size_t dp = 0;  // the head dimension padded to the path's SIMD width
  float *ob = nullptr, *pb = nullptr, *m = nullptr, *l = nullptr, *alpha = nullptr;

  BlockState(size_t dim, size_t lanes) : dp(round_up(std::max<size_t>(dim, 1), lanes)) {
    buf_.assign(kQueryBlock * dp + kQueryBlock * kKeyBlock + 3 * kQueryBlock + 16, 0.f);
    float* base = buf_.data();
    base += (16 - (reinterpret_cast<uintptr_t>(base) / sizeof(float)) % 16) % 16;
    ob = base;
    pb = ob + kQueryBlock * dp;
    m = pb + kQueryBlock * kKeyBlock;
    l = m + kQueryBlock;
    alpha = l + kQueryBlock;
  }

 private:
  std::vector<float> buf_;
};

// Walks a padded head dimension dp (a multiple of kLanes) in tiles of 4 vectors of kLanes floats,
// then one tile of the 1 to 3 vectors left: tile(std::integral_constant<int, NV>(), dc) for a tile
// of NV vectors at column dc, so the tile's accumulators stay in registers.
template <size_t kLanes, class Tile>
inline void for_each_dim_tile(size_t dp, Tile&& tile) {
  size_t dc = 0;
  for (; dc + 4 * kLanes <= dp; dc += 4 * kLanes) tile(std::integral_constant<int, 4>(), dc);
  switch ((dp - dc) / kLanes) {
    case 3: tile(std::integral_constant<int, 3>(), dc); break;
    case 2: tile(std::integral_constant<int, 2>(), dc); break;
    case 1: tile(std::integral_constant<int, 1>(), dc); break;
    default: break;
  }
}

// One (head, query block) unit on a tiled path T: the loops here, packing and arithmetic in T, which
// has a BlockState st and
//   kScoreRows, kScoreKeys: the rows x keys of one scores(r, jc, scale) call (into st.pb);
//   kPvRows: the rows of one pv<kPvRows>(r, nk) call (st.ob updated from st.pb / st.alpha);
//   begin(p, head, q0, nq): packs the block's queries (and the head's keys when they are not yet);
//   key_block(p, head, kb, nk): points scores and pv at keys [kb, kb + nk);
//   softmax_row(r, nk, nkp): the online softmax of row r's scores (nkp of them, past nk padding).
template <class T>
void run_unit(const AttentionProblem& p, size_t head, size_t q0, size_t nq, T& t) {
  BlockState& st = t.st;
  t.begin(p, head, q0, nq);
  std::fill(st.ob, st.ob + kQueryBlock * st.dp, 0.f);
  std::fill(st.m, st.m + kQueryBlock, kNegInf);
  std::fill(st.l, st.l + kQueryBlock, 0.f);
  const size_t nqs = round_up(nq, T::kScoreRows);
  for (size_t kb = 0; kb < p.seq_k; kb += kKeyBlock) {
    const size_t nk = std::min(kKeyBlock, p.seq_k - kb);
    const size_t nkp = round_up(nk, T::kScoreKeys);
    t.key_block(p, head, kb, nk);
    for (size_t r = 0; r < nqs; r += T::kScoreRows) {
      for (size_t jc = 0; jc < nkp; jc += T::kScoreKeys) t.scores(r, jc, p.scale);
    }
    // Padded key lanes become exp(-inf) = 0.
    for (size_t r = 0; r < nq; ++r) t.softmax_row(r, nk, nkp);
    size_t r = 0;
    for (; r + T::kPvRows <= nq; r += T::kPvRows) t.template pv<T::kPvRows>(r, nk);
    for (; r < nq; ++r) t.template pv<1>(r, nk);
  }
  for (size_t r = 0; r < nq; ++r) {
    float* o = attention_out_row(p, head, q0 + r);
    if (p.seq_k == 0) {
      std::fill(o, o + p.dim, 0.f);
      continue;
    }
    const float* a = st.ob + r * st.dp;
    const float l = st.l[r];
    for (size_t i = 0; i < p.dim; ++i) o[i] = a[i] / l;
  }
}

// Runs every unit of p over the thread pool: each parallel chunk builds one Unit(dim) (its scratch)
// and runs its units in order with unit.run(p, head, q0, nq) (a tiled path's run is run_unit).
template <class Unit>
void run_units(const AttentionProblem& p) {
  if (attention_output_empty(p)) return;
  const size_t blocks = (p.seq_q + kQueryBlock - 1) / kQueryBlock;
  ninodes::parallel_for(p.heads * blocks, 1, [&](size_t u0, size_t u1) {
    Unit unit(p.dim);
    for (size_t u = u0; u < u1; ++u) {
      const size_t head = u / blocks, q0 = (u % blocks) * kQueryBlock;
      unit.run(p, head, q0, std::min(kQueryBlock, p.seq_q - q0));
    }
  });
}

#if NINODES_HAS_X86
// ---- SIMD pieces: every SIMD path's softmax; the P·V accumulators of the AVX-512 and bf16 paths --

// Online softmax of one row of scores (nkp of them, the last nkp - nk padding): store(j, the exps
// of [j, j + lanes)), running max and sum updated, the rescale factor of the old accumulator in
// *alpha. One source for the 8- and 16-lane paths: V is __m256 or __m512, whose GCC vector operators (+, -,
// > with ?:) are what _mm*_add_ps, _mm*_sub_ps and _mm*_max_ps expand to. Always inlined into a
// caller with the target of V, so it is compiled (and its scalar update contracted) for that ISA.
// (GCC warns that passing V to Exp changes the ABI without the target; no such call is ever made.)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpsabi"
template <class V, V (*Exp)(V), float (*HMax)(V), float (*HSum)(V), class Store>
__attribute__((always_inline)) inline void online_softmax(float* pr, size_t nk, size_t nkp, float* m, float* l, float* alpha, Store store) {
  constexpr size_t kLanes = sizeof(V) / sizeof(float);
  // V as a template argument loses __m256's may_alias, so rows are read through memcpy (one move).
  const auto load = [pr](size_t j) {
    V x;
    std::memcpy(&x, pr + j, sizeof x);
    return x;
  };
  for (size_t j = nk; j < nkp; ++j) pr[j] = kNegInf;
  V vmax = kNegInf - V{};
  for (size_t j = 0; j < nkp; j += kLanes) {
    const V x = load(j);
    vmax = vmax > x ? vmax : x;  // maxps: the second operand where either is NaN
  }
  const float mnew = std::max(*m, HMax(vmax));
  const V vm = mnew - V{};
  V vsum = {};
  for (size_t j = 0; j < nkp; j += kLanes) {
    const V e = Exp(load(j) - vm);
    store(j, e);
    vsum = vsum + e;
  }
  *alpha = std::exp(*m - mnew);
  *l = *l * *alpha + HSum(vsum);
  *m = mnew;
}

// The f32 paths' store: the exps in place of the scores.
struct ExpsInPlace {
  float* pr;
  template <class V>
  void operator()(size_t j, V e) const {
    std::memcpy(pr + j, &e, sizeof e);
  }
};
#pragma GCC diagnostic pop

// The accumulators of a P·V tile of NR rows x NV vectors at column dc: loaded as ob * alpha[r] (the
// old output rescaled), stored back to ob (64-byte aligned) when the tile's keys are summed in.
template <int NR, int NV>
NINODES_TARGET_AVX512 __attribute__((always_inline)) inline void pv_acc_load(__m512 (&acc)[NR][NV], const float* ob, const float* alpha, size_t dp,
                                                                          size_t dc) {
  for (int r = 0; r < NR; ++r) {
    const __m512 a = _mm512_set1_ps(alpha[r]);
    for (int i = 0; i < NV; ++i) acc[r][i] = _mm512_mul_ps(_mm512_load_ps(ob + r * dp + dc + 16 * i), a);
  }
}

template <int NR, int NV>
NINODES_TARGET_AVX512 __attribute__((always_inline)) inline void pv_acc_store(const __m512 (&acc)[NR][NV], float* ob, size_t dp, size_t dc) {
  for (int r = 0; r < NR; ++r) {
    for (int i = 0; i < NV; ++i) _mm512_store_ps(ob + r * dp + dc + 16 * i, acc[r][i]);
  }
}
#endif

}  // namespace attention_tiles
}  // namespace ops
}  // namespace ninodes
