// Read-only file mappings exposed as external ArrayBuffers (no copy), plus the page-cache hints and
// allocator trim the memory layer needs.
//
// One mmap per file; JS gets an opaque handle and takes views of byte ranges as external
// ArrayBuffers (Node 20 caps an ArrayBuffer at 4 GiB, checkpoints are far larger). The mapping is
// reference counted by the handle and every view, so a view that outlives a forgotten handle never
// dangles. ioUnmap() is the early release: JS detaches every view first (ioDetach), so stale typed
// arrays read as empty, then the pages are unmapped at once, or when the last async op reading them
// settles (core/memory_pins.h). A file truncated under its mapping raises no fatal SIGBUS: the
// faulting pages read as zeros and every user reports FILE_TRUNCATED (io/fault_guard.h). JS owns the file descriptor and checks
// the file's identity with fstat; this file owns only the mapping.
#include <malloc.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <memory>
#include <string>
#include <vector>
#include <algorithm>

#include "core/async.h"
#include "core/errors.h"
#include "core/registry.h"
#include "core/memory_pins.h"
#include "core/thread_pool.h"
#include "io/fault_guard.h"

namespace {

// One mmap of a file. `refs` counts the JS handle, every live view and every async op using it;
// the pages go when the last of them goes, or at ioUnmap when no op is using them, else when the
// last such op settles. All fields are guarded by ninodes::pin_mutex().
class Mapping final : public ninodes::PinnableMemory {
 public:
  Mapping(char* addr, uint64_t length, std::string path, int guard_slot)
      : addr(addr), length(length), path(std::move(path)), guard_slot(guard_slot) {}

  char* const addr;
  const uint64_t length;
  const std::string path;
  const int guard_slot;
  uint64_t refs = 1;
  uint64_t pins = 0;
  bool closed = false;  // ioUnmap was called: no new views
  bool mapped = true;

  void pin_locked() override {
    ++refs;
    ++pins;
  }
  void unpin_locked() override {
    --pins;
    if (pins == 0 && closed) unmap_locked();
    drop_locked();
  }
  bool failed(std::string* code, std::string* message) const override {
    if (!ninodes::mapping_faulted(guard_slot)) return false;
    *code = "FILE_TRUNCATED";
    *message = ninodes::truncated_message(path);
    return true;
  }

  void unmap_locked() {
    if (!mapped) return;
    mapped = false;
    ninodes::unregister_pinnable_locked(addr);
    ninodes::unguard_mapping(guard_slot);
    munmap(addr, static_cast<size_t>(length));
  }
  // Drops one reference; the last one unmaps and frees the bookkeeping.
  void drop_locked() {
    if (--refs > 0) return;
    unmap_locked();
    delete this;
  }
};

void drop_ref(Mapping* m) {
  std::lock_guard<std::mutex> lock(ninodes::pin_mutex());
  m->drop_locked();
}

// Sum of n bytes. psadbw adds 16 bytes per instruction and is part of baseline x86-64 (SSE2), so
// a full read runs at memory bandwidth instead of one byte per add.
uint64_t byte_sum(const unsigned char* p, size_t n) {
  uint64_t sum = 0;
  size_t i = 0;
#if defined(__SSE2__)
  const __m128i zero = _mm_setzero_si128();
  __m128i a0 = zero, a1 = zero, a2 = zero, a3 = zero;
  for (; i + 64 <= n; i += 64) {
    a0 = _mm_add_epi64(a0, _mm_sad_epu8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + i)), zero));
    a1 = _mm_add_epi64(a1, _mm_sad_epu8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + i + 16)), zero));
    a2 = _mm_add_epi64(a2, _mm_sad_epu8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + i + 32)), zero));
    a3 = _mm_add_epi64(a3, _mm_sad_epu8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + i + 48)), zero));
  }
  const __m128i total = _mm_add_epi64(_mm_add_epi64(a0, a1), _mm_add_epi64(a2, a3));
  sum = static_cast<uint64_t>(_mm_cvtsi128_si64(total)) + static_cast<uint64_t>(_mm_cvtsi128_si64(_mm_unpackhi_epi64(total, total)));
#endif
  for (; i < n; ++i) sum += p[i];
  return sum;
}

// A read of a truncated mapping was repaired with zero pages (io/fault_guard.h): the sum is not the file's.
// (An unmapped mapping's guard slot may already belong to another file: ask only while mapped.)
void fail_if_truncated(const Mapping* m) {
  if (m->mapped && ninodes::mapping_faulted(m->guard_slot)) ninodes::fail("FILE_TRUNCATED", ninodes::truncated_message(m->path));
}

double number_arg(const Napi::CallbackInfo& info, size_t i, const char* fn, const char* what) {
  if (info.Length() <= i || !info[i].IsNumber()) ninodes::fail("INVALID_ARGUMENT", std::string(fn) + ": " + what + " must be a number");
  double v = info[i].As<Napi::Number>().DoubleValue();
  if (!(v >= 0) || v > 9007199254740991.0 || v != static_cast<double>(static_cast<uint64_t>(v))) {
    ninodes::fail("INVALID_ARGUMENT", std::string(fn) + ": " + what + " must be a non-negative integer, got " + std::to_string(v));
  }
  return v;
}

Mapping* handle_arg(const Napi::CallbackInfo& info, const char* fn) {
  if (info.Length() < 1 || !info[0].IsExternal()) ninodes::fail("INVALID_ARGUMENT", std::string(fn) + ": expects a mapping handle from ioMapFile");
  return info[0].As<Napi::External<Mapping>>().Data();
}

// Validates [offset, offset + length) against a live mapping; returns nothing, fails with a code.
void check_range(const Mapping* m, uint64_t offset, uint64_t length, const char* fn) {
  if (m->closed) ninodes::fail("FILE_CLOSED", std::string(fn) + ": the file was already unmapped (closed)");
  if (offset > m->length || length > m->length - offset) {
    ninodes::fail("MMAP_RANGE", std::string(fn) + ": range " + std::to_string(offset) + "+" + std::to_string(length) +
                                    " is outside the " + std::to_string(m->length) + "-byte mapping");
  }
}

// ioMapFile(fd, length, private, path): maps [0, length) of fd read-only and shared, or copy-on-write
// when `private` (writes through views then stay in this process instead of faulting). `path` names
// the file in errors; the mapping is guarded against SIGBUS (io/fault_guard.h) and pinnable by async ops.
Napi::Value map_file(const Napi::CallbackInfo& info) {
  return ninodes::guarded(info, [](const Napi::CallbackInfo& info) -> Napi::Value {
    const int fd = static_cast<int>(number_arg(info, 0, "ioMapFile", "fd"));
    const uint64_t length = static_cast<uint64_t>(number_arg(info, 1, "ioMapFile", "length"));
    const bool priv = info.Length() > 2 && info[2].ToBoolean().Value();
    const std::string path = info.Length() > 3 && info[3].IsString() ? info[3].As<Napi::String>().Utf8Value() : std::string("a mapped file");
    if (length == 0) ninodes::fail("MMAP_EMPTY", "ioMapFile: cannot map 0 bytes");
    struct stat st;
    if (fstat(fd, &st) != 0) ninodes::fail("MMAP_FAILED", std::string("fstat failed: ") + std::strerror(errno));
    if (!S_ISREG(st.st_mode)) ninodes::fail("NOT_A_REGULAR_FILE", "only regular files can be mapped");
    if (static_cast<uint64_t>(st.st_size) < length) {
      ninodes::fail("MMAP_RANGE", "cannot map " + std::to_string(length) + " bytes of a " + std::to_string(st.st_size) + "-byte file");
    }
    const int prot = priv ? (PROT_READ | PROT_WRITE) : PROT_READ;
    const int flags = priv ? MAP_PRIVATE : MAP_SHARED;
    void* addr = mmap(nullptr, static_cast<size_t>(length), prot, flags, fd, 0);
    if (addr == MAP_FAILED) ninodes::fail("MMAP_FAILED", std::string("mmap failed: ") + std::strerror(errno));
    const int slot = ninodes::guard_mapping(addr, static_cast<size_t>(length), priv, path);
    if (slot < 0) {
      munmap(addr, static_cast<size_t>(length));
      ninodes::fail("MMAP_TOO_MANY", "ioMapFile: " + path + ": too many files are mapped at once (1024); close some");
    }
    auto* m = new Mapping(static_cast<char*>(addr), length, path, slot);
    {
      std::lock_guard<std::mutex> lock(ninodes::pin_mutex());
      ninodes::register_pinnable_locked(addr, static_cast<size_t>(length), m);
    }
    return Napi::External<Mapping>::New(info.Env(), m, [](Napi::Env, Mapping* data) { drop_ref(data); });
  });
}

// ioMapView(handle, offset, length): an external ArrayBuffer over bytes [offset, offset + length).
Napi::Value map_view(const Napi::CallbackInfo& info) {
  return ninodes::guarded(info, [](const Napi::CallbackInfo& info) -> Napi::Value {
    Mapping* m = handle_arg(info, "ioMapView");
    const uint64_t offset = static_cast<uint64_t>(number_arg(info, 1, "ioMapView", "offset"));
    const uint64_t length = static_cast<uint64_t>(number_arg(info, 2, "ioMapView", "length"));
    check_range(m, offset, length, "ioMapView");
    if (length == 0) return Napi::ArrayBuffer::New(info.Env(), 0);
    if (length > (uint64_t{1} << 32)) {
      ninodes::fail("MMAP_VIEW_TOO_LARGE", "ioMapView: a view of " + std::to_string(length) +
                                               " bytes exceeds the 4 GiB ArrayBuffer limit of this Node version");
    }
    {
      std::lock_guard<std::mutex> lock(ninodes::pin_mutex());
      ++m->refs;
    }
    napi_value out;
    napi_status status = napi_create_external_arraybuffer(
        info.Env(), m->addr + offset, static_cast<size_t>(length),
        [](napi_env, void*, void* hint) { drop_ref(static_cast<Mapping*>(hint)); }, m, &out);
    if (status != napi_ok) {
      drop_ref(m);
      ninodes::fail("MMAP_VIEW_FAILED", "ioMapView: Node refused an external ArrayBuffer of " + std::to_string(length) + " bytes");
    }
    return Napi::Value(info.Env(), out);
  });
}

// ioDetach(buffer): detaches an ArrayBuffer so every typed array over it reads as empty.
Napi::Value detach(const Napi::CallbackInfo& info) {
  return ninodes::guarded(info, [](const Napi::CallbackInfo& info) -> Napi::Value {
    if (info.Length() < 1 || !info[0].IsArrayBuffer()) ninodes::fail("INVALID_ARGUMENT", "ioDetach: expects an ArrayBuffer");
    Napi::ArrayBuffer buffer = info[0].As<Napi::ArrayBuffer>();
    if (buffer.IsDetached()) return Napi::Boolean::New(info.Env(), false);
    buffer.Detach();
    return Napi::Boolean::New(info.Env(), true);
  }, false);
}

// ioUnmap(handle): JS has detached every view first; the pages go now, or when the last async op
// still reading them settles. Idempotent.
Napi::Value unmap(const Napi::CallbackInfo& info) {
  return ninodes::guarded(info, [](const Napi::CallbackInfo& info) -> Napi::Value {
    Mapping* m = handle_arg(info, "ioUnmap");
    std::lock_guard<std::mutex> lock(ninodes::pin_mutex());
    if (m->closed) return Napi::Boolean::New(info.Env(), false);
    m->closed = true;
    if (m->pins == 0) m->unmap_locked();
    return Napi::Boolean::New(info.Env(), true);
  }, false);
}

// ioMadvise(handle, offset, length, advice): willneed | dontneed | sequential | random | normal.
Napi::Value madvise_range(const Napi::CallbackInfo& info) {
  return ninodes::guarded(info, [](const Napi::CallbackInfo& info) -> Napi::Value {
    Mapping* m = handle_arg(info, "ioMadvise");
    const uint64_t offset = static_cast<uint64_t>(number_arg(info, 1, "ioMadvise", "offset"));
    const uint64_t length = static_cast<uint64_t>(number_arg(info, 2, "ioMadvise", "length"));
    if (info.Length() < 4 || !info[3].IsString()) ninodes::fail("INVALID_ARGUMENT", "ioMadvise: advice must be a string");
    const std::string name = info[3].As<Napi::String>();
    int advice;
    if (name == "willneed") advice = MADV_WILLNEED;
    else if (name == "dontneed") advice = MADV_DONTNEED;
    else if (name == "sequential") advice = MADV_SEQUENTIAL;
    else if (name == "random") advice = MADV_RANDOM;
    else if (name == "normal") advice = MADV_NORMAL;
    else ninodes::fail("INVALID_ARGUMENT", "ioMadvise: unknown advice '" + name + "' (willneed, dontneed, sequential, random, normal)");
    check_range(m, offset, length, "ioMadvise");
    if (length == 0) return info.Env().Undefined();
    const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
    const uint64_t start = offset / page * page;
    if (madvise(m->addr + start, static_cast<size_t>(offset + length - start), advice) != 0) {
      ninodes::fail("MADVISE_FAILED", std::string("madvise(") + name + ") failed: " + std::strerror(errno));
    }
    return info.Env().Undefined();
  });
}

// ioTouchPages(handle, offset, length): reads one byte per page so the range is faulted in; returns
// a byte sum so the compiler cannot drop the reads.
Napi::Value touch_pages(const Napi::CallbackInfo& info) {
  return ninodes::guarded(info, [](const Napi::CallbackInfo& info) -> Napi::Value {
    Mapping* m = handle_arg(info, "ioTouchPages");
    const uint64_t offset = static_cast<uint64_t>(number_arg(info, 1, "ioTouchPages", "offset"));
    const uint64_t length = static_cast<uint64_t>(number_arg(info, 2, "ioTouchPages", "length"));
    check_range(m, offset, length, "ioTouchPages");
    const volatile unsigned char* base = reinterpret_cast<const unsigned char*>(m->addr);
    const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    uint64_t sum = 0;
    for (size_t i = static_cast<size_t>(offset); i < offset + length; i += page) sum += base[i];
    if (length > 0) sum += base[offset + length - 1];
    fail_if_truncated(m);
    return Napi::Number::New(info.Env(), static_cast<double>(sum));
  });
}

#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22  // Linux >= 5.14; older headers lack the name
#endif

// Faults in [start, start + length) of a mapping on the calling thread. Linux >= 5.14:
// madvise(MADV_POPULATE_READ) reads the pages in and maps them without touching them from user space;
// older kernels answer EINVAL, then one byte per page is read (the fault guard turns a page past a
// truncated file's end into zeros and a FILE_TRUNCATED error). Returns whether madvise did it.
bool populate_pages(Mapping* m, uint64_t start, uint64_t length) {
  if (length == 0) return true;
  for (;;) {
    if (madvise(m->addr + start, static_cast<size_t>(length), MADV_POPULATE_READ) == 0) return true;
    if (errno == EINTR || errno == EAGAIN) continue;
    if (errno == EFAULT) ninodes::fail("FILE_TRUNCATED", ninodes::truncated_message(m->path));
    if (errno == EINVAL) break;
    ninodes::fail("MADVISE_FAILED", std::string("madvise(MADV_POPULATE_READ) failed: ") + std::strerror(errno));
  }
  const volatile unsigned char* base = reinterpret_cast<const unsigned char*>(m->addr);
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  unsigned sink = 0;
  for (uint64_t i = start; i < start + length; i += page) sink += base[i];
  (void)sink;
  fail_if_truncated(m);
  return false;
}

// ioPopulate(handle, offset, length): a Promise that settles once every page of the range is read
// from the file and mapped into this process (a worker thread does the reads: prefetch that leaves
// the JS thread computing). Resolves with the bytes populated (the range widened to whole pages).
// The mapping is pinned while the op runs: closing the file early unmaps it after the op settles.
Napi::Value populate(const Napi::CallbackInfo& info) {
  return ninodes::guarded(info, [](const Napi::CallbackInfo& info) -> Napi::Value {
    Mapping* m = handle_arg(info, "ioPopulate");
    const uint64_t offset = static_cast<uint64_t>(number_arg(info, 1, "ioPopulate", "offset"));
    const uint64_t length = static_cast<uint64_t>(number_arg(info, 2, "ioPopulate", "length"));
    check_range(m, offset, length, "ioPopulate");
    const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
    const uint64_t start = offset / page * page;
    const uint64_t end = length == 0 ? start : std::min<uint64_t>(m->length, (offset + length + page - 1) / page * page);
    {
      std::lock_guard<std::mutex> lock(ninodes::pin_mutex());
      m->pin_locked();
    }
    auto bytes = std::make_shared<double>(0);
    return ninodes::AsyncOp::start(
        info.Env(), "ninodes.ioPopulate",
        [m, start, end, bytes]() {
          populate_pages(m, start, end - start);
          *bytes = static_cast<double>(end - start);
        },
        [bytes](Napi::Env env) -> Napi::Value { return Napi::Number::New(env, *bytes); }, {info[0]}, {m});
  });
}

// ioFadvise(fd, offset, length, advice): posix_fadvise on an open descriptor ('dontneed' drops the
// file's cached pages that no mapping maps; 'willneed' starts reading them). Length 0: to the end.
Napi::Value fadvise_range(const Napi::CallbackInfo& info) {
  return ninodes::guarded(info, [](const Napi::CallbackInfo& info) -> Napi::Value {
    const int fd = static_cast<int>(number_arg(info, 0, "ioFadvise", "fd"));
    const uint64_t offset = static_cast<uint64_t>(number_arg(info, 1, "ioFadvise", "offset"));
    const uint64_t length = static_cast<uint64_t>(number_arg(info, 2, "ioFadvise", "length"));
    if (info.Length() < 4 || !info[3].IsString()) ninodes::fail("INVALID_ARGUMENT", "ioFadvise: advice must be a string");
    const std::string name = info[3].As<Napi::String>();
    int advice;
    if (name == "willneed") advice = POSIX_FADV_WILLNEED;
    else if (name == "dontneed") advice = POSIX_FADV_DONTNEED;
    else if (name == "sequential") advice = POSIX_FADV_SEQUENTIAL;
    else if (name == "random") advice = POSIX_FADV_RANDOM;
    else if (name == "normal") advice = POSIX_FADV_NORMAL;
    else ninodes::fail("INVALID_ARGUMENT", "ioFadvise: unknown advice '" + name + "' (willneed, dontneed, sequential, random, normal)");
    const int rc = posix_fadvise(fd, static_cast<off_t>(offset), static_cast<off_t>(length), advice);
    if (rc != 0) ninodes::fail("FADVISE_FAILED", std::string("posix_fadvise(") + name + ") failed: " + std::strerror(rc));
    return info.Env().Undefined();
  });
}

// ioSumBytes(handle, offset, length): reads every byte of the range (the full-read benchmark) and
// returns their sum, exact below 2^53 (any file under ~35 TB). Chunks are summed in parallel; integer
// addition makes the result independent of the thread count.
Napi::Value sum_bytes(const Napi::CallbackInfo& info) {
  return ninodes::guarded(info, [](const Napi::CallbackInfo& info) -> Napi::Value {
    Mapping* m = handle_arg(info, "ioSumBytes");
    const uint64_t offset = static_cast<uint64_t>(number_arg(info, 1, "ioSumBytes", "offset"));
    const uint64_t length = static_cast<uint64_t>(number_arg(info, 2, "ioSumBytes", "length"));
    check_range(m, offset, length, "ioSumBytes");
    const unsigned char* base = reinterpret_cast<const unsigned char*>(m->addr) + offset;
    constexpr size_t kChunk = size_t{1} << 20;
    const size_t chunks = static_cast<size_t>((length + kChunk - 1) / kChunk);
    std::vector<uint64_t> partial(chunks, 0);
    ninodes::parallel_for(chunks, 1, [&](size_t begin, size_t end) {
      for (size_t c = begin; c < end; ++c) {
        const size_t lo = c * kChunk;
        const size_t hi = std::min<size_t>(static_cast<size_t>(length), lo + kChunk);
        partial[c] = byte_sum(base + lo, hi - lo);
      }
    });
    fail_if_truncated(m);
    uint64_t total = 0;
    for (size_t c = 0; c < chunks; ++c) total += partial[c];
    return Napi::Number::New(info.Env(), static_cast<double>(total));
  });
}

// ioAssertIntact(handle): throws FILE_TRUNCATED once any read of the mapping hit a page past the
// file's end (on any thread, V8's included); the read itself saw zeros.
Napi::Value assert_intact(const Napi::CallbackInfo& info) {
  return ninodes::guarded(info, [](const Napi::CallbackInfo& info) -> Napi::Value {
    fail_if_truncated(handle_arg(info, "ioAssertIntact"));
    return info.Env().Undefined();
  });
}

// ioMallocTrim(pad): returns glibc's free heap memory to the OS after large frees.
Napi::Value malloc_trim_binding(const Napi::CallbackInfo& info) {
  return ninodes::guarded(info, [](const Napi::CallbackInfo& info) -> Napi::Value {
    const size_t pad = info.Length() > 0 ? static_cast<size_t>(number_arg(info, 0, "ioMallocTrim", "pad")) : 0;
    return Napi::Boolean::New(info.Env(), malloc_trim(pad) == 1);
  });
}

Napi::Value page_size(const Napi::CallbackInfo& info) {
  return Napi::Number::New(info.Env(), static_cast<double>(sysconf(_SC_PAGESIZE)));
}

}  // namespace

NINODES_MODULE(io_mmap) {
  exports.Set("ioMapFile", Napi::Function::New(env, map_file, "ioMapFile"));
  exports.Set("ioMapView", Napi::Function::New(env, map_view, "ioMapView"));
  exports.Set("ioDetach", Napi::Function::New(env, detach, "ioDetach"));
  exports.Set("ioUnmap", Napi::Function::New(env, unmap, "ioUnmap"));
  exports.Set("ioMadvise", Napi::Function::New(env, madvise_range, "ioMadvise"));
  exports.Set("ioPopulate", Napi::Function::New(env, populate, "ioPopulate"));
  exports.Set("ioFadvise", Napi::Function::New(env, fadvise_range, "ioFadvise"));
  exports.Set("ioTouchPages", Napi::Function::New(env, touch_pages, "ioTouchPages"));
  exports.Set("ioSumBytes", Napi::Function::New(env, sum_bytes, "ioSumBytes"));
  exports.Set("ioAssertIntact", Napi::Function::New(env, assert_intact, "ioAssertIntact"));
  exports.Set("ioMallocTrim", Napi::Function::New(env, malloc_trim_binding, "ioMallocTrim"));
  exports.Set("ioPageSize", Napi::Function::New(env, page_size, "ioPageSize"));
}
