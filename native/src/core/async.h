#pragma once
// Runs `work` on a libuv worker thread and resolves a Promise with `done(env)` on the JS thread.
// `keep_alive` holds references to the JS objects whose memory `work` reads or writes (ArrayBuffers,
// external buffers), so the GC cannot free them while the op runs off-thread; the native memory under
// them (a file mapping, a native allocation) is pinned too, so an early close()/dispose() waits for
// the op (core/memory_pins.h). A mapped file truncated before or during the op fails it with
// FILE_TRUNCATED instead of returning a result computed from zero-filled pages (io/fault_guard.h).
#include <napi.h>

#include <functional>
#include <string>
#include <vector>

#include "core/errors.h"
#include "core/memory_pins.h"

namespace ninodes {

class AsyncOp : public Napi::AsyncWorker {
 public:
  using Work = std::function<void()>;
  using Done = std::function<Napi::Value(Napi::Env)>;

  // `pinned`: memory the caller has already pinned (pin_locked) that no JS value in keep_alive
  // covers (a mapping reached through its handle); the op unpins it when it settles.
  static Napi::Promise start(Napi::Env env, const char* name, Work work, Done done,
                             const std::vector<Napi::Value>& keep_alive,
                             const std::vector<PinnableMemory*>& pinned = {}) {
    auto* op = new AsyncOp(env, name, std::move(work), std::move(done));
    op->pins_ = pinned;
    for (const Napi::Value& value : keep_alive) {
      if (!value.IsObject()) continue;
      op->refs_.push_back(Napi::Persistent(value.As<Napi::Object>()));
      if (PinnableMemory* pinned = pin_containing(data_of(value))) op->pins_.push_back(pinned);
    }
    Napi::Promise promise = op->deferred_.Promise();
    op->Queue();
    return promise;
  }

  ~AsyncOp() override {
    for (PinnableMemory* pinned : pins_) unpin(pinned);
  }

 protected:
  void Execute() override {
    try {
      fail_if_pinned_failed();
      const uint64_t faults = repaired_fault_count();
      work_();
      fail_if_pinned_failed();
      fail_if_faulted_since(faults);
    } catch (const NativeError& e) {
      code_ = e.code();
      SetError(e.what());
    } catch (const std::bad_alloc&) {
      code_ = "OUT_OF_MEMORY";
      SetError("native allocation failed");
    } catch (const std::exception& e) {
      code_ = "INTERNAL";
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
  void fail_if_pinned_failed() const {
    std::string code, message;
    for (const PinnableMemory* pinned : pins_) {
      if (pinned->failed(&code, &message)) fail(code, message);
    }
  }

  AsyncOp(Napi::Env env, const char* name, Work work, Done done)
      : Napi::AsyncWorker(env, name), deferred_(Napi::Promise::Deferred::New(env)), work_(std::move(work)),
        done_(std::move(done)) {}

  Napi::Promise::Deferred deferred_;
  Work work_;
  Done done_;
  std::string code_ = "INTERNAL";
  std::vector<Napi::ObjectReference> refs_;
  std::vector<PinnableMemory*> pins_;
};

}  // namespace ninodes
