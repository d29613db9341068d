#pragma once
// The frame of an fp32 row-op binding (norms.cc, fused_elementwise.cc): x and y are rows × dim
// floats, optional per-column vectors (weight, bias) hold dim, and each row is computed start to
// finish by one thread, so results are identical for any thread count.
#include <napi.h>

#include <algorithm>
#include <cstddef>
#include <vector>

#include "core/thread_pool.h"
#include "ops/op_args.h"

namespace ninodes {
namespace ops {

struct RowShape {
  size_t rows = 0;
  size_t dim = 0;
  size_t n = 0;  // rows × dim
};

// Reads rows and dim at info[at], info[at + 1] and checks that x and y hold rows × dim floats.
inline RowShape row_shape(const Napi::CallbackInfo& info, size_t at, const char* op, const F32Arg& x, const F32Arg& y, const char* y_name) {
  RowShape s;
  s.rows = args::dim(info, at, "rows");
  s.dim = args::dim(info, at + 1, "dim");
  s.n = args::mul(s.rows, s.dim, op);
  expect_length(x, s.n, op, "x");
  expect_length(y, s.n, op, y_name);
  return s;
}

// An optional per-column vector: null where it was not given, else its data, checked to hold dim floats.
inline const float* column_vector(const F32Arg& v, size_t dim, const char* op, const char* name) {
  if (!v.present) return nullptr;
  expect_length(v, dim, op, name);
  return v.data;
}

// Runs row(r, scratch) for every row through the pool, about 16 K floats a task; scratch holds
// scratch_floats floats of the task's own (a row buffer that stays in L1). Nothing runs when there
// is nothing to write, so a huge row count over an empty row does not loop for nothing.
template <typename Row>
void for_each_row(const RowShape& s, size_t scratch_floats, const Row& row) {
  if (s.n == 0) return;
  parallel_for(s.rows, std::max<size_t>(1, 16384 / std::max<size_t>(s.dim, 1)), [&](size_t r0, size_t r1) {
    std::vector<float> scratch(scratch_floats);
    for (size_t r = r0; r < r1; ++r) row(r, scratch.data());
  });
}

}  // namespace ops
}  // namespace ninodes
