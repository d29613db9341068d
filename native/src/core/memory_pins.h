#pragma once
// Memory that JS can release early (a file mapping, a native allocation) while an async kernel may
// still be reading it on a worker thread. Owners register their address ranges; AsyncOp pins the
// range under each buffer it was given when it is queued and unpins it once it has settled. An owner
// asked to release pinned memory defers the munmap/free to the last unpin, so JS sees the memory as
// gone at once (its views are detached) but no kernel ever touches freed pages.
#include <napi.h>

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>

namespace ninodes {

class PinnableMemory {
 public:
  virtual ~PinnableMemory() = default;
  // Both are called with pin_mutex() held; unpin_locked may release (and delete) the owner.
  virtual void pin_locked() = 0;
  virtual void unpin_locked() = 0;
  // True when the memory can no longer be trusted (a mapped file truncated under it), with the
  // error to report instead of a result. Lock-free: read on worker threads too.
  virtual bool failed(std::string* code, std::string* message) const { return false; }
};

// The one lock of every owner's bookkeeping and of the range table, so pinning never races a release.
std::mutex& pin_mutex();

// [begin, begin + bytes) belongs to `owner` until unregistered (both with pin_mutex() held).
void register_pinnable_locked(const void* begin, size_t bytes, PinnableMemory* owner);
void unregister_pinnable_locked(const void* begin);

// Pins the registered memory holding address `p`; nullptr when `p` lies in none (GC'd JS memory).
PinnableMemory* pin_containing(const void* p);
void unpin(PinnableMemory* owner);

// Whether the registered memory holding `p` has failed (see PinnableMemory::failed); false for
// memory no owner registered.
bool memory_failed(const void* p, std::string* code, std::string* message);

// The first byte a typed array or ArrayBuffer covers; nullptr for anything else or an empty one.
inline const void* data_of(const Napi::Value& value) {
  if (value.IsTypedArray()) {
    Napi::TypedArray t = value.As<Napi::TypedArray>();
    if (t.ByteLength() == 0) return nullptr;
    return static_cast<const uint8_t*>(t.ArrayBuffer().Data()) + t.ByteOffset();
  }
  if (value.IsArrayBuffer()) {
    Napi::ArrayBuffer b = value.As<Napi::ArrayBuffer>();
    return b.ByteLength() == 0 ? nullptr : b.Data();
  }
  return nullptr;
}

}  // namespace ninodes
