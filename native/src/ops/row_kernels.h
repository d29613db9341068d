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

}  // namespace ops
}  // namespace ninodes
