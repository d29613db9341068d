// JS bindings of the Gloo communicator. Connecting runs on a libuv worker (a Promise); every
// collective runs on the calling JS thread and returns a status object ({ code: '' } on success)
// rather than throwing, so the TS wrapper can attach the ranks a failure names. A collective blocks
// that thread for its own time only: every read and write has the communicator's deadline, and a
// peer that closes its socket fails it at once. Running it here rather than on a worker saves two
// thread hand-offs per collective (the JS thread waking a worker, the worker waking the JS thread),
// which on a loaded machine cost more than a small collective itself. Ordering of collectives is
// the caller's job: every rank must issue the same collectives in the same order (the native side
// checks each message's header and fails naming the rank that differs).
#include <napi.h>

#include <memory>
#include <vector>

#include "comm/gloo_communicator.h"
#include "core/async.h"
#include "core/errors.h"
#include "core/registry.h"
#include "ops/span_args.h"

namespace {

using ninodes::comm::CommOptions;
using ninodes::comm::CommStatus;
using ninodes::comm::Communicator;
using ninodes::comm::DType;
using ninodes::comm::ReduceOp;
using Handle = std::shared_ptr<Communicator>;

Napi::Object status_object(Napi::Env env, const CommStatus& s) {
  Napi::Object out = Napi::Object::New(env);
  out.Set("code", Napi::String::New(env, s.code));
  out.Set("message", Napi::String::New(env, s.message));
  Napi::Array ranks = Napi::Array::New(env, s.ranks.size());
  for (size_t i = 0; i < s.ranks.size(); ++i) ranks.Set(static_cast<uint32_t>(i), Napi::Number::New(env, s.ranks[i]));
  out.Set("ranks", ranks);
  return out;
}

// An optional string field of commCreate's options ("" where it is missing).
std::string string_field(const Napi::Object& o, const char* key) {
  Napi::Value v = o.Get(key);
  return v.IsUndefined() || v.IsNull() ? "" : ninodes::args::string(v, std::string("commCreate: ") + key);
}

int64_t int_field(const Napi::Object& o, const char* key, int64_t lo, int64_t hi) {
  return ninodes::args::integer(o.Get(key), lo, hi, std::string("commCreate: ") + key);
}

Handle handle_arg(const Napi::CallbackInfo& info, const char* fn) {
  if (info.Length() < 1 || !info[0].IsExternal()) ninodes::fail("INVALID_ARGUMENT", std::string(fn) + ": expects a communicator handle");
  return *info[0].As<Napi::External<Handle>>().Data();
}

DType dtype_arg(const Napi::CallbackInfo& info, size_t i, const char* fn) {
  const std::string d = ninodes::args::string(info, i, fn);
  if (d == "f32") return DType::kF32;
  if (d == "i32") return DType::kI32;
  ninodes::fail("INVALID_ARGUMENT", std::string(fn) + ": dtype must be 'f32' or 'i32', got '" + d + "'");
}

// allgatherInto also carries int8 activations (one byte an element).
DType gather_dtype_arg(const Napi::CallbackInfo& info, size_t i, const char* fn) {
  const std::string d = ninodes::args::string(info, i, fn);
  if (d == "i8") return DType::kI8;
  if (d == "f32" || d == "i32") return dtype_arg(info, i, fn);
  ninodes::fail("INVALID_ARGUMENT", std::string(fn) + ": dtype must be 'f32', 'i32' or 'i8', got '" + d + "'");
}

// The segment counts of a segmented collective: `size` non-negative integers summing to `elements`.
std::vector<size_t> counts_arg(const Napi::CallbackInfo& info, size_t i, int size, size_t elements, const char* fn) {
  if (i >= info.Length() || !info[i].IsArray()) ninodes::fail("INVALID_ARGUMENT", std::string(fn) + ": counts must be an array");
  const Napi::Array a = info[i].As<Napi::Array>();
  if (a.Length() != static_cast<uint32_t>(size)) {
    ninodes::fail("SHAPE_MISMATCH", std::string(fn) + ": counts has " + std::to_string(a.Length()) + " entries for a world of " + std::to_string(size));
  }
  std::vector<size_t> counts(size);
  size_t sum = 0;
  for (uint32_t r = 0; r < a.Length(); ++r) {
    counts[r] = static_cast<size_t>(ninodes::args::integer(a.Get(r), 0, int64_t{1} << 40, std::string(fn) + ": counts[" + std::to_string(r) + "]"));
    sum += counts[r];
  }
  if (sum != elements) ninodes::fail("SHAPE_MISMATCH", std::string(fn) + ": counts sum to " + std::to_string(sum) + ", the data holds " + std::to_string(elements));
  return counts;
}

// A typed array of 4-byte elements (f32 or i32); returns its element count.
size_t elements(const ninodes::args::Bytes& b, const char* fn) { return ninodes::args::count<uint32_t>(b, fn); }

// commCreate({ rank, size, storeKind, storePath, storeHost, storePort, prefix, iface, hostname, timeoutMs, graceMs })
// -> Promise<{ code, message, ranks, handle? }>
Napi::Value comm_create(const Napi::CallbackInfo& info) {
  return ninodes::guarded(info, [](const Napi::CallbackInfo& info) -> Napi::Value {
    if (info.Length() < 1 || !info[0].IsObject()) ninodes::fail("INVALID_ARGUMENT", "commCreate: expects an options object");
    Napi::Object o = info[0].As<Napi::Object>();
    CommOptions opts;
    opts.size = static_cast<int>(int_field(o, "size", 1, 1 << 16));
    opts.rank = static_cast<int>(int_field(o, "rank", 0, opts.size - 1));
    opts.store.kind = string_field(o, "storeKind");
    if (opts.store.kind != "file" && opts.store.kind != "redis") ninodes::fail("INVALID_ARGUMENT", "commCreate: storeKind must be 'file' or 'redis'");
    opts.store.path = string_field(o, "storePath");
    opts.store.host = string_field(o, "storeHost");
    if (opts.store.kind == "redis") opts.store.port = static_cast<int>(int_field(o, "storePort", 1, 65535));
    opts.store.prefix = string_field(o, "prefix");
    opts.iface = string_field(o, "iface");
    opts.hostname = string_field(o, "hostname");
    opts.timeout = std::chrono::milliseconds(int_field(o, "timeoutMs", 1, 86400000));
    opts.grace = std::chrono::milliseconds(int_field(o, "graceMs", 0, 86400000));
    auto comm = std::make_shared<Communicator>(opts);
    auto status = std::make_shared<CommStatus>();
    return ninodes::AsyncOp::start(
        info.Env(), "ninodes.commCreate", [comm, status] { *status = comm->connect(); },
        [comm, status](Napi::Env env) -> Napi::Value {
          Napi::Object out = status_object(env, *status);
          if (status->ok()) {
            // The finalizer only drops this reference: a collective still running on a worker holds
            // its own, and the last one to go closes the sockets (~Communicator), so the JS thread
            // never waits on a collective here.
            out.Set("handle", Napi::External<Handle>::New(env, new Handle(comm), [](Napi::Env, Handle* h) { delete h; }));
          } else {
            comm->close();
          }
          return out;
        },
        {});
  });
}

Napi::Value comm_allreduce(const Napi::CallbackInfo& info) {
  return ninodes::guarded(info, [](const Napi::CallbackInfo& info) -> Napi::Value {
    Handle comm = handle_arg(info, "commAllreduce");
    const auto buf = ninodes::args::bytes(info, 1, "commAllreduce data");
    const DType dtype = dtype_arg(info, 2, "commAllreduce");
    const std::string op = ninodes::args::string(info, 3, "commAllreduce op");
    if (op != "sum" && op != "max") ninodes::fail("INVALID_ARGUMENT", "commAllreduce: op must be 'sum' or 'max', got '" + op + "'");
    const ReduceOp rop = op == "sum" ? ReduceOp::kSum : ReduceOp::kMax;
    const size_t n = elements(buf, "commAllreduce");
    return status_object(info.Env(), comm->allreduce(buf.data, n, dtype, rop));
  });
}

Napi::Value comm_broadcast(const Napi::CallbackInfo& info) {
  return ninodes::guarded(info, [](const Napi::CallbackInfo& info) -> Napi::Value {
    Handle comm = handle_arg(info, "commBroadcast");
    const auto buf = ninodes::args::bytes(info, 1, "commBroadcast data");
    const DType dtype = dtype_arg(info, 2, "commBroadcast");
    const size_t root = ninodes::args::dim(info, 3, "commBroadcast root");
    if (root >= static_cast<size_t>(comm->size())) {
      ninodes::fail("INVALID_ARGUMENT", "commBroadcast: root " + std::to_string(root) + " is not a rank of a world of " + std::to_string(comm->size()));
    }
    const size_t n = elements(buf, "commBroadcast");
    void* data = buf.data;
    const int r = static_cast<int>(root);
    return status_object(info.Env(), comm->broadcast(data, n, dtype, r));
  });
}

Napi::Value comm_allgather(const Napi::CallbackInfo& info) {
  return ninodes::guarded(info, [](const Napi::CallbackInfo& info) -> Napi::Value {
    Handle comm = handle_arg(info, "commAllgather");
    const auto in = ninodes::args::bytes(info, 1, "commAllgather input");
    const auto out = ninodes::args::bytes(info, 2, "commAllgather output");
    const DType dtype = dtype_arg(info, 3, "commAllgather");
    const size_t n = elements(in, "commAllgather");
    if (elements(out, "commAllgather") != n * static_cast<size_t>(comm->size())) {
      ninodes::fail("INVALID_ARGUMENT", "commAllgather: output must hold size x input elements (" + std::to_string(n * comm->size()) + ")");
    }
    return status_object(info.Env(), comm->allgather(in.data, out.data, n, dtype));
  });
}

Napi::Value comm_reduce_scatter(const Napi::CallbackInfo& info) {
  return ninodes::guarded(info, [](const Napi::CallbackInfo& info) -> Napi::Value {
    Handle comm = handle_arg(info, "commReduceScatter");
    const auto buf = ninodes::args::bytes(info, 1, "commReduceScatter data");
    const DType dtype = dtype_arg(info, 2, "commReduceScatter");
    const auto counts = counts_arg(info, 3, comm->size(), elements(buf, "commReduceScatter"), "commReduceScatter");
    return status_object(info.Env(), comm->reduce_scatter(buf.data, counts, dtype));
  });
}

Napi::Value comm_allgather_into(const Napi::CallbackInfo& info) {
  return ninodes::guarded(info, [](const Napi::CallbackInfo& info) -> Napi::Value {
    Handle comm = handle_arg(info, "commAllgatherInto");
    const auto buf = ninodes::args::bytes(info, 1, "commAllgatherInto data");
    const DType dtype = gather_dtype_arg(info, 2, "commAllgatherInto");
    const size_t n = dtype == DType::kI8 ? buf.size : elements(buf, "commAllgatherInto");
    const auto counts = counts_arg(info, 3, comm->size(), n, "commAllgatherInto");
    return status_object(info.Env(), comm->allgather_into(buf.data, counts, dtype));
  });
}

// commAllToAll(handle, send, recv, dtype, counts): send holds counts[p] elements for each rank p in
// turn; recv holds size x counts[rank] elements. Both of one dtype; the TS wrapper rejects overlap.
Napi::Value comm_all_to_all(const Napi::CallbackInfo& info) {
  return ninodes::guarded(info, [](const Napi::CallbackInfo& info) -> Napi::Value {
    Handle comm = handle_arg(info, "commAllToAll");
    const auto send = ninodes::args::bytes(info, 1, "commAllToAll send");
    const auto recv = ninodes::args::bytes(info, 2, "commAllToAll recv");
    const DType dtype = gather_dtype_arg(info, 3, "commAllToAll");
    const auto length = [&](const ninodes::args::Bytes& b) { return dtype == DType::kI8 ? b.size : elements(b, "commAllToAll"); };
    const auto counts = counts_arg(info, 4, comm->size(), length(send), "commAllToAll");
    const size_t want = counts[comm->rank()] * static_cast<size_t>(comm->size());
    if (length(recv) != want) ninodes::fail("SHAPE_MISMATCH", "commAllToAll: recv holds " + std::to_string(length(recv)) + " elements, size x counts[rank] is " + std::to_string(want));
    return status_object(info.Env(), comm->all_to_all(send.data, recv.data, counts, dtype));
  });
}

Napi::Value comm_barrier(const Napi::CallbackInfo& info) {
  return ninodes::guarded(info, [](const Napi::CallbackInfo& info) -> Napi::Value {
    Handle comm = handle_arg(info, "commBarrier");
    return status_object(info.Env(), comm->barrier());
  });
}

Napi::Value comm_close(const Napi::CallbackInfo& info) {
  return ninodes::guarded(info, [](const Napi::CallbackInfo& info) -> Napi::Value {
    handle_arg(info, "commClose")->close();
    return info.Env().Undefined();
  });
}

}  // namespace

NINODES_MODULE(comm) {
  exports.Set("commCreate", Napi::Function::New(env, comm_create, "commCreate"));
  exports.Set("commAllreduce", Napi::Function::New(env, comm_allreduce, "commAllreduce"));
  exports.Set("commBroadcast", Napi::Function::New(env, comm_broadcast, "commBroadcast"));
  exports.Set("commAllgather", Napi::Function::New(env, comm_allgather, "commAllgather"));
  exports.Set("commReduceScatter", Napi::Function::New(env, comm_reduce_scatter, "commReduceScatter"));
  exports.Set("commAllgatherInto", Napi::Function::New(env, comm_allgather_into, "commAllgatherInto"));
  exports.Set("commAllToAll", Napi::Function::New(env, comm_all_to_all, "commAllToAll"));
  exports.Set("commBarrier", Napi::Function::New(env, comm_barrier, "commBarrier"));
  exports.Set("commClose", Napi::Function::New(env, comm_close, "commClose"));
}
