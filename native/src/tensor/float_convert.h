#pragma once
// Element conversions other native ops reuse (float_convert.cc also backs the cast binding).
#include <cstddef>
#include <cstdint>

namespace ninodes {

// f32 -> bf16, nearest even, NaN to the canonical quiet NaN: codec::f32_to_bf16 on every element
// (the AVX2 path where the CPU has it, the same bits), on the calling thread.
void f32_to_bf16_n(const float* src, uint16_t* dst, size_t n);

}  // namespace ninodes
