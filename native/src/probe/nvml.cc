// NVIDIA devices through NVML, loaded with dlopen at run time: the build needs no CUDA toolkit and
// a machine without the driver just reports "not available" (a normal answer, not an error).
// Only the few entry points we call are declared here; their ABI is stable since NVML 8 (the _v2
// and _v3 names are the versioned symbols the headers map to).
#include <mutex>
#include <string>

#include "core/errors.h"
#include "probe/dynamic_library.h"
#include "core/registry.h"

namespace {

using nvmlReturn_t = int;
using nvmlDevice_t = void*;
struct NvmlMemory {
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};
struct NvmlPciInfoV3 {
  char busIdLegacy[16];
  unsigned int domain;
  unsigned int bus;
  unsigned int device;
  unsigned int pciDeviceId;
  unsigned int pciSubSystemId;
  char busId[32];
};

struct Nvml {
  void* lib = nullptr;
  bool ready = false;
  std::string reason;
  std::string library;
  nvmlReturn_t (*init)() = nullptr;
  const char* (*errorString)(nvmlReturn_t) = nullptr;
  nvmlReturn_t (*driverVersion)(char*, unsigned int) = nullptr;
  nvmlReturn_t (*count)(unsigned int*) = nullptr;
  nvmlReturn_t (*handle)(unsigned int, nvmlDevice_t*) = nullptr;
  nvmlReturn_t (*name)(nvmlDevice_t, char*, unsigned int) = nullptr;
  nvmlReturn_t (*uuid)(nvmlDevice_t, char*, unsigned int) = nullptr;
  nvmlReturn_t (*memory)(nvmlDevice_t, NvmlMemory*) = nullptr;
  nvmlReturn_t (*pcieGen)(nvmlDevice_t, unsigned int*) = nullptr;
  nvmlReturn_t (*pcieWidth)(nvmlDevice_t, unsigned int*) = nullptr;
  nvmlReturn_t (*maxPcieGen)(nvmlDevice_t, unsigned int*) = nullptr;
  nvmlReturn_t (*maxPcieWidth)(nvmlDevice_t, unsigned int*) = nullptr;
  nvmlReturn_t (*computeCapability)(nvmlDevice_t, int*, int*) = nullptr;
  nvmlReturn_t (*pciInfo)(nvmlDevice_t, NvmlPciInfoV3*) = nullptr;
};

// NVML is initialized once per process and never shut down: init is slow on some drivers and the
// sampler queries memory every half second.
Nvml& nvml() {
  static Nvml state;
  static std::once_flag once;
  std::call_once(once, [] {
    const ninodes::DynamicLibrary loaded = ninodes::open_first_library({"libnvidia-ml.so.1", "libnvidia-ml.so"});
    if (loaded.handle == nullptr) {
      state.reason = std::string("libnvidia-ml.so.1 not loadable: ") + loaded.error;
      return;
    }
    state.lib = loaded.handle;
    state.library = loaded.name;
    ninodes::bind_symbol(state.lib, "nvmlInit_v2", state.init);
    ninodes::bind_symbol(state.lib, "nvmlErrorString", state.errorString);
    ninodes::bind_symbol(state.lib, "nvmlSystemGetDriverVersion", state.driverVersion);
    ninodes::bind_symbol(state.lib, "nvmlDeviceGetCount_v2", state.count);
    ninodes::bind_symbol(state.lib, "nvmlDeviceGetHandleByIndex_v2", state.handle);
    ninodes::bind_symbol(state.lib, "nvmlDeviceGetName", state.name);
    ninodes::bind_symbol(state.lib, "nvmlDeviceGetUUID", state.uuid);
    ninodes::bind_symbol(state.lib, "nvmlDeviceGetMemoryInfo", state.memory);
    ninodes::bind_symbol(state.lib, "nvmlDeviceGetCurrPcieLinkGeneration", state.pcieGen);
    ninodes::bind_symbol(state.lib, "nvmlDeviceGetCurrPcieLinkWidth", state.pcieWidth);
    ninodes::bind_symbol(state.lib, "nvmlDeviceGetMaxPcieLinkGeneration", state.maxPcieGen);
    ninodes::bind_symbol(state.lib, "nvmlDeviceGetMaxPcieLinkWidth", state.maxPcieWidth);
    ninodes::bind_symbol(state.lib, "nvmlDeviceGetCudaComputeCapability", state.computeCapability);
    ninodes::bind_symbol(state.lib, "nvmlDeviceGetPciInfo_v3", state.pciInfo);
    if (state.init == nullptr || state.count == nullptr || state.handle == nullptr) {
      state.reason = state.library + " lacks nvmlInit_v2/nvmlDeviceGetCount_v2/nvmlDeviceGetHandleByIndex_v2";
      return;
    }
    const nvmlReturn_t rc = state.init();
    if (rc != 0) {
      const char* text = state.errorString != nullptr ? state.errorString(rc) : nullptr;
      state.reason = "nvmlInit_v2 failed with " + std::to_string(rc) + (text != nullptr ? std::string(" (") + text + ")" : "");
      return;
    }
    state.ready = true;
  });
  return state;
}

std::string error_text(const Nvml& n, nvmlReturn_t rc) {
  const char* text = n.errorString != nullptr ? n.errorString(rc) : nullptr;
  return text != nullptr ? std::string(text) : "NVML error " + std::to_string(rc);
}

// Sets key to the unsigned value when the query succeeds; a failed optional query leaves it out,
// and the caller reports it as unknown.
void set_uint(Napi::Env env, Napi::Object obj, const char* key, nvmlReturn_t (*fn)(nvmlDevice_t, unsigned int*),
              nvmlDevice_t dev) {
  unsigned int value = 0;
  if (fn != nullptr && fn(dev, &value) == 0) obj.Set(key, Napi::Number::New(env, value));
}

Napi::Value nvml_probe(const Napi::CallbackInfo& info) {
  return ninodes::guarded(info, [](const Napi::CallbackInfo& info) -> Napi::Value {
    Napi::Env env = info.Env();
    Nvml& n = nvml();
    Napi::Object out = Napi::Object::New(env);
    out.Set("available", Napi::Boolean::New(env, n.ready));
    if (!n.library.empty()) out.Set("library", Napi::String::New(env, n.library));
    if (!n.ready) {
      out.Set("reason", Napi::String::New(env, n.reason));
      return out;
    }
    char text[256] = {0};
    if (n.driverVersion != nullptr && n.driverVersion(text, sizeof(text)) == 0) {
      out.Set("driverVersion", Napi::String::New(env, text));
    }
    unsigned int count = 0;
    nvmlReturn_t rc = n.count(&count);
    Napi::Array devices = Napi::Array::New(env);
    Napi::Array errors = Napi::Array::New(env);
    if (rc != 0) {
      errors.Set(errors.Length(), Napi::String::New(env, "nvmlDeviceGetCount_v2: " + error_text(n, rc)));
      count = 0;
    }
    for (unsigned int i = 0; i < count; ++i) {
      nvmlDevice_t dev = nullptr;
      rc = n.handle(i, &dev);
      if (rc != 0) {
        errors.Set(errors.Length(), Napi::String::New(env, "device " + std::to_string(i) + ": " + error_text(n, rc)));
        continue;
      }
      Napi::Object d = Napi::Object::New(env);
      d.Set("index", Napi::Number::New(env, i));
      if (n.name != nullptr && n.name(dev, text, sizeof(text)) == 0) d.Set("name", Napi::String::New(env, text));
      if (n.uuid != nullptr && n.uuid(dev, text, sizeof(text)) == 0) d.Set("uuid", Napi::String::New(env, text));
      NvmlMemory mem{};
      if (n.memory != nullptr && n.memory(dev, &mem) == 0) {
        // Byte counts stay exact as doubles up to 2^53 (8 PiB).
        d.Set("totalBytes", Napi::Number::New(env, static_cast<double>(mem.total)));
        d.Set("freeBytes", Napi::Number::New(env, static_cast<double>(mem.free)));
        d.Set("usedBytes", Napi::Number::New(env, static_cast<double>(mem.used)));
      }
      set_uint(env, d, "pcieGen", n.pcieGen, dev);
      set_uint(env, d, "pcieWidth", n.pcieWidth, dev);
      set_uint(env, d, "pcieMaxGen", n.maxPcieGen, dev);
      set_uint(env, d, "pcieMaxWidth", n.maxPcieWidth, dev);
      int major = 0, minor = 0;
      if (n.computeCapability != nullptr && n.computeCapability(dev, &major, &minor) == 0) {
        d.Set("ccMajor", Napi::Number::New(env, major));
        d.Set("ccMinor", Napi::Number::New(env, minor));
      }
      NvmlPciInfoV3 pci{};
      if (n.pciInfo != nullptr && n.pciInfo(dev, &pci) == 0) {
        pci.busId[sizeof(pci.busId) - 1] = '\0';
        d.Set("pciBusId", Napi::String::New(env, pci.busId));
      }
      devices.Set(devices.Length(), d);
    }
    out.Set("devices", devices);
    out.Set("errors", errors);
    return out;
  });
}

}  // namespace

NINODES_MODULE(probe_nvml) { exports.Set("nvmlProbe", Napi::Function::New(env, nvml_probe, "nvmlProbe")); }
