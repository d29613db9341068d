#include "comm/gloo_communicator.h"

#define HIREDIS_NESTED_INCLUDE 1
#include <gloo/allgather.h>
#include <gloo/allreduce.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/common/error.h>
#include <gloo/math.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/rendezvous/redis_store.h>
#include <gloo/transport/tcp/device.h>

#include <algorithm>
#include <cctype>
#include <sstream>
#include <thread>

namespace ninodes {
namespace comm {

namespace {

using Clock = std::chrono::steady_clock;

// FileStore keeps its key check protected; the communicator polls it with its own deadline
// (Gloo's stores measure their waits in whole seconds and ignore the timeout in get()).
class CheckableFileStore : public gloo::rendezvous::FileStore {
 public:
  using gloo::rendezvous::FileStore::FileStore;
  using gloo::rendezvous::FileStore::check;
};

// A rendezvous key that did not appear before the deadline.
struct StoreTimeout : std::runtime_error {
  StoreTimeout(std::vector<std::string> keys, const std::string& message)
      : std::runtime_error(message), keys(std::move(keys)) {}
  std::vector<std::string> keys;
};

// A store failure that is not a timeout (unreachable Redis, unwritable directory, reused prefix).
struct StoreFailure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The rank a rendezvous key belongs to: Gloo's full-mesh connect writes "rank_<r>" (host name) and
// "<r>" (pair addresses); the post-mortem writes "alive/<r>".
int rank_of_key(const std::string& key) {
  size_t start = key.rfind('_');
  const size_t slash = key.rfind('/');
  if (slash != std::string::npos && (start == std::string::npos || slash > start)) start = slash;
  start = start == std::string::npos ? 0 : start + 1;
  if (start >= key.size()) return -1;
  int r = 0;
  for (size_t i = start; i < key.size(); ++i) {
    if (!std::isdigit(static_cast<unsigned char>(key[i]))) return -1;
    r = r * 10 + (key[i] - '0');
    if (r > 1 << 20) return -1;
  }
  return r;
}

std::string join_ranks(const std::vector<int>& ranks) {
  std::ostringstream out;
  for (size_t i = 0; i < ranks.size(); ++i) out << (i == 0 ? "" : ", ") << ranks[i];
  return out.str();
}

}  // namespace

// Prefixes every key and waits with millisecond deadlines, over either of Gloo's stores.
class TimedStore : public gloo::rendezvous::Store {
 public:
  TimedStore(const StoreSpec& spec, std::chrono::milliseconds timeout) : prefix_(spec.prefix + "/"), timeout_(timeout) {
    try {
      if (spec.kind == "file") {
        auto file = std::make_unique<CheckableFileStore>(spec.path);
        auto* raw = file.get();
        check_ = [raw](const std::vector<std::string>& keys) { return raw->check(keys); };
        inner_ = std::move(file);
        where_ = "file store " + spec.path;
      } else {
        auto redis = std::make_unique<gloo::rendezvous::RedisStore>(spec.host, spec.port);
        auto* raw = redis.get();
        check_ = [raw](const std::vector<std::string>& keys) { return raw->check(keys); };
        inner_ = std::move(redis);
        where_ = "redis store " + spec.host + ":" + std::to_string(spec.port);
      }
    } catch (const std::exception& e) {
      throw StoreFailure("cannot open the " + std::string(spec.kind) + " store: " + e.what());
    }
  }

  void set(const std::string& key, const std::vector<char>& data) override {
    try {
      inner_->set(prefix_ + key, data);
    } catch (const std::exception& e) {
      throw StoreFailure("cannot write key '" + prefix_ + key + "' to the " + where_ + ": " + e.what() +
                         " (a key that exists already means a previous run used the same prefix)");
    }
  }

  std::vector<char> get(const std::string& key) override {
    wait({key}, timeout_);
    try {
      return inner_->get(prefix_ + key);
    } catch (const std::exception& e) {
      throw StoreFailure("cannot read key '" + prefix_ + key + "' from the " + where_ + ": " + e.what());
    }
  }

  void wait(const std::vector<std::string>& keys) override { wait(keys, timeout_); }

  void wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& timeout) override {
    if (!wait_until(keys, Clock::now() + timeout)) {
      throw StoreTimeout(keys, "timed out after " + std::to_string(timeout.count()) + " ms waiting for key(s) in the " + where_);
    }
  }

  // True when every key exists before `deadline`.
  bool wait_until(const std::vector<std::string>& keys, Clock::time_point deadline) {
    std::vector<std::string> full;
    for (const auto& k : keys) full.push_back(prefix_ + k);
    for (;;) {
      bool present;
      try {
        present = check_(full);
      } catch (const std::exception& e) {
        throw StoreFailure("cannot query the " + where_ + ": " + e.what());
      }
      if (present) return true;
      if (Clock::now() >= deadline) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }

  const std::string& where() const { return where_; }

 private:
  std::string prefix_;
  std::chrono::milliseconds timeout_;
  std::unique_ptr<gloo::rendezvous::Store> inner_;
  std::function<bool(const std::vector<std::string>&)> check_;
  std::string where_;
};

Communicator::Communicator(CommOptions options) : options_(std::move(options)) {}

Communicator::~Communicator() { close(); }

void Communicator::close() {
  std::lock_guard<std::mutex> lock(mutex_);
  closed_ = true;
  context_.reset();
  device_.reset();
  store_.reset();
}

CommStatus Communicator::connect() {
  std::lock_guard<std::mutex> lock(mutex_);
  const std::string who = "rank " + std::to_string(options_.rank) + " of " + std::to_string(options_.size);
  try {
    store_ = std::make_unique<TimedStore>(options_.store, options_.timeout);
  } catch (const StoreFailure& e) {
    return broken_ = CommStatus{"COMM_STORE", who + ": " + e.what(), {}};
  }
  try {
    gloo::transport::tcp::attr attr;
    if (!options_.iface.empty()) {
      attr.iface = options_.iface;
    } else {
      attr.hostname = options_.hostname.empty() ? "127.0.0.1" : options_.hostname;
    }
    device_ = gloo::transport::tcp::CreateDevice(attr);
  } catch (const std::exception& e) {
    const std::string target = options_.iface.empty() ? "address " + attr_name() : "interface " + options_.iface;
    return broken_ = CommStatus{"COMM_INTERFACE", who + ": cannot bind a TCP device to " + target + ": " + e.what(), {}};
  }
  try {
    auto context = std::make_shared<gloo::rendezvous::Context>(options_.rank, options_.size);
    context->setTimeout(options_.timeout);
    context->connectFullMesh(*store_, device_);
    context_ = context;
    return {};
  } catch (const StoreTimeout& e) {
    std::vector<int> ranks;
    for (const auto& k : e.keys) {
      const int r = rank_of_key(k);
      if (r >= 0 && std::find(ranks.begin(), ranks.end(), r) == ranks.end()) ranks.push_back(r);
    }
    const std::string named = ranks.empty() ? "a peer" : (ranks.size() == 1 ? "rank " : "ranks ") + join_ranks(ranks);
    return broken_ = CommStatus{"COMM_TIMEOUT",
                                who + ": " + named + " did not join within " + std::to_string(options_.timeout.count()) +
                                    " ms (" + e.what() + ")",
                                ranks};
  } catch (const StoreFailure& e) {
    return broken_ = CommStatus{"COMM_STORE", who + ": " + e.what(), {}};
  } catch (const std::exception& e) {
    return fail_and_diagnose("connect", e.what(), true);
  }
}

std::string Communicator::attr_name() const { return options_.hostname.empty() ? "127.0.0.1" : options_.hostname; }

CommStatus Communicator::run(const char* what, const std::function<void()>& body) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (closed_) return CommStatus{"COMM_CLOSED", std::string(what) + ": the communicator was closed", {}};
  if (!broken_.ok()) {
    CommStatus again = broken_;
    again.message = std::string(what) + ": the communicator failed earlier: " + broken_.message;
    return again;
  }
  if (!context_) return CommStatus{"COMM_NOT_CONNECTED", std::string(what) + ": the communicator is not connected", {}};
  try {
    body();
    return {};
  } catch (const std::exception& e) {
    return fail_and_diagnose(what, e.what(), false);
  }
}

// Called with mutex_ held, after a Gloo operation threw.
CommStatus Communicator::fail_and_diagnose(const char* what, const std::string& gloo_message, bool during_connect) {
  std::string lower = gloo_message;
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  const bool timed_out = lower.find("timed out") != std::string::npos || lower.find("timeout") != std::string::npos;

  // Close every socket first: peers blocked on us then fail now, not at their own deadline.
  context_.reset();

  std::vector<int> lost;
  std::string diagnosis;
  if (store_) {
    try {
      store_->set("alive/" + std::to_string(options_.rank), std::vector<char>{'1'});
      const auto deadline = Clock::now() + options_.grace;
      for (int r = 0; r < options_.size; ++r) {
        if (r == options_.rank) continue;
        if (!store_->wait_until({"alive/" + std::to_string(r)}, deadline)) lost.push_back(r);
      }
    } catch (const std::exception& e) {
      diagnosis = "; could not tell which rank failed: " + std::string(e.what());
    }
  }

  const std::string who = "rank " + std::to_string(options_.rank) + " of " + std::to_string(options_.size);
  std::string code = timed_out ? "COMM_TIMEOUT" : "COMM_PEER_LOST";
  std::string head;
  if (!lost.empty()) {
    head = std::string(lost.size() == 1 ? "rank " : "ranks ") + join_ranks(lost) +
           (timed_out ? " did not answer within " + std::to_string(options_.timeout.count()) + " ms"
                      : (lost.size() == 1 ? " was lost" : " were lost")) +
           " (no sign of life " + std::to_string(options_.grace.count()) + " ms after the failure)";
  } else if (diagnosis.empty()) {
    head = "every peer is alive and failed too (did the ranks issue different collectives?)";
  } else {
    head = timed_out ? "a peer did not answer in time" : "a peer connection broke";
  }
  std::string message = who + ": " + what + (during_connect ? "" : " failed") + ": " + head + diagnosis + " [gloo: " +
                        gloo_message + "]";
  return broken_ = CommStatus{code, message, lost};
}

namespace {

template <typename T>
gloo::AllreduceOptions::Func reducer(ReduceOp op) {
  using Fn = void (*)(void*, const void*, const void*, size_t);
  const Fn sum = &gloo::sum<T>;
  const Fn max = &gloo::max<T>;
  return op == ReduceOp::kSum ? sum : max;
}

}  // namespace

CommStatus Communicator::allreduce(void* data, size_t count, DType dtype, ReduceOp op) {
  return run("allreduce", [&] {
    if (count == 0 || options_.size == 1) return;
    gloo::AllreduceOptions opts(context_);
    if (dtype == DType::kF32) {
      opts.setOutput(static_cast<float*>(data), count);
      opts.setReduceFunction(reducer<float>(op));
    } else {
      opts.setOutput(static_cast<int32_t*>(data), count);
      opts.setReduceFunction(reducer<int32_t>(op));
    }
    opts.setTag(tag_++);
    opts.setTimeout(options_.timeout);
    gloo::allreduce(opts);
  });
}

CommStatus Communicator::broadcast(void* data, size_t count, DType dtype, int root) {
  return run("broadcast", [&] {
    if (count == 0 || options_.size == 1) return;
    gloo::BroadcastOptions opts(context_);
    if (dtype == DType::kF32) {
      opts.setOutput(static_cast<float*>(data), count);
    } else {
      opts.setOutput(static_cast<int32_t*>(data), count);
    }
    opts.setRoot(root);
    opts.setTag(tag_++);
    opts.setTimeout(options_.timeout);
    gloo::broadcast(opts);
  });
}

CommStatus Communicator::allgather(const void* in, void* out, size_t count, DType dtype) {
  return run("allgather", [&] {
    const size_t bytes = count * 4;
    if (options_.size == 1 || count == 0) {
      if (bytes > 0) std::copy(static_cast<const char*>(in), static_cast<const char*>(in) + bytes, static_cast<char*>(out));
      return;
    }
    gloo::AllgatherOptions opts(context_);
    // Gloo's input pointer is not written; its API just takes T*.
    if (dtype == DType::kF32) {
      opts.setInput(const_cast<float*>(static_cast<const float*>(in)), count);
      opts.setOutput(static_cast<float*>(out), count * options_.size);
    } else {
      opts.setInput(const_cast<int32_t*>(static_cast<const int32_t*>(in)), count);
      opts.setOutput(static_cast<int32_t*>(out), count * options_.size);
    }
    opts.setTag(tag_++);
    opts.setTimeout(options_.timeout);
    gloo::allgather(opts);
  });
}

CommStatus Communicator::barrier() {
  return run("barrier", [&] {
    if (options_.size == 1) return;
    gloo::BarrierOptions opts(context_);
    opts.setTag(tag_++);
    opts.setTimeout(options_.timeout);
    gloo::barrier(opts);
  });
}

}  // namespace comm
}  // namespace ninodes
