#pragma once
// One Gloo process group: a TCP device, a full-mesh context made through a key-value store (Gloo's
// FileStore on one machine, its RedisStore across machines), and the collectives tensor parallelism
// needs. The pairs run in Gloo's synchronous mode (the calling thread reads its own socket: no hop
// through Gloo's event-loop thread per message) and every collective is one exchange of bounded
// chunks through Gloo's bound buffers, set up once at connect (see gloo_communicator.cc). Every operation has a deadline; when one fails, the communicator closes its sockets (so the
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
class Buffer;
class Device;
}  // namespace transport
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

// A collective moves at most kChunkBytes of payload per message. Each message is a lock-step round
// between the ranks, so fewer of them is faster: a 590 KB int8 gather between two pinned ranks took
// ~0.42 ms as five 128 KiB messages and ~0.3 ms as one. Messages up to kSocketSafeBytes (header
// included) fit a TCP socket's default send buffer (Linux: 212992 bytes), so ranks may all send
// before they receive; larger ones are exchanged pair by pair (see exchange()).
constexpr size_t kHeaderBytes = 24;
constexpr size_t kChunkBytes = 1024 * 1024;
constexpr size_t kSocketSafeBytes = 128 * 1024;
constexpr size_t kChunkElements = kChunkBytes / 4;  // 4-byte elements
constexpr size_t kChunkWords = (kHeaderBytes + kChunkBytes) / 8;

enum class DType { kF32, kI32, kI8 };
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
  // `data` is size consecutive segments, segment r of counts[r] elements (every rank passes the same
  // counts). reduce_scatter: segment `rank` ends as the sum over ranks of their segment `rank`, in
  // allreduce's order and so with its bits; the other segments are left as staging garbage (f32, i32).
  // allgather_into: every segment r ends as rank r's segment r (f32, i32, i8). A rank sends each peer
  // only what it needs: its segment p to peer p, or its own segment to everyone.
  CommStatus reduce_scatter(void* data, const std::vector<size_t>& counts, DType dtype);
  CommStatus allgather_into(void* data, const std::vector<size_t>& counts, DType dtype);
  // all_to_all: `send` is size consecutive segments, segment p of counts[p] elements, for rank p;
  // `recv` is size segments of counts[rank] elements each, segment q ending as rank q's segment
  // `rank` (f32, i32, i8). Every rank passes the same counts; send and recv must not overlap.
  CommStatus all_to_all(const void* send, void* recv, const std::vector<size_t>& counts, DType dtype);
  CommStatus barrier();
  void close();

  int rank() const { return options_.rank; }
  int size() const { return options_.size; }

 private:
  CommStatus run(const char* what, const std::function<void()>& body);
  CommStatus fail_and_diagnose(const char* what, const std::string& gloo_message, bool during_connect);
  std::string attr_name() const;
  // Sends a header and payload to every peer (or only from `root`) and receives theirs into the
  // inboxes; checks that the peers issued the same collective (kind, count and `shape`, a hash of
  // the segment counts or 0). Each peer p gets `bytes` of the shared outbox's payload, or, with
  // `per_peer`, per_peer[p] bytes of its own outbox's. `widest` is the largest payload any rank
  // sends in this exchange (0: `bytes`, when every rank sends that much); it must be the same on
  // every rank, since it decides the order of sends and receives.
  void exchange(uint32_t kind, uint64_t count, uint64_t shape, size_t bytes, int root, const size_t* per_peer = nullptr, size_t widest = 0);
  // One round of a segmented collective where each peer gets its own part: chunk i (`chunk`
  // elements of `width` bytes) of segment p of `src` goes to peer p, empty once that segment is
  // exhausted; the peers' messages land in the inboxes.
  void exchange_segments(uint32_t kind, uint64_t count, uint64_t shape, const char* src, const std::vector<size_t>& counts, const std::vector<size_t>& offsets, size_t i, size_t chunk, size_t width);
  // The payload of the outbox for peer p (p < 0: the one shared by every peer).
  char* outbox(int p);
  const char* payload_of(int rank) const;
  void drop_buffers();

  CommOptions options_;
  std::mutex mutex_;
  std::unique_ptr<TimedStore> store_;
  std::shared_ptr<gloo::transport::Device> device_;
  std::shared_ptr<gloo::Context> context_;
  // Chunk staging (24-byte header + payload), kChunkWords words a box: the outboxes (box 0 shared by
  // every peer, box 1 + p for peer p alone), one inbox per peer, and the Gloo buffers bound to them
  // (send_[p] spans every outbox and sends one of them; recv_[p]; both empty for this rank).
  std::vector<uint64_t> outbox_;
  std::vector<std::vector<uint64_t>> inbox_;
  std::vector<std::unique_ptr<gloo::transport::Buffer>> send_;
  std::vector<std::unique_ptr<gloo::transport::Buffer>> recv_;
  uint64_t sequence_ = 0;
  bool closed_ = false;
  CommStatus broken_;  // the first failure; later calls repeat it
  // After a failure: the peers this rank found alive. Its "alive" key stays until each of them has
  // finished its own diagnosis (see close()), so no survivor mistakes it for lost.
  std::vector<int> survivors_;
};

}  // namespace comm
}  // namespace ninodes
