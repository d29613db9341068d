#pragma once
// Argument readers for the fp32 transformer-op bindings: every pointer comes from a Float32Array the
// caller owns, every size is checked to be a non-negative integer and every length is checked
// against the sizes before any kernel runs.
#include <napi.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/errors.h"

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

inline size_t size_arg(const Napi::CallbackInfo& info, size_t index, const char* op, const char* name) {
  if (index >= info.Length() || !info[index].IsNumber()) fail("INVALID_ARGUMENT", std::string(op) + ": '" + name + "' must be a number");
  const double v = info[index].As<Napi::Number>().DoubleValue();
  if (!(v >= 0) || v > 9007199254740991.0 || std::floor(v) != v) {
    fail("INVALID_ARGUMENT", std::string(op) + ": '" + name + "' must be a non-negative integer, got " + std::to_string(v));
  }
  return static_cast<size_t>(v);
}

inline double number_arg(const Napi::CallbackInfo& info, size_t index, const char* op, const char* name) {
  if (index >= info.Length() || !info[index].IsNumber()) fail("INVALID_ARGUMENT", std::string(op) + ": '" + name + "' must be a number");
  return info[index].As<Napi::Number>().DoubleValue();
}

// a * b with overflow detection (sizes come from JS and may be huge).
inline size_t checked_mul(size_t a, size_t b, const char* op) {
  if (a != 0 && b > SIZE_MAX / a) fail("INVALID_ARGUMENT", std::string(op) + ": size overflow");
  return a * b;
}

inline void expect_length(const F32Arg& arg, size_t expected, const char* op, const char* name) {
  if (arg.length != expected) {
    fail("SHAPE_MISMATCH", std::string(op) + ": '" + name + "' has " + std::to_string(arg.length) + " elements, expected " +
                               std::to_string(expected));
  }
}

}  // namespace ops
}  // namespace ninodes
