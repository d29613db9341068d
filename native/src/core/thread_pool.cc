#include "core/thread_pool.h"

#include <algorithm>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace ninodes {
namespace {

thread_local bool inside_pool = false;

class Pool {
 public:
  ~Pool() { stop(); }

  int size() {
    std::lock_guard<std::mutex> lock(config_mutex_);
    return threads_;
  }

  void resize(int n) {
    std::lock_guard<std::mutex> run_lock(run_mutex_);
    std::lock_guard<std::mutex> lock(config_mutex_);
    stop();
    threads_ = n <= 0 ? std::max(1u, std::thread::hardware_concurrency()) : n;
  }

  void run(size_t count, size_t grain, const RangeFn& fn) {
    if (count == 0) return;
    // One parallel region at a time: concurrent async ops queue here instead of oversubscribing.
    std::lock_guard<std::mutex> run_lock(run_mutex_);
    const int threads = size();
    const size_t max_chunks = (count + std::max<size_t>(grain, 1) - 1) / std::max<size_t>(grain, 1);
    const size_t chunks = std::min<size_t>(static_cast<size_t>(threads), max_chunks);
    if (chunks <= 1) {
      inside_pool = true;
      try {
        fn(0, count);
      } catch (...) {
        inside_pool = false;
        throw;
      }
      inside_pool = false;
      return;
    }
    ensure_workers(threads - 1);
    {
      std::lock_guard<std::mutex> lock(job_mutex_);
      job_ = &fn;
      job_count_ = count;
      job_chunks_ = chunks;
      next_chunk_ = 1;  // chunk 0 runs on the calling thread
      pending_ = chunks - 1;
      error_ = nullptr;
      ++generation_;
    }
    job_cv_.notify_all();
    inside_pool = true;
    run_chunk(0);
    // Help with remaining chunks so a busy pool never stalls the caller.
    while (true) {
      size_t chunk;
      {
        std::lock_guard<std::mutex> lock(job_mutex_);
        if (next_chunk_ >= job_chunks_) break;
        chunk = next_chunk_++;
      }
      run_chunk(chunk);
      std::lock_guard<std::mutex> lock(job_mutex_);
      if (--pending_ == 0) done_cv_.notify_all();
    }
    inside_pool = false;
    std::unique_lock<std::mutex> lock(job_mutex_);
    done_cv_.wait(lock, [&] { return pending_ == 0; });
    job_ = nullptr;
    if (error_) std::rethrow_exception(error_);
  }

 private:
  void run_chunk(size_t chunk) {
    const size_t begin = chunk * job_count_ / job_chunks_;
    const size_t end = (chunk + 1) * job_count_ / job_chunks_;
    try {
      (*job_)(begin, end);
    } catch (...) {
      std::lock_guard<std::mutex> lock(job_mutex_);
      if (!error_) error_ = std::current_exception();
    }
  }

  void ensure_workers(int n) {
    while (static_cast<int>(workers_.size()) < n) workers_.emplace_back([this] { worker_loop(); });
  }

  void worker_loop() {
    inside_pool = true;
    size_t seen = 0;
    while (true) {
      size_t chunk;
      {
        std::unique_lock<std::mutex> lock(job_mutex_);
        job_cv_.wait(lock, [&] { return stopping_ || (generation_ != seen && next_chunk_ < job_chunks_); });
        if (stopping_) return;
        chunk = next_chunk_++;
        if (next_chunk_ >= job_chunks_) seen = generation_;
      }
      run_chunk(chunk);
      std::lock_guard<std::mutex> lock(job_mutex_);
      if (--pending_ == 0) done_cv_.notify_all();
    }
  }

  void stop() {
    {
      std::lock_guard<std::mutex> lock(job_mutex_);
      stopping_ = true;
    }
    job_cv_.notify_all();
    for (std::thread& t : workers_) t.join();
    workers_.clear();
    std::lock_guard<std::mutex> lock(job_mutex_);
    stopping_ = false;
  }

  std::mutex run_mutex_;
  std::mutex config_mutex_;
  int threads_ = std::max(1u, std::thread::hardware_concurrency());

  std::mutex job_mutex_;
  std::condition_variable job_cv_;
  std::condition_variable done_cv_;
  std::vector<std::thread> workers_;
  const RangeFn* job_ = nullptr;
  size_t job_count_ = 0;
  size_t job_chunks_ = 0;
  size_t next_chunk_ = 0;
  size_t pending_ = 0;
  size_t generation_ = 0;
  bool stopping_ = false;
  std::exception_ptr error_;
};

Pool& pool() {
  static Pool instance;
  return instance;
}

}  // namespace

void parallel_for(size_t count, size_t grain, const RangeFn& fn) {
  if (inside_pool) {
    fn(0, count);
    return;
  }
  pool().run(count, grain, fn);
}

int thread_count() { return pool().size(); }

void set_thread_count(int n) { pool().resize(n); }

}  // namespace ninodes
