#pragma once
// Normalized fast Walsh-Hadamard transforms over `group`-sized chunks of a row (x·H, H symmetric):
// 'regular' = Kronecker powers of ComfyUI's regular 4x4 Hadamard (group a power of 4), 'sylvester'
// = natural-order Walsh (group a power of 2). Scalar, AVX2 and AVX-512 paths perform the same float
// operations in the same order, so they agree to the bit (and with the TS reference).
#include <cstddef>

namespace ninodes {

// In place over `count` floats (a multiple of `group`).
void fwht_inplace(float* x, size_t count, size_t group, bool regular);

// dst = src·H per group (src and dst must not overlap) and *absmax = max |dst| (NaN ignored, 0 when
// all are NaN or zero), bit-identical to a copy + fwht_inplace + absmax pass. Returns false, doing
// nothing, where no fused kernel applies (sylvester, group < 64, scalar path): use the plain path.
bool fwht_copy_absmax(const float* src, float* dst, size_t count, size_t group, bool regular, float* absmax);

// Throws GROUP_MISMATCH / INVALID_ARGUMENT when `group` is not usable for `cols`.
void check_hadamard_group(size_t cols, size_t group, bool regular);

}  // namespace ninodes
