#pragma once
// Runs `work` on a libuv worker thread and resolves a Promise with `done(env)` on the JS thread.
// `keep_alive` holds references to the JS objects whose memory `work` reads or writes (ArrayBuffers,
// external buffers), so the GC cannot free them while the op runs off-thread.
#include <napi.h>

#include <functional>
#include <string>
#include <vector>

#include "core/errors.h"

namespace ninodes {

class AsyncOp : public Napi::AsyncWorker {
 public:
  using Work = std::function<void()>;
  using Done = std::function<Napi::Value(Napi::Env)>;

  static Napi::Promise start(Napi::Env env, const char* name, Work work, Done done,
                             const std::vector<Napi::Value>& keep_alive) {
    auto* op = new AsyncOp(env, name, std::move(work), std::move(done));
    for (const Napi::Value& value : keep_alive) {
      if (value.IsObject()) op->refs_.push_back(Napi::Persistent(value.As<Napi::Object>()));
    }
    Napi::Promise promise = op->deferred_.Promise();
    op->Queue();
    return promise;
  }

 protected:
  void Execute() override {
    try {
      work_();
    } catch (const NativeError& e) {
      code_ = e.code();
      SetError(e.what());
    } catch (const std::bad_alloc&) {
      code_ = "NATIVE_OUT_OF_MEMORY";
      SetError("native allocation failed");
    } catch (const std::exception& e) {
      code_ = "NATIVE_INTERNAL";
      SetError(e.what());
    }
  }

  void OnOK() override {
    Napi::Env env = Env();
    try {
      deferred_.Resolve(done_(env));
    } catch (const Napi::Error& e) {
      deferred_.Reject(e.Value());
    } catch (const NativeError& e) {
      deferred_.Reject(to_js_error(env, e.code(), e.what()).Value());
    }
  }

  void OnError(const Napi::Error& error) override {
    deferred_.Reject(to_js_error(Env(), code_, error.Message()).Value());
  }

 private:
  AsyncOp(Napi::Env env, const char* name, Work work, Done done)
      : Napi::AsyncWorker(env, name), deferred_(Napi::Promise::Deferred::New(env)), work_(std::move(work)),
        done_(std::move(done)) {}

  Napi::Promise::Deferred deferred_;
  Work work_;
  Done done_;
  std::string code_ = "NATIVE_INTERNAL";
  std::vector<Napi::ObjectReference> refs_;
};

}  // namespace ninodes
