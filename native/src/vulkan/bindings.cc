// The JS surface of the Vulkan device: buffers by id (freed explicitly or when their JS owner is
// collected), explicit uploads and downloads, and submissions of checked dispatches. Transfers and
// submissions run off the JS thread (AsyncOp) and hold the buffers they touch, so a buffer freed
// from JS during an op lives until the op is done.
#include <napi.h>

#include <atomic>
#include <map>
#include <memory>
#include <mutex>

#include "core/async.h"
#include "core/errors.h"
#include "core/registry.h"
#include "ops/span_args.h"
#include "vulkan/device.h"
#include "vulkan/instance.h"
#include "vulkan/ops.h"

namespace {

using ninodes::fail;
using ninodes::vk::Buffer;
using ninodes::vk::Device;

std::mutex g_mutex;
std::map<uint32_t, std::shared_ptr<Buffer>> g_buffers;
uint32_t g_next_id = 1;

std::shared_ptr<Buffer> buffer_of(const Napi::Value& v, const char* what) {
  if (!v.IsNumber()) fail("INVALID_ARGUMENT", std::string(what) + ": expected a Vulkan buffer id");
  const double id = v.As<Napi::Number>().DoubleValue();
  std::lock_guard<std::mutex> lock(g_mutex);
  auto it = id >= 1 && id < 4294967296.0 ? g_buffers.find(static_cast<uint32_t>(id)) : g_buffers.end();
  if (it == g_buffers.end()) fail("VULKAN_BUFFER_FREED", std::string(what) + ": Vulkan buffer " + std::to_string(id) + " does not exist (freed, or never created)");
  return it->second;
}

int device_index(const Napi::CallbackInfo& info, size_t i) {
  const size_t index = ninodes::args::dim(info, i, "Vulkan device index");
  if (index > 1023) fail("VULKAN_DEVICE_NOT_FOUND", "no Vulkan device vk:" + std::to_string(index));
  return static_cast<int>(index);
}

Napi::Value vk_open(const Napi::CallbackInfo& info) {
  return ninodes::guarded(info, [](const Napi::CallbackInfo& info) -> Napi::Value {
    Device& d = Device::open(device_index(info, 0));
    Napi::Object out = Napi::Object::New(info.Env());
    out.Set("maxBindingBytes", Napi::Number::New(info.Env(), static_cast<double>(d.max_binding_bytes())));
    out.Set("float64", Napi::Boolean::New(info.Env(), d.float64()));
    return out;
  });
}

Napi::Value vk_buffer_create(const Napi::CallbackInfo& info) {
  return ninodes::guarded(info, [](const Napi::CallbackInfo& info) -> Napi::Value {
    Device& d = Device::open(device_index(info, 0));
    const size_t bytes = ninodes::args::dim(info, 1, "Vulkan buffer bytes");
    std::shared_ptr<Buffer> b = d.create_buffer(bytes);
    std::lock_guard<std::mutex> lock(g_mutex);
    const uint32_t id = g_next_id++;
    g_buffers.emplace(id, std::move(b));
    return Napi::Number::New(info.Env(), id);
  });
}

Napi::Value vk_buffer_free(const Napi::CallbackInfo& info) {
  return ninodes::guarded(
      info,
      [](const Napi::CallbackInfo& info) -> Napi::Value {
        if (!info[0].IsNumber()) fail("INVALID_ARGUMENT", "vkBufferFree: expected a Vulkan buffer id");
        const double id = info[0].As<Napi::Number>().DoubleValue();
        std::shared_ptr<Buffer> dropped;
        {
          std::lock_guard<std::mutex> lock(g_mutex);
          auto it = id >= 1 && id < 4294967296.0 ? g_buffers.find(static_cast<uint32_t>(id)) : g_buffers.end();
          if (it == g_buffers.end()) return Napi::Boolean::New(info.Env(), false);
          dropped = std::move(it->second);
          g_buffers.erase(it);
        }
        return Napi::Boolean::New(info.Env(), true);
      },
      false);
}

Napi::Value vk_stats(const Napi::CallbackInfo& info) {
  return ninodes::guarded(info, [](const Napi::CallbackInfo& info) -> Napi::Value {
    Device& d = Device::open(device_index(info, 0));
    double count = 0, bytes = 0;
    {
      std::lock_guard<std::mutex> lock(g_mutex);
      for (const auto& [id, b] : g_buffers) {
        if (b->device == &d) {
          count += 1;
          bytes += static_cast<double>(b->bytes);
        }
      }
    }
    Napi::Object out = Napi::Object::New(info.Env());
    out.Set("buffers", Napi::Number::New(info.Env(), count));
    out.Set("bufferBytes", Napi::Number::New(info.Env(), bytes));
    out.Set("pipelines", Napi::Number::New(info.Env(), static_cast<double>(d.pipeline_count())));
    out.Set("pipelineCacheBytes", Napi::Number::New(info.Env(), static_cast<double>(d.pipeline_cache_bytes())));
    return out;
  });
}

// vkUpload(id, byteOffset, view) / vkDownload(id, byteOffset, view): the view's bytes go to (come
// from) the buffer at byteOffset.
Napi::Value transfer(const Napi::CallbackInfo& info, bool up) {
  const char* op = up ? "vkUpload" : "vkDownload";
  std::shared_ptr<Buffer> b = buffer_of(info[0], op);
  const size_t offset = ninodes::args::dim(info, 1, "Vulkan transfer byte offset");
  const ninodes::args::Bytes view = ninodes::args::bytes(info, 2, op);
  if (offset > b->bytes || view.size > b->bytes - offset) {
    fail("INDEX_OUT_OF_RANGE", std::string(op) + ": " + std::to_string(view.size) + " bytes at offset " + std::to_string(offset) + " do not fit the buffer's " +
                                   std::to_string(b->bytes));
  }
  uint8_t* data = view.data;
  const size_t n = view.size;
  return ninodes::AsyncOp::start(
      info.Env(), op,
      [b, offset, data, n, up] {
        if (n == 0) return;
        if (up) {
          b->device->upload(*b, offset, data, n);
        } else {
          b->device->download(*b, offset, data, n);
        }
      },
      [](Napi::Env env) { return env.Undefined(); }, {info[2]});
}

Napi::Value vk_upload(const Napi::CallbackInfo& info) {
  return ninodes::guarded(info, [](const Napi::CallbackInfo& info) { return transfer(info, true); });
}

Napi::Value vk_download(const Napi::CallbackInfo& info) {
  return ninodes::guarded(info, [](const Napi::CallbackInfo& info) { return transfer(info, false); });
}

// vkRun(device, [{ op, buffers: id[], push: Uint32Array }]): one submission, dispatches in order.
Napi::Value vk_run(const Napi::CallbackInfo& info) {
  return ninodes::guarded(info, [](const Napi::CallbackInfo& info) -> Napi::Value {
    Device& d = Device::open(device_index(info, 0));
    if (!info[1].IsArray()) fail("INVALID_ARGUMENT", "vkRun: expected an array of dispatches");
    Napi::Array list = info[1].As<Napi::Array>();
    auto dispatches = std::make_shared<std::vector<ninodes::vk::Dispatch>>();
    for (uint32_t i = 0; i < list.Length(); ++i) {
      const std::string where = "vkRun dispatch " + std::to_string(i);
      Napi::Value item = list.Get(i);
      if (!item.IsObject()) fail("INVALID_ARGUMENT", where + ": expected { op, buffers, push }");
      Napi::Object o = item.As<Napi::Object>();
      ninodes::vk::Dispatch dispatch;
      if (!o.Get("op").IsString()) fail("INVALID_ARGUMENT", where + ": op must be a string");
      dispatch.shader = o.Get("op").As<Napi::String>().Utf8Value();
      Napi::Value push = o.Get("push");
      if (!push.IsTypedArray() || push.As<Napi::TypedArray>().TypedArrayType() != napi_uint32_array) fail("INVALID_ARGUMENT", where + ": push must be a Uint32Array");
      Napi::Uint32Array words = push.As<Napi::Uint32Array>();
      dispatch.push.assign(words.Data(), words.Data() + words.ElementLength());
      Napi::Value ids = o.Get("buffers");
      if (!ids.IsArray()) fail("INVALID_ARGUMENT", where + ": buffers must be an array of buffer ids");
      Napi::Array arr = ids.As<Napi::Array>();
      for (uint32_t j = 0; j < arr.Length(); ++j) dispatch.buffers.push_back(buffer_of(arr.Get(j), (where + " buffer " + std::to_string(j)).c_str()));
      const ninodes::vk::OpCheck plan = ninodes::vk::check_op(d, dispatch.shader, dispatch.push, dispatch.buffers.size());
      for (size_t j = 0; j < dispatch.buffers.size(); ++j) {
        const Buffer& b = *dispatch.buffers[j];
        if (b.device != &d) fail("INVALID_ARGUMENT", where + " (" + dispatch.shader + "): buffer " + std::to_string(j) + " lives on another Vulkan device");
        if (b.bytes < plan.bytes[j]) {
          fail("SHAPE_MISMATCH", where + " (" + dispatch.shader + "): buffer " + std::to_string(j) + " holds " + std::to_string(b.bytes) + " bytes, the op reads or writes " +
                                     std::to_string(plan.bytes[j]));
        }
        if (b.bytes > d.max_binding_bytes()) {
          fail("BACKEND_UNAVAILABLE", where + " (" + dispatch.shader + "): buffer " + std::to_string(j) + " of " + std::to_string(b.bytes) + " bytes exceeds the device's " +
                                          std::to_string(d.max_binding_bytes()) + "-byte storage binding limit");
        }
      }
      dispatch.groups = plan.groups;
      dispatches->push_back(std::move(dispatch));
    }
    return ninodes::AsyncOp::start(
        info.Env(), "vkRun", [&d, dispatches] { d.run(*dispatches); }, [](Napi::Env env) { return env.Undefined(); }, {});
  });
}

}  // namespace

NINODES_MODULE(vulkan_device) {
  exports.Set("vkOpen", Napi::Function::New(env, vk_open, "vkOpen"));
  exports.Set("vkBufferCreate", Napi::Function::New(env, vk_buffer_create, "vkBufferCreate"));
  exports.Set("vkBufferFree", Napi::Function::New(env, vk_buffer_free, "vkBufferFree"));
  exports.Set("vkUpload", Napi::Function::New(env, vk_upload, "vkUpload"));
  exports.Set("vkDownload", Napi::Function::New(env, vk_download, "vkDownload"));
  exports.Set("vkRun", Napi::Function::New(env, vk_run, "vkRun"));
  exports.Set("vkStats", Napi::Function::New(env, vk_stats, "vkStats"));
}
