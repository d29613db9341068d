#include "ops/onednn_context.h"

#include <dlfcn.h>

#include <exception>
#include <mutex>

#include "core/errors.h"
#include "core/registry.h"
#include "core/thread_pool.h"

namespace ninodes {
namespace {

using OmpSetNumThreads = void (*)(int);

// libdnnl pulls libgomp in; the addon is dlopen'ed locally, so look the symbol up in that library.
OmpSetNumThreads omp_setter() {
  static OmpSetNumThreads fn = [] {
    void* handle = dlopen("libgomp.so.1", RTLD_LAZY | RTLD_NOLOAD);
    void* sym = handle != nullptr ? dlsym(handle, "omp_set_num_threads") : nullptr;
    if (sym == nullptr) sym = dlsym(RTLD_DEFAULT, "omp_set_num_threads");
    return reinterpret_cast<OmpSetNumThreads>(sym);
  }();
  return fn;
}

void* gomp_symbol(const char* name) {
  void* handle = dlopen("libgomp.so.1", RTLD_LAZY | RTLD_NOLOAD);
  void* sym = handle != nullptr ? dlsym(handle, name) : nullptr;
  return sym != nullptr ? sym : dlsym(RTLD_DEFAULT, name);
}

// libgomp's entry for `#pragma omp parallel` (stable ABI since GCC 4.9) and the team queries.
using GompParallel = void (*)(void (*)(void*), void*, unsigned, unsigned);
using OmpQuery = int (*)();
struct Gomp {
  GompParallel parallel;
  OmpQuery thread_num, num_threads;
};
const Gomp& gomp() {
  static const Gomp g{reinterpret_cast<GompParallel>(gomp_symbol("GOMP_parallel")),
                      reinterpret_cast<OmpQuery>(gomp_symbol("omp_get_thread_num")),
                      reinterpret_cast<OmpQuery>(gomp_symbol("omp_get_num_threads"))};
  return g;
}

struct TeamJob {
  const RangeFn* fn;
  size_t count, chunks;
  std::mutex mutex;
  std::exception_ptr error;
};

void team_body(void* data) {
  auto* job = static_cast<TeamJob*>(data);
  const size_t t = static_cast<size_t>(gomp().thread_num()), nt = static_cast<size_t>(gomp().num_threads());
  for (size_t c = t; c < job->chunks; c += nt) {
    try {
      (*job->fn)(c * job->count / job->chunks, (c + 1) * job->count / job->chunks);
    } catch (...) {
      std::lock_guard<std::mutex> lock(job->mutex);
      if (!job->error) job->error = std::current_exception();
    }
  }
}

}  // namespace

void onednn_team_for(size_t count, size_t grain, const RangeFn& fn) {
  if (count == 0) return;
  const Gomp& g = gomp();
  if (g.parallel == nullptr || g.thread_num == nullptr || g.num_threads == nullptr) return parallel_for(count, grain, fn);
  const size_t threads = static_cast<size_t>(thread_count());
  const size_t chunks = std::min(threads, (count + std::max<size_t>(grain, 1) - 1) / std::max<size_t>(grain, 1));
  if (chunks <= 1) return fn(0, count);
  sync_onednn_threads();
  TeamJob job{&fn, count, chunks, {}, nullptr};
  g.parallel(team_body, &job, static_cast<unsigned>(chunks), 0);
  if (job.error) std::rethrow_exception(job.error);
}

dnnl::engine& onednn_engine() {
  static dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

void sync_onednn_threads() {
  thread_local int applied = -1;
  const int n = thread_count();
  if (n != applied) {
    if (OmpSetNumThreads fn = omp_setter()) fn(n);
    applied = n;
  }
}

bool onednn_int8_exact() {
  static const bool exact = [] {
    const unsigned isa = static_cast<unsigned>(dnnl::get_effective_cpu_isa());
    return (isa & 0x67u) == 0x67u || (isa & 0x407u) == 0x407u;
  }();
  return exact;
}

namespace {

Napi::Value set_compute_threads(const Napi::CallbackInfo& info) {
  return guarded(info, [](const Napi::CallbackInfo& info) -> Napi::Value {
    if (info.Length() < 1 || !info[0].IsNumber()) fail("INVALID_ARGUMENT", "setComputeThreads expects a number");
    const double n = info[0].As<Napi::Number>().DoubleValue();
    if (!(n >= 0 && n <= 1024) || n != static_cast<int>(n)) {
      fail("INVALID_ARGUMENT", "thread count must be an integer in 0..1024 (0 = one per core), got " + std::to_string(n));
    }
    set_thread_count(static_cast<int>(n));
    sync_onednn_threads();
    return Napi::Number::New(info.Env(), thread_count());
  });
}

Napi::Value get_compute_threads(const Napi::CallbackInfo& info) { return Napi::Number::New(info.Env(), thread_count()); }

}  // namespace
}  // namespace ninodes

NINODES_MODULE(compute_threads) {
  exports.Set("setComputeThreads", Napi::Function::New(env, ninodes::set_compute_threads, "setComputeThreads"));
  exports.Set("getComputeThreads", Napi::Function::New(env, ninodes::get_compute_threads, "getComputeThreads"));
}
