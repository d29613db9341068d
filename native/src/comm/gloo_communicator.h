#pragma once
// One Gloo process group: a TCP device, a full-mesh context made through a key-value store (Gloo's
// FileStore on one machine, its RedisStore across machines), and the collectives tensor parallelism
// needs. Every operation has a deadline; when one fails, the communicator closes its sockets (so the
// peers still waiting fail at once instead of at their own deadline), announces itself alive in the
// store and waits a short grace for the others' announcements: the ranks that stay silent are the
// ones named as lost. Errors never throw out of here; they come back as a CommStatus.
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace gloo {
class Context;
namespace transport {
class Device;
}
}  // namespace gloo

namespace ninodes {
namespace comm {

struct CommStatus {
  std::string code;  // empty when the operation succeeded
  std::string message;
  std::vector<int> ranks;  // the ranks the failure is attributed to (lost, late or never came)
  bool ok() const { return code.empty(); }
};

struct StoreSpec {
  std::string kind;  // "file" | "redis"
  std::string path;  // file store directory
  std::string host;  // redis host
  int port = 0;
  std::string prefix;  // namespaces every key, so one store can serve many runs
};

struct CommOptions {
  int rank = 0;
  int size = 1;
  StoreSpec store;
  std::string iface;     // bind to this interface (e.g. "lo", "veth0") ...
  std::string hostname;  // ... or to the address this name resolves to; both empty: loopback
  std::chrono::milliseconds timeout{30000};
  std::chrono::milliseconds grace{2000};
};

class TimedStore;

enum class DType { kF32, kI32 };
enum class ReduceOp { kSum, kMax };

class Communicator {
 public:
  explicit Communicator(CommOptions options);
  ~Communicator();

  // Rendezvous and connect every pair. Blocks (run it off the JS thread).
  CommStatus connect();
  CommStatus allreduce(void* data, size_t count, DType dtype, ReduceOp op);
  CommStatus broadcast(void* data, size_t count, DType dtype, int root);
  CommStatus allgather(const void* in, void* out, size_t count, DType dtype);
  CommStatus barrier();
  void close();

  int rank() const { return options_.rank; }
  int size() const { return options_.size; }

 private:
  CommStatus run(const char* what, const std::function<void()>& body);
  CommStatus fail_and_diagnose(const char* what, const std::string& gloo_message, bool during_connect);
  std::string attr_name() const;

  CommOptions options_;
  std::mutex mutex_;
  std::unique_ptr<TimedStore> store_;
  std::shared_ptr<gloo::transport::Device> device_;
  std::shared_ptr<gloo::Context> context_;
  uint32_t tag_ = 0;
  bool closed_ = false;
  CommStatus broken_;  // the first failure; later calls repeat it
};

}  // namespace comm
}  // namespace ninodes
