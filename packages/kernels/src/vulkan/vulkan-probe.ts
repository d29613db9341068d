// Which Vulkan devices this process can use. The addon opens the Vulkan loader with dlopen (volk),
// so on a machine without a loader or driver this is an ordinary answer ({ available: false,
// reason }), never an error.
import type { VulkanDeviceRecord, VulkanHeap, VulkanProbeResult, VulkanValidationReport } from '@ninodes/native';
import { callNative } from '../native-addon.js';

export type { VulkanDeviceRecord, VulkanHeap, VulkanProbeResult, VulkanValidationReport };

/** Every Vulkan physical device: name, driver, heaps (with VK_EXT_memory_budget), PCI address, limits. */
export function vulkanProbe(): VulkanProbeResult {
  return callNative('vulkanProbe', (n) => n.vkProbe());
}

/** Messages of VK_LAYER_KHRONOS_validation since the instance was made (NINODES_VK_VALIDATION=1). */
export function vulkanValidation(): VulkanValidationReport {
  return callNative('vulkanValidation', (n) => n.vkValidation());
}
