#include "vulkan/instance.h"

#include <cstdlib>
#include <cstring>
#include <mutex>

#include "core/errors.h"

namespace ninodes::vk {
namespace {

std::mutex g_validation_mutex;
ValidationReport g_validation;
VkDebugUtilsMessengerEXT g_messenger = VK_NULL_HANDLE;

VKAPI_ATTR VkBool32 VKAPI_CALL on_validation_message(VkDebugUtilsMessageSeverityFlagBitsEXT severity, VkDebugUtilsMessageTypeFlagsEXT,
                                                     const VkDebugUtilsMessengerCallbackDataEXT* data, void*) {
  if (severity < VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT) return VK_FALSE;
  std::lock_guard<std::mutex> lock(g_validation_mutex);
  ++g_validation.count;
  if (g_validation.first.size() < 16 && data != nullptr && data->pMessage != nullptr) g_validation.first.emplace_back(data->pMessage);
  return VK_FALSE;
}

bool has_layer(const char* name) {
  uint32_t n = 0;
  if (vkEnumerateInstanceLayerProperties(&n, nullptr) != VK_SUCCESS) return false;
  std::vector<VkLayerProperties> layers(n);
  if (vkEnumerateInstanceLayerProperties(&n, layers.data()) != VK_SUCCESS) return false;
  for (const VkLayerProperties& l : layers) {
    if (std::strcmp(l.layerName, name) == 0) return true;
  }
  return false;
}

Instance create() {
  Instance out;
  const VkResult loaded = volkInitialize();
  if (loaded != VK_SUCCESS) {
    out.reason = "the Vulkan loader (libvulkan.so.1) is not loadable";
    return out;
  }
  out.loader_version = volkGetInstanceVersion();
  if (out.loader_version < VK_API_VERSION_1_2) {
    out.reason = "the Vulkan loader supports only Vulkan " + std::to_string(VK_API_VERSION_MAJOR(out.loader_version)) + "." +
                 std::to_string(VK_API_VERSION_MINOR(out.loader_version)) + "; ninodes needs 1.2";
    return out;
  }
  const char* env = std::getenv("NINODES_VK_VALIDATION");
  const bool want_validation = env != nullptr && std::strcmp(env, "1") == 0;
  const char* layer = "VK_LAYER_KHRONOS_validation";
  if (want_validation && !has_layer(layer)) {
    out.reason = "NINODES_VK_VALIDATION=1 but VK_LAYER_KHRONOS_validation is not installed (Debian: vulkan-validationlayers)";
    return out;
  }
  VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
  app.pApplicationName = "ninodes";
  app.apiVersion = VK_API_VERSION_1_2;
  VkInstanceCreateInfo info{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
  info.pApplicationInfo = &app;
  const char* debug_ext = VK_EXT_DEBUG_UTILS_EXTENSION_NAME;
  if (want_validation) {
    info.enabledLayerCount = 1;
    info.ppEnabledLayerNames = &layer;
    info.enabledExtensionCount = 1;
    info.ppEnabledExtensionNames = &debug_ext;
  }
  const VkResult created = vkCreateInstance(&info, nullptr, &out.handle);
  if (created != VK_SUCCESS) {
    out.handle = VK_NULL_HANDLE;
    out.reason = "vkCreateInstance failed with " + result_name(created) + (created == VK_ERROR_INCOMPATIBLE_DRIVER ? " (no Vulkan driver is installed)" : "");
    return out;
  }
  // Instance and device entry points through the loader: correct for any number of devices.
  volkLoadInstance(out.handle);
  if (want_validation) {
    out.validation = true;
    g_validation.enabled = true;
    VkDebugUtilsMessengerCreateInfoEXT m{VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT};
    m.messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
    m.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT;
    m.pfnUserCallback = on_validation_message;
    vkCreateDebugUtilsMessengerEXT(out.handle, &m, nullptr, &g_messenger);
  }
  uint32_t n = 0;
  vkEnumeratePhysicalDevices(out.handle, &n, nullptr);
  out.physical.resize(n);
  if (n > 0) vkEnumeratePhysicalDevices(out.handle, &n, out.physical.data());
  out.physical.resize(n);
  return out;
}

}  // namespace

const Instance& instance() {
  // Created once and kept for the life of the process: devices and buffers refer to it, and
  // destroying it at exit would race the loader's own teardown.
  static const Instance* created = new Instance(create());
  return *created;
}

VkPhysicalDevice physical_device(int index) {
  const Instance& inst = instance();
  if (inst.handle == VK_NULL_HANDLE) fail("VULKAN_UNAVAILABLE", "Vulkan is unavailable: " + inst.reason);
  if (index < 0 || static_cast<size_t>(index) >= inst.physical.size()) {
    fail("VULKAN_DEVICE_NOT_FOUND", "no Vulkan device vk:" + std::to_string(index) + " (this machine has " + std::to_string(inst.physical.size()) + ")");
  }
  return inst.physical[static_cast<size_t>(index)];
}

std::string result_name(VkResult r) {
  switch (r) {
    case VK_SUCCESS: return "VK_SUCCESS";
    case VK_NOT_READY: return "VK_NOT_READY";
    case VK_TIMEOUT: return "VK_TIMEOUT";
    case VK_ERROR_OUT_OF_HOST_MEMORY: return "VK_ERROR_OUT_OF_HOST_MEMORY";
    case VK_ERROR_OUT_OF_DEVICE_MEMORY: return "VK_ERROR_OUT_OF_DEVICE_MEMORY";
    case VK_ERROR_INITIALIZATION_FAILED: return "VK_ERROR_INITIALIZATION_FAILED";
    case VK_ERROR_DEVICE_LOST: return "VK_ERROR_DEVICE_LOST";
    case VK_ERROR_MEMORY_MAP_FAILED: return "VK_ERROR_MEMORY_MAP_FAILED";
    case VK_ERROR_LAYER_NOT_PRESENT: return "VK_ERROR_LAYER_NOT_PRESENT";
    case VK_ERROR_EXTENSION_NOT_PRESENT: return "VK_ERROR_EXTENSION_NOT_PRESENT";
    case VK_ERROR_FEATURE_NOT_PRESENT: return "VK_ERROR_FEATURE_NOT_PRESENT";
    case VK_ERROR_INCOMPATIBLE_DRIVER: return "VK_ERROR_INCOMPATIBLE_DRIVER";
    case VK_ERROR_TOO_MANY_OBJECTS: return "VK_ERROR_TOO_MANY_OBJECTS";
    case VK_ERROR_OUT_OF_POOL_MEMORY: return "VK_ERROR_OUT_OF_POOL_MEMORY";
    default: return "VkResult " + std::to_string(static_cast<int>(r));
  }
}

void check(VkResult r, const char* what) {
  if (r == VK_SUCCESS) return;
  if (r == VK_ERROR_OUT_OF_DEVICE_MEMORY || r == VK_ERROR_OUT_OF_HOST_MEMORY) {
    fail("VULKAN_OUT_OF_MEMORY", std::string(what) + " failed: " + result_name(r));
  }
  fail("VULKAN_ERROR", std::string(what) + " failed: " + result_name(r));
}

ValidationReport validation_report() {
  instance();
  std::lock_guard<std::mutex> lock(g_validation_mutex);
  return g_validation;
}

}  // namespace ninodes::vk
