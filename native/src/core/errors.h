#pragma once
// Typed errors for JS: every failure carries a stable `code` so callers can branch on it, and the
// message names the offending value. Thrown as C++ exceptions (NAPI_CPP_EXCEPTIONS) and surfaced
// by node-addon-api as JS exceptions; worker threads throw NativeError, which is converted on the
// JS thread.
#include <napi.h>

#include <stdexcept>
#include <string>

namespace ninodes {

class NativeError : public std::runtime_error {
 public:
  NativeError(std::string code, const std::string& message) : std::runtime_error(message), code_(std::move(code)) {}
  const std::string& code() const { return code_; }

 private:
  std::string code_;
};

[[noreturn]] inline void fail(const std::string& code, const std::string& message) { throw NativeError(code, message); }

inline Napi::Error to_js_error(Napi::Env env, const std::string& code, const std::string& message) {
  Napi::Error error = Napi::Error::New(env, message);
  error.Set("code", Napi::String::New(env, code));
  return error;
}

// Wraps a binding body so NativeError becomes a JS error with its code.
template <typename Fn>
Napi::Value guarded(const Napi::CallbackInfo& info, Fn&& body) {
  try {
    return body(info);
  } catch (const NativeError& e) {
    throw to_js_error(info.Env(), e.code(), e.what());
  } catch (const std::bad_alloc&) {
    throw to_js_error(info.Env(), "NATIVE_OUT_OF_MEMORY", "native allocation failed");
  }
}

}  // namespace ninodes
