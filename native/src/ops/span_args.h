#pragma once
// Argument decoding for the kernels-A bindings: every pointer, count and dtype is checked here, before
// any memory is touched, and a failure is a NativeError with a stable code.
#include <napi.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/errors.h"

namespace ninodes {
namespace args {

struct Bytes {
  uint8_t* data = nullptr;
  size_t size = 0;
  bool present = false;
};

// A TypedArray, DataView-free view of JS memory. `optional` accepts null/undefined as "absent".
inline Bytes bytes(const Napi::CallbackInfo& info, size_t i, const char* what, bool optional = false) {
  Bytes out;
  if (i >= info.Length() || info[i].IsNull() || info[i].IsUndefined()) {
    if (optional) return out;
    fail("INVALID_ARGUMENT", std::string(what) + ": expected a typed array, got nothing");
  }
  if (info[i].IsTypedArray()) {
    Napi::TypedArray t = info[i].As<Napi::TypedArray>();
    Napi::ArrayBuffer ab = t.ArrayBuffer();
    out.data = static_cast<uint8_t*>(ab.Data()) + t.ByteOffset();
    out.size = t.ByteLength();
  } else if (info[i].IsArrayBuffer()) {
    Napi::ArrayBuffer ab = info[i].As<Napi::ArrayBuffer>();
    out.data = static_cast<uint8_t*>(ab.Data());
    out.size = ab.ByteLength();
  } else {
    fail("INVALID_ARGUMENT", std::string(what) + ": expected a typed array");
  }
  out.present = true;
  return out;
}

// A non-negative integer size below 2^40 (anything larger cannot be backed by memory here).
inline size_t dim(const Napi::CallbackInfo& info, size_t i, const char* what) {
  if (i >= info.Length() || !info[i].IsNumber()) fail("INVALID_ARGUMENT", std::string(what) + ": expected a number");
  const double v = info[i].As<Napi::Number>().DoubleValue();
  if (!(v >= 0) || v != std::floor(v) || v > 1099511627776.0) {
    fail("INVALID_SHAPE", std::string(what) + " must be an integer in 0..2^40, got " + std::to_string(v));
  }
  return static_cast<size_t>(v);
}

// number and string read an argument (info, i) or a value already in hand, such as a field of an
// options object (info[i] past the end is undefined, which both refuse).
inline double number(const Napi::Value& v, const std::string& what) {
  if (!v.IsNumber()) fail("INVALID_ARGUMENT", what + ": expected a number");
  return v.As<Napi::Number>().DoubleValue();
}

inline double number(const Napi::CallbackInfo& info, size_t i, const char* what) { return number(info[i], what); }

// An integer in lo..hi (a count, a rank, a port, milliseconds).
inline int64_t integer(const Napi::Value& v, int64_t lo, int64_t hi, const std::string& what) {
  const double d = number(v, what);
  if (!(d >= static_cast<double>(lo) && d <= static_cast<double>(hi)) || d != std::floor(d)) {
    fail("INVALID_ARGUMENT", what + " must be an integer in " + std::to_string(lo) + ".." + std::to_string(hi) + ", got " + std::to_string(d));
  }
  return static_cast<int64_t>(d);
}

inline bool boolean(const Napi::CallbackInfo& info, size_t i, const char* what) {
  if (i >= info.Length() || !info[i].IsBoolean()) fail("INVALID_ARGUMENT", std::string(what) + ": expected a boolean");
  return info[i].As<Napi::Boolean>().Value();
}

inline std::string string(const Napi::Value& v, const std::string& what) {
  if (!v.IsString()) fail("INVALID_ARGUMENT", what + ": expected a string");
  return v.As<Napi::String>().Utf8Value();
}

inline std::string string(const Napi::CallbackInfo& info, size_t i, const char* what) { return string(info[i], what); }

inline size_t mul(size_t a, size_t b, const char* what) {
  size_t r;
  if (__builtin_mul_overflow(a, b, &r) || r > (size_t(1) << 46)) fail("INVALID_SHAPE", std::string(what) + ": size overflows");
  return r;
}

// How many elements of T `b` holds: a whole number of them, suitably aligned.
template <typename T>
size_t count(const Bytes& b, const char* what) {
  if (b.size % sizeof(T) != 0) {
    fail("SHAPE_MISMATCH", std::string(what) + ": " + std::to_string(b.size) + " bytes are not a whole number of " + std::to_string(sizeof(T)) + "-byte elements");
  }
  if (reinterpret_cast<uintptr_t>(b.data) % alignof(T) != 0) {
    fail("MISALIGNED_STORAGE", std::string(what) + ": storage is not " + std::to_string(alignof(T)) + "-byte aligned");
  }
  return b.size / sizeof(T);
}

// Checks that `b` holds exactly `count` elements of T, suitably aligned, and returns the typed pointer.
template <typename T>
T* as(const Bytes& b, size_t count, const char* what) {
  const size_t need = mul(count, sizeof(T), what);
  if (b.size != need) {
    fail("SHAPE_MISMATCH", std::string(what) + ": expected " + std::to_string(need) + " bytes, got " + std::to_string(b.size));
  }
  args::count<T>(b, what);
  return reinterpret_cast<T*>(b.data);
}

}  // namespace args
}  // namespace ninodes
