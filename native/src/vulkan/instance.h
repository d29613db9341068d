#pragma once
// The process's one Vulkan instance, created on first use. volk opens the loader with dlopen, so a
// machine without libvulkan.so.1 (or without any driver) gets an answer ("unavailable: why"), and the
// addon itself loads everywhere. With NINODES_VK_VALIDATION=1 the instance enables
// VK_LAYER_KHRONOS_validation and counts every message it reports (tests assert zero).
#include <volk.h>

#include <cstdint>
#include <string>
#include <vector>

namespace ninodes::vk {

struct Instance {
  VkInstance handle = VK_NULL_HANDLE;
  std::vector<VkPhysicalDevice> physical;
  /** Why there is no instance (loader missing, vkCreateInstance failed); empty when there is one. */
  std::string reason;
  bool validation = false;
  uint32_t loader_version = 0;
};

/** The instance (created once); `reason` says why `handle` is null. Thread-safe. */
const Instance& instance();

/** The physical device `index`, or a VULKAN_UNAVAILABLE / VULKAN_DEVICE_NOT_FOUND error. */
VkPhysicalDevice physical_device(int index);

/** Throws a coded NativeError for a failed Vulkan call (VULKAN_OUT_OF_DEVICE_MEMORY, VULKAN_ERROR). */
void check(VkResult result, const char* what);

std::string result_name(VkResult result);

struct ValidationReport {
  bool enabled = false;
  uint64_t count = 0;
  std::vector<std::string> first;
};
ValidationReport validation_report();

}  // namespace ninodes::vk
