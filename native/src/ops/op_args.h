#pragma once
// Float32Array arguments of the fp32 transformer-op bindings: the array must really be a
// Float32Array (DTYPE_MISMATCH otherwise) and its length is checked against the sizes before any
// kernel runs. Sizes, numbers and overflow-checked products come from span_args.h (args::dim,
// args::number, args::mul), shared with every other binding.
#include <napi.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/errors.h"
#include "ops/span_args.h"

namespace ninodes {
namespace ops {

struct F32Arg {
  float* data = nullptr;
  size_t length = 0;
  bool present = false;
};

inline F32Arg f32_arg(const Napi::CallbackInfo& info, size_t index, const char* op, const char* name, bool optional = false) {
  if (index >= info.Length()) fail("INVALID_ARGUMENT", std::string(op) + ": missing argument '" + name + "'");
  const Napi::Value value = info[index];
  if (optional && (value.IsNull() || value.IsUndefined())) return F32Arg{};
  if (!value.IsTypedArray() || value.As<Napi::TypedArray>().TypedArrayType() != napi_float32_array) {
    fail("DTYPE_MISMATCH", std::string(op) + ": '" + name + "' must be a Float32Array");
  }
  Napi::Float32Array array = value.As<Napi::Float32Array>();
  F32Arg out;
  out.data = array.ElementLength() == 0 ? nullptr : array.Data();
  out.length = array.ElementLength();
  out.present = true;
  return out;
}

inline void expect_length(const F32Arg& arg, size_t expected, const char* op, const char* name) {
  if (arg.length != expected) {
    fail("SHAPE_MISMATCH", std::string(op) + ": '" + name + "' has " + std::to_string(arg.length) + " elements, expected " +
                               std::to_string(expected));
  }
}

}  // namespace ops
}  // namespace ninodes
