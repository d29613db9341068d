#include "core/memory_pins.h"

#include <iterator>
#include <map>

namespace ninodes {
namespace {

struct Range {
  uintptr_t end;
  PinnableMemory* owner;
};

// begin -> range; ranges never overlap (each is a live mapping or allocation of its own).
std::map<uintptr_t, Range>& ranges() {
  static std::map<uintptr_t, Range> table;
  return table;
}

PinnableMemory* owner_locked(const void* p) {
  const auto a = reinterpret_cast<uintptr_t>(p);
  auto it = ranges().upper_bound(a);
  if (it == ranges().begin()) return nullptr;
  it = std::prev(it);
  return a < it->second.end ? it->second.owner : nullptr;
}

}  // namespace

std::mutex& pin_mutex() {
  static std::mutex mutex;
  return mutex;
}

void register_pinnable_locked(const void* begin, size_t bytes, PinnableMemory* owner) {
  const auto b = reinterpret_cast<uintptr_t>(begin);
  ranges()[b] = Range{b + bytes, owner};
}

void unregister_pinnable_locked(const void* begin) { ranges().erase(reinterpret_cast<uintptr_t>(begin)); }

PinnableMemory* pin_containing(const void* p) {
  if (p == nullptr) return nullptr;
  std::lock_guard<std::mutex> lock(pin_mutex());
  PinnableMemory* owner = owner_locked(p);
  if (owner != nullptr) owner->pin_locked();
  return owner;
}

void unpin(PinnableMemory* owner) {
  std::lock_guard<std::mutex> lock(pin_mutex());
  owner->unpin_locked();
}

bool memory_failed(const void* p, std::string* code, std::string* message) {
  if (p == nullptr) return false;
  std::lock_guard<std::mutex> lock(pin_mutex());
  PinnableMemory* owner = owner_locked(p);
  return owner != nullptr && owner->failed(code, message);
}

}  // namespace ninodes
