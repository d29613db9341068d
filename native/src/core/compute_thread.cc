#include "core/compute_thread.h"

#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>

namespace ninodes {
namespace {

struct Job {
  const std::function<void()>* work;
  std::exception_ptr error;
  bool done = false;
};

thread_local bool on_compute_thread = false;

class ComputeThread {
 public:
  ComputeThread() {
    // Detached and never destroyed (see instance()): no join at exit while a job may still run.
    std::thread([this] { loop(); }).detach();
  }

  void run(const std::function<void()>& work) {
    Job job{&work, nullptr};
    {
      std::lock_guard<std::mutex> lock(mutex_);
      queue_.push_back(&job);
    }
    ready_.notify_one();
    std::unique_lock<std::mutex> lock(mutex_);
    finished_.wait(lock, [&] { return job.done; });
    if (job.error) std::rethrow_exception(job.error);
  }

 private:
  void loop() {
    on_compute_thread = true;
    for (;;) {
      Job* job;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        ready_.wait(lock, [&] { return !queue_.empty(); });
        job = queue_.front();
        queue_.pop_front();
      }
      try {
        (*job->work)();
      } catch (...) {
        job->error = std::current_exception();
      }
      {
        std::lock_guard<std::mutex> lock(mutex_);
        job->done = true;
      }
      finished_.notify_all();
    }
  }

  std::mutex mutex_;
  std::condition_variable ready_, finished_;
  std::deque<Job*> queue_;
};

ComputeThread& instance() {
  // Leaked on purpose: static destruction must not tear down a thread that may be mid-job.
  static ComputeThread* thread = new ComputeThread();
  return *thread;
}

}  // namespace

bool is_compute_thread() { return on_compute_thread; }

void run_on_compute_thread(const std::function<void()>& work) {
  if (on_compute_thread) return work();
  instance().run(work);
}

}  // namespace ninodes
