#pragma once
// Typed errors for JS: every failure carries a stable `code` so callers can branch on it, and the
// message names the offending value. Thrown as C++ exceptions (NAPI_CPP_EXCEPTIONS) and surfaced
// by node-addon-api as JS exceptions; worker threads throw NativeError, which is converted on the
// JS thread.
#include <napi.h>

#include <stdexcept>
#include <string>

#include "core/memory_pins.h"
#include "io/fault_guard.h"

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

// Fails with FILE_TRUNCATED when a mapped file's page faulted (and was zero-filled) since `since`:
// whatever was computed may have read those zeros. Named by file, not by tensor: the handler cannot
// tell which buffer of a call held the address.
inline void fail_if_faulted_since(uint64_t since) {
  if (repaired_fault_count() == since) return;
  const std::string files = files_faulted_since(since);
  fail("FILE_TRUNCATED", truncated_message(files.empty() ? std::string("a mapped file") : files));
}

// Wraps a binding body so NativeError becomes a JS error with its code. A buffer argument over a
// mapping that already lost pages fails the call before it runs, and a read of a truncated mapping
// during the body (see io/fault_guard.h) fails it after. Release paths (unmap, detach)
// pass check_faults = false: they read no mapped memory and must not fail for another thread's fault.
template <typename Fn>
Napi::Value guarded(const Napi::CallbackInfo& info, Fn&& body, bool check_faults = true) {
  try {
    const uint64_t faults = repaired_fault_count();
    if (check_faults && faults > 0) {  // no lookups until some mapping ever lost pages
      std::string code, message;
      for (size_t i = 0; i < info.Length(); ++i) {
        if (memory_failed(data_of(info[i]), &code, &message)) fail(code, message);
      }
    }
    Napi::Value out = body(info);
    // An async op's promise is never dropped (it would reject unhandled later): AsyncOp checks the
    // memory it read itself once its work is done.
    if (check_faults && !out.IsPromise()) fail_if_faulted_since(faults);
    return out;
  } catch (const NativeError& e) {
    throw to_js_error(info.Env(), e.code(), e.what());
  } catch (const std::bad_alloc&) {
    throw to_js_error(info.Env(), "OUT_OF_MEMORY", "native allocation failed");
  }
}

}  // namespace ninodes
