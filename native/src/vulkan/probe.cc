// vkProbe: every Vulkan physical device with what placement needs (heaps, free memory through
// VK_EXT_memory_budget where the driver has it, unified or discrete, PCI address to match the
// NVML / sysfs probes) and what the shaders need (subgroup size, storage limits, int8 / fp16).
// Creating no logical device, it is cheap and safe to call from `ninodes devices`.
#include <napi.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "core/errors.h"
#include "core/registry.h"
#include "vulkan/instance.h"

namespace {

bool has_extension(VkPhysicalDevice pd, const char* name) {
  uint32_t n = 0;
  vkEnumerateDeviceExtensionProperties(pd, nullptr, &n, nullptr);
  std::vector<VkExtensionProperties> exts(n);
  vkEnumerateDeviceExtensionProperties(pd, nullptr, &n, exts.data());
  for (const VkExtensionProperties& e : exts) {
    if (std::strcmp(e.extensionName, name) == 0) return true;
  }
  return false;
}

const char* type_name(VkPhysicalDeviceType t) {
  switch (t) {
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return "integrated";
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return "discrete";
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return "virtual";
    case VK_PHYSICAL_DEVICE_TYPE_CPU: return "cpu";
    default: return "other";
  }
}

std::string version_text(uint32_t v) {
  return std::to_string(VK_API_VERSION_MAJOR(v)) + "." + std::to_string(VK_API_VERSION_MINOR(v)) + "." + std::to_string(VK_API_VERSION_PATCH(v));
}

Napi::Object describe(Napi::Env env, int index, VkPhysicalDevice pd) {
  const bool pci_ext = has_extension(pd, VK_EXT_PCI_BUS_INFO_EXTENSION_NAME);
  const bool budget_ext = has_extension(pd, VK_EXT_MEMORY_BUDGET_EXTENSION_NAME);

  VkPhysicalDeviceDriverProperties driver{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES};
  VkPhysicalDevicePCIBusInfoPropertiesEXT pci{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PCI_BUS_INFO_PROPERTIES_EXT};
  VkPhysicalDeviceSubgroupProperties subgroup{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES};
  VkPhysicalDeviceProperties2 props{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
  props.pNext = &driver;
  driver.pNext = &subgroup;
  if (pci_ext) subgroup.pNext = &pci;
  vkGetPhysicalDeviceProperties2(pd, &props);
  const VkPhysicalDeviceProperties& p = props.properties;

  VkPhysicalDeviceVulkan12Features f12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
  VkPhysicalDeviceVulkan11Features f11{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES};
  f12.pNext = &f11;
  VkPhysicalDeviceFeatures2 feats{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
  feats.pNext = &f12;
  vkGetPhysicalDeviceFeatures2(pd, &feats);

  VkPhysicalDeviceMemoryBudgetPropertiesEXT budget{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_BUDGET_PROPERTIES_EXT};
  VkPhysicalDeviceMemoryProperties2 mem{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_PROPERTIES_2};
  if (budget_ext) mem.pNext = &budget;
  vkGetPhysicalDeviceMemoryProperties2(pd, &mem);
  const VkPhysicalDeviceMemoryProperties& m = mem.memoryProperties;

  Napi::Object d = Napi::Object::New(env);
  d.Set("index", Napi::Number::New(env, index));
  d.Set("name", Napi::String::New(env, p.deviceName));
  d.Set("type", Napi::String::New(env, type_name(p.deviceType)));
  d.Set("vendorId", Napi::Number::New(env, p.vendorID));
  d.Set("deviceId", Napi::Number::New(env, p.deviceID));
  d.Set("apiVersion", Napi::String::New(env, version_text(p.apiVersion)));
  d.Set("driverName", Napi::String::New(env, driver.driverName));
  d.Set("driverInfo", Napi::String::New(env, driver.driverInfo));
  d.Set("driverId", Napi::Number::New(env, static_cast<double>(driver.driverID)));
  if (pci_ext) {
    char bus[32];
    std::snprintf(bus, sizeof(bus), "%04x:%02x:%02x.%x", pci.pciDomain, pci.pciBus, pci.pciDevice, pci.pciFunction);
    d.Set("pciBusId", Napi::String::New(env, bus));
  }
  Napi::Array heaps = Napi::Array::New(env);
  // A heap is "device local + host visible" when some memory type on it is both: integrated GPUs
  // and lavapipe, where a worker may write weights straight into device memory.
  bool unified = p.deviceType == VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU || p.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU;
  for (uint32_t h = 0; h < m.memoryHeapCount; ++h) {
    Napi::Object heap = Napi::Object::New(env);
    const bool local = (m.memoryHeaps[h].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT) != 0;
    bool host_visible = false;
    for (uint32_t t = 0; t < m.memoryTypeCount; ++t) {
      if (m.memoryTypes[t].heapIndex == h && (m.memoryTypes[t].propertyFlags & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT) != 0) host_visible = true;
    }
    heap.Set("sizeBytes", Napi::Number::New(env, static_cast<double>(m.memoryHeaps[h].size)));
    heap.Set("deviceLocal", Napi::Boolean::New(env, local));
    heap.Set("hostVisible", Napi::Boolean::New(env, host_visible));
    if (budget_ext) {
      heap.Set("budgetBytes", Napi::Number::New(env, static_cast<double>(budget.heapBudget[h])));
      heap.Set("usageBytes", Napi::Number::New(env, static_cast<double>(budget.heapUsage[h])));
    }
    heaps.Set(h, heap);
  }
  d.Set("heaps", heaps);
  d.Set("unifiedMemory", Napi::Boolean::New(env, unified));
  d.Set("memoryBudget", Napi::Boolean::New(env, budget_ext));
  d.Set("subgroupSize", Napi::Number::New(env, subgroup.subgroupSize));
  d.Set("maxStorageBufferRange", Napi::Number::New(env, static_cast<double>(p.limits.maxStorageBufferRange)));
  d.Set("maxComputeSharedMemorySize", Napi::Number::New(env, p.limits.maxComputeSharedMemorySize));
  d.Set("maxComputeWorkGroupInvocations", Napi::Number::New(env, p.limits.maxComputeWorkGroupInvocations));
  d.Set("shaderInt8", Napi::Boolean::New(env, f12.shaderInt8 == VK_TRUE && f12.storageBuffer8BitAccess == VK_TRUE));
  d.Set("shaderFloat16", Napi::Boolean::New(env, f12.shaderFloat16 == VK_TRUE && f11.storageBuffer16BitAccess == VK_TRUE));
  d.Set("integerDotProduct", Napi::Boolean::New(env, has_extension(pd, VK_KHR_SHADER_INTEGER_DOT_PRODUCT_EXTENSION_NAME)));
  d.Set("cooperativeMatrix", Napi::Boolean::New(env, has_extension(pd, "VK_KHR_cooperative_matrix")));
  return d;
}

Napi::Value vk_probe(const Napi::CallbackInfo& info) {
  return ninodes::guarded(info, [](const Napi::CallbackInfo& info) -> Napi::Value {
    Napi::Env env = info.Env();
    const ninodes::vk::Instance& inst = ninodes::vk::instance();
    Napi::Object out = Napi::Object::New(env);
    if (inst.handle == VK_NULL_HANDLE) {
      out.Set("available", Napi::Boolean::New(env, false));
      out.Set("reason", Napi::String::New(env, inst.reason));
      return out;
    }
    out.Set("available", Napi::Boolean::New(env, true));
    out.Set("loaderVersion", Napi::String::New(env, version_text(inst.loader_version)));
    out.Set("validation", Napi::Boolean::New(env, inst.validation));
    Napi::Array devices = Napi::Array::New(env);
    for (size_t i = 0; i < inst.physical.size(); ++i) devices.Set(static_cast<uint32_t>(i), describe(env, static_cast<int>(i), inst.physical[i]));
    out.Set("devices", devices);
    return out;
  });
}

Napi::Value vk_validation(const Napi::CallbackInfo& info) {
  return ninodes::guarded(info, [](const Napi::CallbackInfo& info) -> Napi::Value {
    Napi::Env env = info.Env();
    const ninodes::vk::ValidationReport r = ninodes::vk::validation_report();
    Napi::Object out = Napi::Object::New(env);
    out.Set("enabled", Napi::Boolean::New(env, r.enabled));
    out.Set("count", Napi::Number::New(env, static_cast<double>(r.count)));
    Napi::Array first = Napi::Array::New(env);
    for (size_t i = 0; i < r.first.size(); ++i) first.Set(static_cast<uint32_t>(i), Napi::String::New(env, r.first[i]));
    out.Set("messages", first);
    return out;
  });
}

}  // namespace

NINODES_MODULE(vulkan_probe) {
  exports.Set("vkProbe", Napi::Function::New(env, vk_probe, "vkProbe"));
  exports.Set("vkValidation", Napi::Function::New(env, vk_validation, "vkValidation"));
}
