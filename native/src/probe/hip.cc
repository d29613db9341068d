// The HIP runtime, loaded with dlopen when present. sysfs already tells us what AMD GPUs exist and
// how much memory they have; HIP answers the other question: can this process compute on them.
// Only calls that need no device context are used (no hipSetDevice, no allocation).
#include <cstddef>
#include <mutex>
#include <string>

#include "core/errors.h"
#include "probe/dynamic_library.h"
#include "core/registry.h"

namespace {

using hipError_t = int;

struct Hip {
  void* lib = nullptr;
  std::string reason;
  std::string library;
  hipError_t (*count)(int*) = nullptr;
  hipError_t (*name)(char*, int, int) = nullptr;
  hipError_t (*totalMem)(size_t*, int) = nullptr;
  hipError_t (*busId)(char*, int, int) = nullptr;
  hipError_t (*runtimeVersion)(int*) = nullptr;
  const char* (*errorString)(hipError_t) = nullptr;
};

Hip& hip() {
  static Hip state;
  static std::once_flag once;
  std::call_once(once, [] {
    const ninodes::DynamicLibrary loaded = ninodes::open_first_library({"libamdhip64.so", "libamdhip64.so.7", "libamdhip64.so.6", "libamdhip64.so.5"});
    if (loaded.handle == nullptr) {
      state.reason = std::string("libamdhip64.so not loadable: ") + loaded.error;
      return;
    }
    state.lib = loaded.handle;
    state.library = loaded.name;
    ninodes::bind_symbol(state.lib, "hipGetDeviceCount", state.count);
    ninodes::bind_symbol(state.lib, "hipDeviceGetName", state.name);
    ninodes::bind_symbol(state.lib, "hipDeviceTotalMem", state.totalMem);
    ninodes::bind_symbol(state.lib, "hipDeviceGetPCIBusId", state.busId);
    ninodes::bind_symbol(state.lib, "hipRuntimeGetVersion", state.runtimeVersion);
    ninodes::bind_symbol(state.lib, "hipGetErrorString", state.errorString);
    if (state.count == nullptr) state.reason = state.library + " lacks hipGetDeviceCount";
  });
  return state;
}

Napi::Value hip_probe(const Napi::CallbackInfo& info) {
  return ninodes::guarded(info, [](const Napi::CallbackInfo& info) -> Napi::Value {
    Napi::Env env = info.Env();
    Hip& h = hip();
    Napi::Object out = Napi::Object::New(env);
    const bool loaded = h.lib != nullptr && h.count != nullptr;
    if (!h.library.empty()) out.Set("library", Napi::String::New(env, h.library));
    if (!loaded) {
      out.Set("available", Napi::Boolean::New(env, false));
      out.Set("reason", Napi::String::New(env, h.reason));
      return out;
    }
    int version = 0;
    if (h.runtimeVersion != nullptr && h.runtimeVersion(&version) == 0) {
      out.Set("runtimeVersion", Napi::Number::New(env, version));
    }
    int count = 0;
    const hipError_t rc = h.count(&count);
    if (rc != 0) {
      // No usable GPU (e.g. no /dev/kfd access) is reported, not thrown: sysfs may still list cards.
      const char* text = h.errorString != nullptr ? h.errorString(rc) : nullptr;
      out.Set("available", Napi::Boolean::New(env, false));
      out.Set("reason", Napi::String::New(env, "hipGetDeviceCount failed with " + std::to_string(rc) +
                                                   (text != nullptr ? std::string(" (") + text + ")" : "")));
      return out;
    }
    out.Set("available", Napi::Boolean::New(env, true));
    Napi::Array devices = Napi::Array::New(env);
    char text[256] = {0};
    for (int i = 0; i < count; ++i) {
      Napi::Object d = Napi::Object::New(env);
      d.Set("index", Napi::Number::New(env, i));
      if (h.name != nullptr && h.name(text, sizeof(text), i) == 0) d.Set("name", Napi::String::New(env, text));
      size_t total = 0;
      if (h.totalMem != nullptr && h.totalMem(&total, i) == 0) {
        d.Set("totalBytes", Napi::Number::New(env, static_cast<double>(total)));
      }
      if (h.busId != nullptr && h.busId(text, sizeof(text), i) == 0) d.Set("pciBusId", Napi::String::New(env, text));
      devices.Set(devices.Length(), d);
    }
    out.Set("devices", devices);
    return out;
  });
}

}  // namespace

NINODES_MODULE(probe_hip) { exports.Set("hipProbe", Napi::Function::New(env, hip_probe, "hipProbe")); }
