#include "io/fault_guard.h"

#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <mutex>

namespace ninodes {
namespace {

// A fixed table the handler can scan without locks or allocation. `begin` is published last (and
// cleared first), so a slot the handler sees with begin != 0 is complete.
constexpr int kSlots = 1024;
struct Slot {
  std::atomic<uintptr_t> begin{0};
  std::atomic<uintptr_t> end{0};
  std::atomic<int> prot{PROT_READ};
  std::atomic<uint64_t> faulted_at{0};  // repaired_fault_count value of its latest repair; 0: none
};
Slot g_slots[kSlots];
std::string g_paths[kSlots];  // written under g_table_mutex only, never read by the handler
std::mutex g_table_mutex;
std::atomic<uint64_t> g_repaired{0};
uintptr_t g_page_mask = 0;
struct sigaction g_previous;
std::once_flag g_install_once;

// Hands a signal that is not ours to whoever had SIGBUS before, else restores the default action
// and re-raises it, so a foreign SIGBUS still ends the process as it would without ninodes.
void forward(int sig, siginfo_t* info, void* context) {
  if (g_previous.sa_flags & SA_SIGINFO) {
    if (g_previous.sa_sigaction != nullptr) return g_previous.sa_sigaction(sig, info, context);
  } else if (g_previous.sa_handler != SIG_DFL && g_previous.sa_handler != SIG_IGN && g_previous.sa_handler != nullptr) {
    return g_previous.sa_handler(sig);
  }
  signal(SIGBUS, SIG_DFL);
  raise(SIGBUS);
}

// Only atomics and one mmap call (a plain system call, async-signal-safe in practice though POSIX
// does not list it). Zero pages from the faulting page to the end of the mapping: a truncated file
// loses a tail, so every later page faults too, and one repair avoids one signal per page.
void on_sigbus(int sig, siginfo_t* info, void* context) {
  const auto addr = reinterpret_cast<uintptr_t>(info->si_addr);
  for (Slot& slot : g_slots) {
    const uintptr_t begin = slot.begin.load(std::memory_order_acquire);
    if (begin == 0 || addr < begin) continue;
    const uintptr_t end = slot.end.load(std::memory_order_relaxed);
    if (addr >= end) continue;
    const uintptr_t page = addr & g_page_mask;
    void* got = mmap(reinterpret_cast<void*>(page), end - page, slot.prot.load(std::memory_order_relaxed),
                     MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (got == MAP_FAILED) break;
    slot.faulted_at.store(g_repaired.fetch_add(1) + 1);
    return;
  }
  forward(sig, info, context);
}

void install() {
  std::call_once(g_install_once, [] {
    g_page_mask = ~(static_cast<uintptr_t>(sysconf(_SC_PAGESIZE)) - 1);
    struct sigaction action;
    std::memset(&action, 0, sizeof(action));
    action.sa_sigaction = on_sigbus;
    action.sa_flags = SA_SIGINFO | SA_NODEFER;
    sigemptyset(&action.sa_mask);
    sigaction(SIGBUS, &action, &g_previous);
  });
}

}  // namespace

int guard_mapping(void* addr, size_t length, bool writable, const std::string& path) {
  install();
  std::lock_guard<std::mutex> lock(g_table_mutex);
  for (int i = 0; i < kSlots; ++i) {
    Slot& slot = g_slots[i];
    if (slot.begin.load(std::memory_order_relaxed) != 0) continue;
    g_paths[i] = path;
    slot.faulted_at.store(0);
    slot.prot.store(writable ? (PROT_READ | PROT_WRITE) : PROT_READ, std::memory_order_relaxed);
    slot.end.store(reinterpret_cast<uintptr_t>(addr) + length, std::memory_order_relaxed);
    slot.begin.store(reinterpret_cast<uintptr_t>(addr), std::memory_order_release);
    return i;
  }
  return -1;
}

void unguard_mapping(int slot) {
  if (slot < 0) return;
  std::lock_guard<std::mutex> lock(g_table_mutex);
  g_slots[slot].begin.store(0, std::memory_order_release);
  g_slots[slot].end.store(0, std::memory_order_relaxed);
}

bool mapping_faulted(int slot) { return slot >= 0 && g_slots[slot].faulted_at.load() != 0; }

uint64_t repaired_fault_count() { return g_repaired.load(); }

std::string files_faulted_since(uint64_t since) {
  std::lock_guard<std::mutex> lock(g_table_mutex);
  std::string out;
  for (int i = 0; i < kSlots; ++i) {
    if (g_slots[i].begin.load() == 0 || g_slots[i].faulted_at.load() <= since) continue;
    if (!out.empty()) out += ", ";
    out += g_paths[i];
  }
  return out;
}

std::string truncated_message(const std::string& path) {
  return path + " shrank while it was mapped (truncated or rewritten in place) or a page of it could not be read; the missing pages read as zeros, so no result computed from it is returned; reopen the file";
}

}  // namespace ninodes
