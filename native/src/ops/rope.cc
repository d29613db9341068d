// Partial split-half RoPE: for x [S, H, D] and angles [S, A] (A = R, whose second half repeats the
// first, or A = R/2), pair i = (i, i + R/2) of every head rotates by angles[s, i]; dims >= R copy.
// Same operation order as torch's `x * cos + rotate_half(x) * sin` on the first R dims.
#include <napi.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "core/errors.h"
#include "core/registry.h"
#include "core/thread_pool.h"
#include "ops/op_args.h"
#include "ops/row_kernels.h"

namespace ninodes {
namespace ops {

// Compiled here, once, and shared with the fused q/k pass (row_kernels.h), so both give these bits.
void rope_cos_sin(const float* angles, size_t half, float* cs, float* sn) {
  // cos/sin rounded once from double: the correctly rounded float32 value in practice.
  for (size_t i = 0; i < half; ++i) {
    const double ang = angles[i];
    cs[i] = static_cast<float>(std::cos(ang));
    sn[i] = static_cast<float>(std::sin(ang));
  }
}

void rope_row(const float* xi, const float* cs, const float* sn, float* yo, size_t d, size_t r) {
  const size_t half = r / 2;
  for (size_t i = 0; i < half; ++i) {
    const float x1 = xi[i];
    const float x2 = xi[i + half];
    const float a1 = x1 * cs[i];
    const float b1 = -x2 * sn[i];
    const float a2 = x2 * cs[i];
    const float b2 = x1 * sn[i];
    yo[i] = a1 + b1;
    yo[i + half] = a2 + b2;
  }
  if (d > r) std::memcpy(yo + r, xi + r, (d - r) * sizeof(float));
}

}  // namespace ops
}  // namespace ninodes

namespace {

using ninodes::fail;
using namespace ninodes::ops;

Napi::Value rope_split_half(const Napi::CallbackInfo& info) {
  return ninodes::guarded(info, [](const Napi::CallbackInfo& info) -> Napi::Value {
    const char* op = "ropeSplitHalf";
    const F32Arg x = f32_arg(info, 0, op, "x");
    const F32Arg angles = f32_arg(info, 1, op, "angles");
    const F32Arg y = f32_arg(info, 2, op, "out");
    const size_t s = ninodes::args::dim(info, 3, "seq");
    const size_t h = ninodes::args::dim(info, 4, "heads");
    const size_t d = ninodes::args::dim(info, 5, "headDim");
    const size_t r = ninodes::args::dim(info, 6, "rotDim");
    const size_t a = ninodes::args::dim(info, 7, "angleColumns");
    if (r % 2 != 0 || r > d) fail("INVALID_ARGUMENT", "ropeSplitHalf: rotDim must be even and at most headDim");
    if (a != r && a != r / 2) fail("SHAPE_MISMATCH", "ropeSplitHalf: angles must have rotDim or rotDim/2 columns");
    const size_t n = ninodes::args::mul(ninodes::args::mul(s, h, op), d, op);
    expect_length(x, n, op, "x");
    expect_length(y, n, op, "out");
    expect_length(angles, ninodes::args::mul(s, a, op), op, "angles");
    if (n == 0) return info.Env().Undefined();
    const size_t half = r / 2;
    ninodes::parallel_for(s, std::max<size_t>(1, 8192 / std::max<size_t>(h * d, 1)), [&](size_t s0, size_t s1) {
      std::vector<float> cs(half), sn(half);
      for (size_t t = s0; t < s1; ++t) {
        rope_cos_sin(angles.data + t * a, half, cs.data(), sn.data());
        for (size_t hh = 0; hh < h; ++hh) rope_row(x.data + (t * h + hh) * d, cs.data(), sn.data(), y.data + (t * h + hh) * d, d, r);
      }
    });
    return info.Env().Undefined();
  });
}

}  // namespace

NINODES_MODULE(rope) { exports.Set("ropeSplitHalfF32", Napi::Function::New(env, rope_split_half, "ropeSplitHalfF32")); }
