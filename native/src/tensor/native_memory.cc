// Native allocations handed to JS as external ArrayBuffers. The finalizer frees memory the GC finds
// unreachable; releaseNative() frees it early: it detaches the buffer first, so every JS view of it
// reads as empty instead of touching freed memory. An async op reading the memory pins it
// (core/memory_pins.h): an early release then frees it when the last such op settles.
#include <napi.h>

#include <sys/mman.h>

#include <atomic>
#include <cstdlib>
#include <mutex>
#include <unordered_map>

#include "core/errors.h"
#include "core/memory_pins.h"
#include "core/registry.h"

namespace {

// All fields are guarded by ninodes::pin_mutex().
struct Allocation final : ninodes::PinnableMemory {
  Allocation(void* data, size_t bytes, size_t mapped_bytes) : data(data), bytes(bytes), mapped_bytes(mapped_bytes) {}
  void* const data;
  const size_t bytes;
  const size_t mapped_bytes;  // > 0: the block came from mmap and goes back with munmap
  bool freed = false;
  bool release_pending = false;  // released (or finalized) while pinned: free at the last unpin
  bool finalized = false;        // the ArrayBuffer is gone: delete the bookkeeping once freed
  uint64_t pins = 0;

  void pin_locked() override { ++pins; }
  void unpin_locked() override;
};

// Large blocks are mapped directly so that freeing one returns its pages to the OS at once. From
// malloc, glibc raises its mmap threshold after the first large free and then keeps freed weight
// buffers on its heap: a weight cache evicting to stay within budget saw resident memory stay at
// about twice the budget.
constexpr size_t kMapThreshold = size_t{1} << 20;

std::atomic<int64_t> live_bytes{0};
std::unordered_map<void*, Allocation*>& registry() {
  static std::unordered_map<void*, Allocation*> map;
  return map;
}

void free_locked(Allocation* a) {
  if (a->freed) return;
  if (a->pins > 0) {
    a->release_pending = true;
    return;
  }
  a->freed = true;
  registry().erase(a->data);
  ninodes::unregister_pinnable_locked(a->data);
  if (a->mapped_bytes > 0) {
    munmap(a->data, a->mapped_bytes);
  } else {
    std::free(a->data);
  }
  live_bytes.fetch_sub(static_cast<int64_t>(a->bytes));
}

void Allocation::unpin_locked() {
  if (--pins > 0 || !release_pending) return;
  free_locked(this);
  if (finalized) delete this;
}

void finalize(Napi::Env, void*, Allocation* a) {
  std::lock_guard<std::mutex> lock(ninodes::pin_mutex());
  a->finalized = true;
  free_locked(a);
  if (a->freed) delete a;
}

Napi::Value allocate_native(const Napi::CallbackInfo& info) {
  return ninodes::guarded(info, [](const Napi::CallbackInfo& info) -> Napi::Value {
    if (info.Length() < 1 || !info[0].IsNumber()) ninodes::fail("INVALID_ARGUMENT", "allocateNative expects a byte count");
    const double want = info[0].As<Napi::Number>().DoubleValue();
    // 2^46 bytes: far above any machine here, far below size_t overflow when rounded up to 64.
    if (!(want >= 0) || want != static_cast<double>(static_cast<uint64_t>(want)) || want > 70368744177664.0) {
      ninodes::fail("INVALID_SHAPE", "allocateNative: byte count must be an integer in 0..2^46, got " + std::to_string(want));
    }
    const size_t bytes = static_cast<size_t>(want);
    const size_t rounded = bytes == 0 ? 64 : (bytes + 63) / 64 * 64;
    void* data = nullptr;
    size_t mapped_bytes = 0;
    if (rounded >= kMapThreshold) {
      void* p = mmap(nullptr, rounded, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (p != MAP_FAILED) {
        data = p;
        mapped_bytes = rounded;
      }
    } else {
      data = std::aligned_alloc(64, rounded);
    }
    if (data == nullptr) ninodes::fail("OUT_OF_MEMORY", "allocateNative: could not allocate " + std::to_string(bytes) + " bytes");
    auto* a = new Allocation(data, bytes, mapped_bytes);
    {
      std::lock_guard<std::mutex> lock(ninodes::pin_mutex());
      registry()[data] = a;
      ninodes::register_pinnable_locked(data, rounded, a);
    }
    live_bytes.fetch_add(static_cast<int64_t>(bytes));
    return Napi::ArrayBuffer::New(info.Env(), data, bytes, finalize, a);
  });
}

Napi::Value release_native(const Napi::CallbackInfo& info) {
  return ninodes::guarded(info, [](const Napi::CallbackInfo& info) -> Napi::Value {
    if (info.Length() < 1 || !info[0].IsArrayBuffer()) ninodes::fail("INVALID_ARGUMENT", "releaseNative expects an ArrayBuffer");
    Napi::ArrayBuffer ab = info[0].As<Napi::ArrayBuffer>();
    void* data = ab.Data();
    {
      std::lock_guard<std::mutex> lock(ninodes::pin_mutex());
      if (data == nullptr || registry().find(data) == registry().end()) {
        return Napi::Boolean::New(info.Env(), false);
      }
    }
    // Detach before freeing; the finalizer may run inside Detach, so look the allocation up again.
    ab.Detach();
    std::lock_guard<std::mutex> lock(ninodes::pin_mutex());
    auto it = registry().find(data);
    if (it != registry().end()) free_locked(it->second);
    return Napi::Boolean::New(info.Env(), true);
  }, false);
}

Napi::Value native_bytes(const Napi::CallbackInfo& info) {
  return Napi::Number::New(info.Env(), static_cast<double>(live_bytes.load()));
}

}  // namespace

NINODES_MODULE(native_memory) {
  exports.Set("allocateNative", Napi::Function::New(env, allocate_native, "allocateNative"));
  exports.Set("releaseNative", Napi::Function::New(env, release_native, "releaseNative"));
  exports.Set("nativeBytes", Napi::Function::New(env, native_bytes, "nativeBytes"));
}
