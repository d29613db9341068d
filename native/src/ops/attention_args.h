#pragma once
// The arguments every attention binding takes (q, k, v, out, heads, seqQ, seqK, headDim, scale),
// parsed and size-checked once for the f32 and bf16 kernels.
#include <napi.h>

#include <cmath>
#include <cstddef>
#include <string>

#include "core/errors.h"
#include "ops/op_args.h"

namespace ninodes {
namespace ops {

// q [H,S,D], k/v [H,T,D] -> out [H,S,D], all f32; with seq_major, out [S,H·D] (the heads merged
// back into the row the next linear reads, so no separate transpose pass walks the output again).
struct AttentionProblem {
  const float* q;
  const float* k;
  const float* v;
  float* out;
  size_t heads, seq_q, seq_k, dim;
  float scale;
  bool seq_major;
};

// Where output row r (query index) of a head starts.
inline float* attention_out_row(const AttentionProblem& p, size_t head, size_t r) {
  return p.seq_major ? p.out + (r * p.heads + head) * p.dim : p.out + (head * p.seq_q + r) * p.dim;
}

inline AttentionProblem parse_attention(const Napi::CallbackInfo& info, const char* op) {
  const F32Arg q = f32_arg(info, 0, op, "q");
  const F32Arg k = f32_arg(info, 1, op, "k");
  const F32Arg v = f32_arg(info, 2, op, "v");
  const F32Arg out = f32_arg(info, 3, op, "out");
  const size_t h = ninodes::args::dim(info, 4, "heads");
  const size_t s = ninodes::args::dim(info, 5, "seqQ");
  const size_t t = ninodes::args::dim(info, 6, "seqK");
  const size_t d = ninodes::args::dim(info, 7, "headDim");
  const double scale = ninodes::args::number(info, 8, "scale");
  // Optional 10th argument: write out as [S, H·D] (seq-major) instead of [H, S, D].
  const bool seq_major = info.Length() > 9 && !info[9].IsUndefined() && ninodes::args::boolean(info, 9, "seqMajor");
  if (!std::isfinite(scale)) fail("INVALID_ARGUMENT", std::string(op) + ": scale must be finite");
  if (d > 65536) fail("INVALID_ARGUMENT", std::string(op) + ": headDim above 65536 is not supported");
  expect_length(q, ninodes::args::mul(ninodes::args::mul(h, s, op), d, op), op, "q");
  expect_length(k, ninodes::args::mul(ninodes::args::mul(h, t, op), d, op), op, "k");
  expect_length(v, ninodes::args::mul(ninodes::args::mul(h, t, op), d, op), op, "v");
  expect_length(out, ninodes::args::mul(ninodes::args::mul(h, s, op), d, op), op, "out");
  return AttentionProblem{q.data, k.data, v.data, out.data, h, s, t, d, static_cast<float>(scale), seq_major};
}

// Nothing to compute when the output is empty; this also keeps huge sequence lengths paired with
// an empty head dimension from looping over nothing.
inline bool attention_output_empty(const AttentionProblem& p) { return p.heads == 0 || p.seq_q == 0 || p.dim == 0; }

}  // namespace ops
}  // namespace ninodes
