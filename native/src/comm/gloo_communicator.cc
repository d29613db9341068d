#include "comm/gloo_communicator.h"

#define HIREDIS_NESTED_INCLUDE 1
#include <gloo/common/error.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/rendezvous/redis_store.h>
#include <gloo/transport/buffer.h>
#include <gloo/transport/pair.h>
#include <gloo/transport/tcp/device.h>

#include <algorithm>
#include <cctype>
#include <cstring>
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
  void remove(const std::string& key) { std::remove(objectPath(key).c_str()); }
};

// Gloo's RedisStore has no delete and no command timeout; its hiredis context is protected.
class DeletableRedisStore : public gloo::rendezvous::RedisStore {
 public:
  // Gloo connects with a 2 s limit but sends every command on a blocking socket without one: a
  // server that accepts and never answers (paused, behind a black hole) would hold a rank forever.
  // The socket's SO_RCVTIMEO / SO_SNDTIMEO bound each command by the communicator's timeout; a
  // command that runs out leaves the context in error, so every later one fails at once.
  DeletableRedisStore(const std::string& host, int port, std::chrono::milliseconds timeout) : RedisStore(host, port) {
    const auto ms = std::max<int64_t>(1, timeout.count());
    struct timeval tv;
    tv.tv_sec = static_cast<time_t>(ms / 1000);
    tv.tv_usec = static_cast<suseconds_t>((ms % 1000) * 1000);
    if (redisSetTimeout(redis_, tv) != REDIS_OK) throw std::runtime_error(std::string("cannot set the socket timeout: ") + redis_->errstr);
  }
  void remove(const std::string& key) {
    void* reply = redisCommand(redis_, "DEL %b", key.c_str(), key.size());
    if (reply == nullptr) throw std::runtime_error(std::string("redis DEL failed: ") + (redis_->errstr[0] ? redis_->errstr : "connection lost"));
    freeReplyObject(reply);
  }
  // True once a command ran out of its socket timeout (hiredis 0.14 reports it as an I/O error, EAGAIN).
  bool timed_out() const { return redis_->err == REDIS_ERR_IO && std::strstr(redis_->errstr, "temporarily unavailable") != nullptr; }
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

// A peer's message belongs to another collective than the one this rank is running.
struct CollectiveMismatch : std::runtime_error {
  CollectiveMismatch(int rank, const std::string& message) : std::runtime_error(message), rank(rank) {}
  int rank;
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
        remove_ = [raw](const std::string& key) { raw->remove(key); };
        inner_ = std::move(file);
        where_ = "file store " + spec.path;
      } else {
        auto redis = std::make_unique<DeletableRedisStore>(spec.host, spec.port, timeout);
        auto* raw = redis.get();
        check_ = [raw](const std::vector<std::string>& keys) { return raw->check(keys); };
        remove_ = [raw](const std::string& key) { raw->remove(key); };
        silent_ = [raw] { return raw->timed_out(); };
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
      written_.push_back(prefix_ + key);
    } catch (const std::exception& e) {
      if (silent_()) throw StoreFailure(silence());
      throw StoreFailure("cannot write key '" + prefix_ + key + "' to the " + where_ + ": " + e.what() +
                         " (a key that exists already means a previous run used the same prefix)");
    }
  }

  std::vector<char> get(const std::string& key) override {
    wait({key}, timeout_);
    try {
      return inner_->get(prefix_ + key);
    } catch (const std::exception& e) {
      if (silent_()) throw StoreFailure(silence());
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
        if (silent_()) throw StoreFailure(silence());
        throw StoreFailure("cannot query the " + where_ + ": " + e.what());
      }
      if (present) return true;
      if (Clock::now() >= deadline) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }

  const std::string& where() const { return where_; }

  // The message for a store that took a command and never answered it.
  std::string silence() const {
    return "the " + where_ + " did not answer a command within " + std::to_string(timeout_.count()) +
           " ms (a paused server or a network that drops its replies)";
  }

  // True when `key` exists now (no waiting).
  bool has(const std::string& key) { return check_({prefix_ + key}); }

  // Deletes `key` (written by any rank of this run); a missing key is no error.
  void remove(const std::string& key) { remove_(prefix_ + key); }

  // Deletes every key this store wrote (never another run's). Best effort: a store that fails
  // here is left as it is, the run's outcome does not depend on it.
  void remove_written() noexcept {
    try {
      for (const auto& k : written_) remove_(k);
    } catch (...) {
    }
    written_.clear();
  }

 private:
  std::string prefix_;
  std::chrono::milliseconds timeout_;
  std::unique_ptr<gloo::rendezvous::Store> inner_;
  std::function<bool(const std::vector<std::string>&)> check_;
  std::function<void(const std::string&)> remove_;
  // True when the store's last command ran out of time (never for a file store).
  std::function<bool()> silent_ = [] { return false; };
  std::vector<std::string> written_;
  std::string where_;
};

namespace {
// The header word of a barrier (see kind_word below: kind 4, no dtype, no detail).
constexpr uint32_t kBarrierWord = 4;
}  // namespace

Communicator::Communicator(CommOptions options) : options_(std::move(options)) {}

Communicator::~Communicator() { close(); }

// Buffers first: a recv buffer unregisters itself from its pair, which the context owns.
void Communicator::drop_buffers() {
  send_.clear();
  recv_.clear();
}

void Communicator::close() {
  std::lock_guard<std::mutex> lock(mutex_);
  // Keys left from a failure ("alive/<r>", "diagnosed/<r>") or a rendezvous that never finished go
  // with the rank: a store shared by many runs (Redis) keeps nothing of this one. After a failure,
  // this rank's "alive" key stays until every peer it found alive has finished reading the others'
  // (its "diagnosed" key is up, or its "alive" key is already gone), at most `grace`: a survivor
  // that diagnoses later than this one would otherwise find no sign of life and name this rank too.
  // Then the survivors' failure keys go too: each of them has finished its diagnosis (or had the
  // grace to), so no rank reads them any more, and one that was killed before its own close (a
  // launcher's SIGKILL, an OOM kill) would otherwise leave them in a shared Redis for good.
  if (store_) {
    try {
      const auto deadline = Clock::now() + options_.grace;
      for (int r : survivors_) {
        const std::string alive = "alive/" + std::to_string(r), done = "diagnosed/" + std::to_string(r);
        while (Clock::now() < deadline && store_->has(alive) && !store_->has(done)) std::this_thread::sleep_for(std::chrono::milliseconds(5));
      }
      for (int r : survivors_) {
        store_->remove("alive/" + std::to_string(r));
        store_->remove("diagnosed/" + std::to_string(r));
      }
    } catch (...) {
      // best effort: this rank's own keys go below either way
    }
    store_->remove_written();
  }
  closed_ = true;
  drop_buffers();
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
    // Synchronous pairs: the thread running a collective reads its sockets itself (blocking, with the
    // context's timeout as SO_RCVTIMEO / SO_SNDTIMEO), instead of waiting for Gloo's device thread to
    // read and wake it; a closed peer socket still fails the read at once.
    const int size = options_.size;
    outbox_.assign((static_cast<size_t>(size) + 1) * kChunkWords, 0);
    inbox_.assign(size, {});
    send_.resize(size);
    recv_.resize(size);
    const int slot = context->nextSlot();  // the same on every rank: all call it once, here
    try {
      for (int p = 0; p < size; ++p) {
        if (p == options_.rank) continue;
        auto& pair = context->getPair(p);
        pair->setSync(true, false);
        inbox_[p].assign(kChunkWords, 0);
        send_[p] = pair->createSendBuffer(slot, outbox_.data(), outbox_.size() * 8);
        recv_[p] = pair->createRecvBuffer(slot, inbox_[p].data(), kChunkWords * 8);
      }
    } catch (...) {
      drop_buffers();  // before `context` (their pairs) goes
      throw;
    }
    context_ = context;
    // Every rank has read every rendezvous key ("rank_<r>", "<r>") once all are connected: a first
    // exchange says so, then each rank deletes its own (a run leaves no keys in a shared Redis).
    exchange(kBarrierWord, 0, 0, 0, -1);
    sequence_ = 0;  // the caller's collectives are numbered from 1 (in mismatch messages)
    store_->remove_written();
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
  } catch (const CollectiveMismatch& e) {
    // A program error, not a lost peer: close the sockets (the peers fail at once too) and say so.
    drop_buffers();
    context_.reset();
    const std::string who = "rank " + std::to_string(options_.rank) + " of " + std::to_string(options_.size);
    return broken_ = CommStatus{"COMM_MISMATCH", who + ": " + what + " failed: " + e.what(), {e.rank}};
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
  drop_buffers();
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
        else survivors_.push_back(r);
      }
      store_->set("diagnosed/" + std::to_string(options_.rank), std::vector<char>{'1'});
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

// What a message's 24-byte header says: the collective (kind, dtype, op or root), the rank's count
// of collectives so far, the element count and, for the segmented collectives, a hash of the
// segment counts. Peers that disagree issued different collectives.
enum Kind : uint32_t { kAllreduce = 1, kAllgather = 2, kBroadcast = 3, kBarrier = 4, kReduceScatter = 5, kAllgatherInto = 6, kAllToAll = 7 };

uint32_t kind_word(Kind kind, DType dtype, uint32_t detail) {
  const uint32_t d = dtype == DType::kI32 ? 1u : dtype == DType::kI8 ? 2u : 0u;
  return static_cast<uint32_t>(kind) | (d << 8) | (detail << 16);
}

std::string describe(uint32_t word, uint64_t count) {
  static const char* names[] = {"?", "allreduce", "allgather", "broadcast", "barrier", "reduceScatter", "allgatherInto", "allToAll"};
  static const char* dtypes[] = {" f32", " i32", " i8", " ?"};
  const uint32_t kind = word & 0xff;
  std::ostringstream out;
  out << (kind <= 7 ? names[kind] : "?");
  if (kind != kBarrier) out << " of " << count << dtypes[(word >> 8) & 3];
  if (kind == kAllreduce) out << ((word >> 16) == 1 ? " (max)" : " (sum)");
  if (kind == kBroadcast) out << " from rank " << (word >> 16);
  return out.str();
}

// FNV-1a over the segment counts: ranks that pass different counts send different headers.
uint64_t hash_counts(const std::vector<size_t>& counts) {
  uint64_t h = 1469598103934665603ull;
  for (size_t c : counts) {
    for (int b = 0; b < 8; ++b) {
      h ^= (static_cast<uint64_t>(c) >> (8 * b)) & 0xff;
      h *= 1099511628211ull;
    }
  }
  return h;
}

// Where each segment starts (in elements).
std::vector<size_t> offsets_of(const std::vector<size_t>& counts) {
  std::vector<size_t> offsets(counts.size(), 0);
  for (size_t r = 1; r < counts.size(); ++r) offsets[r] = offsets[r - 1] + counts[r - 1];
  return offsets;
}

// Elements of chunk `i` of a segment of `count` elements, `chunk` elements a chunk (0 past its end).
size_t chunk_length(size_t count, size_t i, size_t chunk) { return i * chunk >= count ? 0 : std::min(count - i * chunk, chunk); }

// Rounds of a segmented collective: chunked by the longest segment, at least one, so that ranks
// passing different counts always meet in a first exchange that compares them.
size_t rounds_of(const std::vector<size_t>& counts, size_t chunk) {
  const size_t longest = counts.empty() ? 0 : *std::max_element(counts.begin(), counts.end());
  return std::max<size_t>(1, (longest + chunk - 1) / chunk);
}

// Bytes of the longest segment's chunk `i`: every rank computes the same from the same counts, so
// all pick the same exchange order for the round (see exchange()).
size_t widest_chunk(const std::vector<size_t>& counts, size_t i, size_t chunk, size_t width) {
  size_t widest = 0;
  for (size_t c : counts) widest = std::max(widest, chunk_length(c, i, chunk) * width);
  return widest;
}

size_t element_bytes(DType dtype) { return dtype == DType::kI8 ? 1 : 4; }

// y = op(a, x) element-wise (a may be y), in one fixed order on every rank (rank 0's values first),
// so every rank ends with the same bytes whatever the world size. The first step reads rank 0's and
// rank 1's payloads straight into y (one pass, no copy of rank 0's first); same expressions, same bits.
template <typename T>
void combine(T* y, const T* a, const T* x, size_t n, ReduceOp op) {
  if (op == ReduceOp::kSum) {
    for (size_t i = 0; i < n; ++i) y[i] = a[i] + x[i];
  } else {
    for (size_t i = 0; i < n; ++i) y[i] = x[i] > a[i] ? x[i] : a[i];
  }
}

}  // namespace

char* Communicator::outbox(int p) { return reinterpret_cast<char*>(outbox_.data() + (p + 1) * kChunkWords) + kHeaderBytes; }

const char* Communicator::payload_of(int rank) const {
  const uint64_t* box = rank == options_.rank ? outbox_.data() : inbox_[rank].data();
  return reinterpret_cast<const char*>(box) + kHeaderBytes;
}

void Communicator::exchange(uint32_t kind, uint64_t count, uint64_t shape, size_t bytes, int root, const size_t* per_peer, size_t widest) {
  ++sequence_;
  const uint64_t head = static_cast<uint64_t>(kind) | (sequence_ << 32);
  const int size = options_.size;
  const int self = options_.rank;
  // A message that fits a TCP socket's default buffers (kSocketSafeBytes) never blocks its send:
  // every rank sends to every peer, then receives, and both directions of a pair move at once.
  // Larger messages go pair by pair, in increasing peer order: of two ranks the lower one sends
  // first, the higher one receives first, so a send always meets a receive already waiting for it,
  // whatever the socket buffers hold, and a chain of waits runs down to a pair that can proceed.
  // Every rank decides on `widest`, the same number everywhere, so the ranks of a pair agree.
  const bool at_once = kHeaderBytes + (widest == 0 ? bytes : widest) <= kSocketSafeBytes;
  const auto send_to = [&](int p) {
    const int box = per_peer == nullptr ? 0 : p + 1;
    uint64_t* header = outbox_.data() + box * kChunkWords;
    header[0] = head;
    header[1] = count;
    header[2] = shape;
    send_[p]->send(box * kChunkWords * 8, kHeaderBytes + (per_peer == nullptr ? bytes : per_peer[p]));
    send_[p]->waitSend();
  };
  const auto receive_from = [&](int p) {
    recv_[p]->waitRecv();
    const uint64_t theirs = inbox_[p][0];
    if (theirs != head || inbox_[p][1] != count || inbox_[p][2] != shape) {
      std::ostringstream msg;
      msg << "rank " << p << " issued collective #" << (theirs >> 32) << ", " << describe(static_cast<uint32_t>(theirs), inbox_[p][1])
          << ", where this rank issued #" << sequence_ << ", " << describe(kind, count);
      if (theirs == head && inbox_[p][1] == count) msg << ", with other segment counts";
      msg << " (ranks must issue the same collectives in the same order)";
      throw CollectiveMismatch(p, msg.str());
    }
  };
  const bool sends = root < 0 || root == self;
  if (at_once) {
    for (int p = 0; p < size && sends; ++p) {
      if (p != self) send_to(p);
    }
    for (int p = 0; p < size; ++p) {
      if (p != self && (root < 0 || p == root)) receive_from(p);
    }
    return;
  }
  for (int p = 0; p < size; ++p) {
    if (p == self) continue;
    const bool receives = root < 0 || p == root;
    if (self < p) {
      if (sends) send_to(p);
      if (receives) receive_from(p);
    } else {
      if (receives) receive_from(p);
      if (sends) send_to(p);
    }
  }
}

CommStatus Communicator::allreduce(void* data, size_t count, DType dtype, ReduceOp op) {
  return run("allreduce", [&] {
    if (count == 0 || options_.size == 1) return;
    const uint32_t kind = kind_word(kAllreduce, dtype, op == ReduceOp::kMax ? 1 : 0);
    char* bytes = static_cast<char*>(data);
    for (size_t done = 0; done < count;) {
      const size_t n = std::min(count - done, kChunkElements);
      std::memcpy(outbox(-1), bytes + done * 4, n * 4);
      exchange(kind, count, 0, n * 4, -1);
      char* y = bytes + done * 4;
      for (int r = 1; r < options_.size; ++r) {
        const char* a = r == 1 ? payload_of(0) : y;
        if (dtype == DType::kF32) {
          combine(reinterpret_cast<float*>(y), reinterpret_cast<const float*>(a), reinterpret_cast<const float*>(payload_of(r)), n, op);
        } else {
          combine(reinterpret_cast<int32_t*>(y), reinterpret_cast<const int32_t*>(a), reinterpret_cast<const int32_t*>(payload_of(r)), n, op);
        }
      }
      done += n;
    }
  });
}

CommStatus Communicator::broadcast(void* data, size_t count, DType dtype, int root) {
  return run("broadcast", [&] {
    if (count == 0 || options_.size == 1) return;
    const uint32_t kind = kind_word(kBroadcast, dtype, static_cast<uint32_t>(root));
    char* bytes = static_cast<char*>(data);
    for (size_t done = 0; done < count;) {
      const size_t n = std::min(count - done, kChunkElements);
      if (options_.rank == root) std::memcpy(outbox(-1), bytes + done * 4, n * 4);
      exchange(kind, count, 0, n * 4, root);
      if (options_.rank != root) std::memcpy(bytes + done * 4, payload_of(root), n * 4);
      done += n;
    }
  });
}

CommStatus Communicator::allgather(const void* in, void* out, size_t count, DType dtype) {
  return run("allgather", [&] {
    const char* src = static_cast<const char*>(in);
    char* dst = static_cast<char*>(out);
    if (options_.size == 1 || count == 0) {
      if (count > 0) std::memcpy(dst, src, count * 4);
      return;
    }
    const uint32_t kind = kind_word(kAllgather, dtype, 0);
    for (size_t done = 0; done < count;) {
      const size_t n = std::min(count - done, kChunkElements);
      std::memcpy(outbox(-1), src + done * 4, n * 4);
      exchange(kind, count, 0, n * 4, -1);
      for (int r = 0; r < options_.size; ++r) std::memcpy(dst + (r * count + done) * 4, payload_of(r), n * 4);
      done += n;
    }
  });
}

void Communicator::exchange_segments(uint32_t kind, uint64_t count, uint64_t shape, const char* src, const std::vector<size_t>& counts, const std::vector<size_t>& offsets, size_t i, size_t chunk, size_t width) {
  const int size = options_.size;
  std::vector<size_t> sent(size, 0);
  for (int p = 0; p < size; ++p) {
    if (p == options_.rank) continue;
    const size_t n = chunk_length(counts[p], i, chunk);
    if (n > 0) std::memcpy(outbox(p), src + (offsets[p] + i * chunk) * width, n * width);
    sent[p] = n * width;
  }
  // Every segment p is sent by some rank other than p, so the widest segment's chunk is the widest
  // message of the round on every rank.
  exchange(kind, count, shape, 0, -1, sent.data(), widest_chunk(counts, i, chunk, width));
}

CommStatus Communicator::reduce_scatter(void* data, const std::vector<size_t>& counts, DType dtype) {
  return run("reduceScatter", [&] {
    if (options_.size == 1) return;
    const int size = options_.size;
    const int self = options_.rank;
    const std::vector<size_t> offsets = offsets_of(counts);
    const size_t total = offsets.back() + counts.back();
    const uint32_t kind = kind_word(kReduceScatter, dtype, 0);
    const uint64_t shape = hash_counts(counts);
    char* bytes = static_cast<char*>(data);
    const size_t rounds = rounds_of(counts, kChunkElements);
    for (size_t i = 0; i < rounds; ++i) {
      exchange_segments(kind, total, shape, bytes, counts, offsets, i, kChunkElements, 4);
      // Every peer sent chunk i of this rank's segment; summed in rank order as allreduce does. The
      // partial sums go straight into y, so a rank past 1 reads its own values from a copy (its own
      // outbox, which it never sends) made before the first step overwrites them.
      const size_t n = chunk_length(counts[self], i, kChunkElements);
      if (n == 0) continue;
      char* y = bytes + (offsets[self] + i * kChunkElements) * 4;
      if (self >= 2) std::memcpy(outbox(self), y, n * 4);
      const auto part = [&](int r) -> const char* { return r != self ? payload_of(r) : self >= 2 ? outbox(self) : y; };
      for (int r = 1; r < size; ++r) {
        const char* a = r == 1 ? part(0) : y;
        if (dtype == DType::kF32) {
          combine(reinterpret_cast<float*>(y), reinterpret_cast<const float*>(a), reinterpret_cast<const float*>(part(r)), n, ReduceOp::kSum);
        } else {
          combine(reinterpret_cast<int32_t*>(y), reinterpret_cast<const int32_t*>(a), reinterpret_cast<const int32_t*>(part(r)), n, ReduceOp::kSum);
        }
      }
    }
  });
}

CommStatus Communicator::allgather_into(void* data, const std::vector<size_t>& counts, DType dtype) {
  return run("allgatherInto", [&] {
    if (options_.size == 1) return;
    const int size = options_.size;
    const int self = options_.rank;
    const size_t width = element_bytes(dtype);
    const size_t chunk = kChunkBytes / width;
    const std::vector<size_t> offsets = offsets_of(counts);
    const size_t total = offsets.back() + counts.back();
    const uint32_t kind = kind_word(kAllgatherInto, dtype, 0);
    const uint64_t shape = hash_counts(counts);
    char* bytes = static_cast<char*>(data);
    const size_t rounds = rounds_of(counts, chunk);
    for (size_t i = 0; i < rounds; ++i) {
      // Chunk i of this rank's segment goes to everyone (empty once it is exhausted); chunk i of
      // each peer's segment comes back.
      const size_t own = chunk_length(counts[self], i, chunk);
      if (own > 0) std::memcpy(outbox(-1), bytes + (offsets[self] + i * chunk) * width, own * width);
      exchange(kind, total, shape, own * width, -1, nullptr, widest_chunk(counts, i, chunk, width));
      for (int r = 0; r < size; ++r) {
        if (r == self) continue;
        const size_t n = chunk_length(counts[r], i, chunk);
        if (n > 0) std::memcpy(bytes + (offsets[r] + i * chunk) * width, payload_of(r), n * width);
      }
    }
  });
}

CommStatus Communicator::all_to_all(const void* send, void* recv, const std::vector<size_t>& counts, DType dtype) {
  return run("allToAll", [&] {
    const int size = options_.size;
    const int self = options_.rank;
    const size_t width = element_bytes(dtype);
    const size_t chunk = kChunkBytes / width;
    const std::vector<size_t> offsets = offsets_of(counts);
    const size_t total = offsets.back() + counts.back();
    const size_t mine = counts[self];  // every recv segment's length
    const char* in = static_cast<const char*>(send);
    char* out = static_cast<char*>(recv);
    if (mine > 0) std::memcpy(out + self * mine * width, in + offsets[self] * width, mine * width);
    if (size == 1) return;
    const uint32_t kind = kind_word(kAllToAll, dtype, 0);
    const uint64_t shape = hash_counts(counts);
    const size_t rounds = rounds_of(counts, chunk);
    for (size_t i = 0; i < rounds; ++i) {
      // Chunk i of every peer's segment `self` comes back.
      exchange_segments(kind, total, shape, in, counts, offsets, i, chunk, width);
      const size_t n = chunk_length(mine, i, chunk);
      if (n == 0) continue;
      for (int r = 0; r < size; ++r) {
        if (r != self) std::memcpy(out + (r * mine + i * chunk) * width, payload_of(r), n * width);
      }
    }
  });
}

CommStatus Communicator::barrier() {
  return run("barrier", [&] {
    if (options_.size == 1) return;
    // Every rank hears from every other before any returns.
    exchange(kBarrierWord, 0, 0, 0, -1);
  });
}

}  // namespace comm
}  // namespace ninodes
