#pragma once
// Per-row int8 quantization with an optional fused Hadamard rotation (ComfyUI/comfy-kitchen
// semantics): scale = max(absmax / 127, 1e-30) in float32, q = clamp(round_half_even(x / scale),
// -128, 127), NaN -> 0. An external scale replaces the absmax scale (tensor parallelism).
#include <cstddef>
#include <cstdint>

#include "core/thread_pool.h"

namespace ninodes {

using ParallelFor = void (*)(size_t count, size_t grain, const RangeFn& fn);

// Quantizes rows [0, rows) of x [rows, cols]. `group` 0 = no rotation. `external_scale` (nullable)
// supplies the per-row scales; otherwise they are computed and written to `scale`.
// `pfor` runs the row chunks (parallel_for, or onednn_team_for inside int8Linear); each row is
// computed by one thread, so the split never changes the bits. `rotated` (nullable, [rows, cols])
// receives the rows as quantized (x·H when `group` is set), so a second quantization of the same
// rows with other scales (tensor parallelism) needs no second rotation.
void quantize_rows_int8(const float* x, size_t rows, size_t cols, size_t group, bool regular,
                        const float* external_scale, int8_t* q, float* scale, ParallelFor pfor = parallel_for,
                        float* rotated = nullptr);

}  // namespace ninodes
