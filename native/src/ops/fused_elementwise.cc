#pragma GCC optimize("fp-contract=off")
// Fused elementwise passes of a DiT block, each giving exactly the bits of the ops it replaces:
//   gatedResidual(x, out, gate) = add(x, mul(out, gate)): x + (out * gate), gate periodic over rows.
//     The product is rounded to f32 before the sum, as in two passes: the pragma above keeps the
//     compiler from contracting it into an FMA.
//   rmsNormModulate(x, w, shift, scale) = modulate(rmsNorm(x, w), shift, scale), per row through a
//     row buffer that stays in L1, calling the standalone ops' own compiled row kernels.
//   qkNormRope(qkv, qw, kw, angles) = per head: ropeSplitHalf(rmsNorm(q_h, qw)), ropeSplitHalf(
//     rmsNorm(k_h, kw)), v_h copied, each written heads-first [H, S, D] (the layout attention takes),
//     reading q, k and v straight out of the fused qkv projection [S, 3·H·D], through the norm's and
//     RoPE's own row kernels; cos/sin are computed once per token for q and k.
// One pass instead of two (five for q/k), and no intermediate tensor.
#include <napi.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "core/cpu_features.h"
#include "core/errors.h"
#include "core/registry.h"
#include "core/thread_pool.h"
#include "ops/op_args.h"
#include "ops/row_kernels.h"
#include "ops/row_op.h"

namespace {

using ninodes::use_avx2;
using namespace ninodes::ops;

constexpr size_t kGrain = 32768;

[[gnu::always_inline]] inline void gated_seg(const float* __restrict x, const float* __restrict o, const float* __restrict g, float* __restrict y,
                                               size_t n) {
  for (size_t i = 0; i < n; ++i) {
    const float t = o[i] * g[i];
    y[i] = x[i] + t;
  }
}

void gated_base(const float* x, const float* o, const float* g, float* y, size_t n) { gated_seg(x, o, g, y, n); }
#if NINODES_HAS_X86
NINODES_TARGET_AVX2 void gated_avx2(const float* x, const float* o, const float* g, float* y, size_t n) { gated_seg(x, o, g, y, n); }
#endif

// gatedResidualF32(x, out, gate, y): x and out of one length, gate dividing it.
Napi::Value gated_residual(const Napi::CallbackInfo& info) {
  return ninodes::guarded(info, [](const Napi::CallbackInfo& info) -> Napi::Value {
    const char* op = "gatedResidual";
    const F32Arg x = f32_arg(info, 0, op, "x");
    const F32Arg o = f32_arg(info, 1, op, "out");
    const F32Arg g = f32_arg(info, 2, op, "gate");
    const F32Arg y = f32_arg(info, 3, op, "y");
    expect_length(o, x.length, op, "out");
    expect_length(y, x.length, op, "y");
    if (x.length == 0) return info.Env().Undefined();
    if (g.length == 0 || x.length % g.length != 0) {
      ninodes::fail("SHAPE_MISMATCH", std::string(op) + ": 'gate' (" + std::to_string(g.length) + " elements) does not broadcast over " + std::to_string(x.length) + " elements");
    }
    const size_t period = g.length;
    const bool avx2 = use_avx2();
    ninodes::parallel_for(x.length, kGrain, [&](size_t begin, size_t end) {
      size_t i = begin;
      size_t j = begin % period;
      while (i < end) {
        const size_t len = std::min(end - i, period - j);
#if NINODES_HAS_X86
        if (avx2) {
          gated_avx2(x.data + i, o.data + i, g.data + j, y.data + i, len);
        } else {
          gated_base(x.data + i, o.data + i, g.data + j, y.data + i, len);
        }
#else
        gated_base(x.data + i, o.data + i, g.data + j, y.data + i, len);
#endif
        i += len;
        j = 0;
      }
    });
    return info.Env().Undefined();
  });
}

// rmsNormModulateF32(x, weight | null, shift, scale, y, rows, dim, eps): shift and scale [dim].
Napi::Value rms_norm_modulate(const Napi::CallbackInfo& info) {
  return ninodes::guarded(info, [](const Napi::CallbackInfo& info) -> Napi::Value {
    const char* op = "rmsNormModulate";
    const F32Arg x = f32_arg(info, 0, op, "x");
    const F32Arg w = f32_arg(info, 1, op, "weight", true);
    const F32Arg shift = f32_arg(info, 2, op, "shift");
    const F32Arg scale = f32_arg(info, 3, op, "scale");
    const F32Arg y = f32_arg(info, 4, op, "y");
    const RowShape s = row_shape(info, 5, op, x, y, "y");
    const float eps = static_cast<float>(ninodes::args::number(info, 7, "eps"));
    expect_length(shift, s.dim, op, "shift");
    expect_length(scale, s.dim, op, "scale");
    const float* wp = column_vector(w, s.dim, op, "weight");
    const bool avx2 = use_avx2();
    for_each_row(s, s.dim, [&](size_t r, float* row) {
      rms_norm_row(x.data + r * s.dim, wp, row, s.dim, eps, avx2);
      modulate_run(row, shift.data, scale.data, y.data + r * s.dim, s.dim, avx2);
    });
    return info.Env().Undefined();
  });
}

// qkNormRopeF32(qkv, qWeight | null, kWeight | null, angles, q, k, v, seq, heads, headDim, rotDim,
// angleColumns, eps): qkv [seq, 3·heads·headDim]; q, k, v [heads, seq, headDim]; angles [seq, angleColumns].
Napi::Value qk_norm_rope(const Napi::CallbackInfo& info) {
  return ninodes::guarded(info, [](const Napi::CallbackInfo& info) -> Napi::Value {
    const char* op = "qkNormRope";
    const F32Arg qkv = f32_arg(info, 0, op, "qkv");
    const F32Arg qw = f32_arg(info, 1, op, "qWeight", true);
    const F32Arg kw = f32_arg(info, 2, op, "kWeight", true);
    const F32Arg angles = f32_arg(info, 3, op, "angles");
    const F32Arg q = f32_arg(info, 4, op, "q");
    const F32Arg k = f32_arg(info, 5, op, "k");
    const F32Arg v = f32_arg(info, 6, op, "v");
    const size_t s = ninodes::args::dim(info, 7, "seq");
    const size_t h = ninodes::args::dim(info, 8, "heads");
    const size_t d = ninodes::args::dim(info, 9, "headDim");
    const size_t r = ninodes::args::dim(info, 10, "rotDim");
    const size_t a = ninodes::args::dim(info, 11, "angleColumns");
    const float eps = static_cast<float>(ninodes::args::number(info, 12, "eps"));
    if (r % 2 != 0 || r > d) ninodes::fail("INVALID_ARGUMENT", "qkNormRope: rotDim must be even and at most headDim");
    if (a != r && a != r / 2) ninodes::fail("SHAPE_MISMATCH", "qkNormRope: angles must have rotDim or rotDim/2 columns");
    const size_t inner = ninodes::args::mul(h, d, op);
    const size_t n = ninodes::args::mul(s, inner, op);
    expect_length(qkv, ninodes::args::mul(n, 3, op), op, "qkv");
    expect_length(q, n, op, "q");
    expect_length(k, n, op, "k");
    expect_length(v, n, op, "v");
    expect_length(angles, ninodes::args::mul(s, a, op), op, "angles");
    const float* qwp = column_vector(qw, d, op, "qWeight");
    const float* kwp = column_vector(kw, d, op, "kWeight");
    if (n == 0) return info.Env().Undefined();
    const size_t half = r / 2;
    const bool avx2 = use_avx2();
    ninodes::parallel_for(s, std::max<size_t>(1, 8192 / (3 * inner)), [&](size_t s0, size_t s1) {
      std::vector<float> cs(half), sn(half), row(d);
      for (size_t t = s0; t < s1; ++t) {
        rope_cos_sin(angles.data + t * a, half, cs.data(), sn.data());
        const float* src = qkv.data + t * 3 * inner;
        for (size_t hh = 0; hh < h; ++hh) {
          const size_t dst = (hh * s + t) * d;
          rms_norm_row(src + hh * d, qwp, row.data(), d, eps, avx2);
          rope_row(row.data(), cs.data(), sn.data(), q.data + dst, d, r);
          rms_norm_row(src + inner + hh * d, kwp, row.data(), d, eps, avx2);
          rope_row(row.data(), cs.data(), sn.data(), k.data + dst, d, r);
          std::memcpy(v.data + dst, src + 2 * inner + hh * d, d * sizeof(float));
        }
      }
    });
    return info.Env().Undefined();
  });
}

}  // namespace

NINODES_MODULE(fused_elementwise) {
  exports.Set("qkNormRopeF32", Napi::Function::New(env, qk_norm_rope, "qkNormRopeF32"));
  exports.Set("gatedResidualF32", Napi::Function::New(env, gated_residual, "gatedResidualF32"));
  exports.Set("rmsNormModulateF32", Napi::Function::New(env, rms_norm_modulate, "rmsNormModulateF32"));
}
