#pragma once
// Row kernels shared with the fused passes (fused_elementwise.cc): the very same compiled code as the
// standalone ops, so a fused pass gives the bits of the ops it replaces (the compiler's choices, FMA
// contraction included, are made once, in the op's own file).
#include <cstddef>

namespace ninodes {
namespace ops {

// One row of rmsNorm (norms.cc): y = x * (1 / sqrt(mean(x^2) + eps)) * w; w may be null.
void rms_norm_row(const float* x, const float* w, float* y, size_t d, float eps, bool avx2);

// n elements of modulate (elementwise.cc): y = x * (1 + scale) + shift; y must not alias x.
void modulate_run(const float* x, const float* shift, const float* scale, float* y, size_t n, bool avx2);

// cos and sin of one row of RoPE angles (rope.cc): half = rotDim / 2 values each.
void rope_cos_sin(const float* angles, size_t half, float* cs, float* sn);

// One head row of split-half RoPE (rope.cc): pair (i, i + r/2) rotates by (cs[i], sn[i]); dims >= r copy; y must not alias x.
void rope_row(const float* x, const float* cs, const float* sn, float* y, size_t d, size_t r);

}  // namespace ops
}  // namespace ninodes
