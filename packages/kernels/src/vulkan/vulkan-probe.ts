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

/**
 * What a Vulkan device can hold and has free, from its device-local heaps: a unified device's heaps
 * are host RAM seen through the driver, so its largest heap is what it can hold; a discrete card
 * holds the sum of its device-local heaps. `freeBytes` is the VK_EXT_memory_budget budget less this
 * process's usage, null where the driver lacks the extension; both null without a device-local heap.
 */
export function vulkanDeviceMemory(d: VulkanDeviceRecord): { totalBytes: number | null; freeBytes: number | null } {
  const local = d.heaps.filter((h) => h.deviceLocal);
  if (local.length === 0) return { totalBytes: null, freeBytes: null };
  const combine = (values: number[]) => (d.unifiedMemory ? Math.max(...values) : values.reduce((a, b) => a + b, 0));
  const totalBytes = combine(local.map((h) => h.sizeBytes));
  const freeBytes = d.memoryBudget ? combine(local.map((h) => Math.max(0, (h.budgetBytes ?? 0) - (h.usageBytes ?? 0)))) : null;
  return { totalBytes, freeBytes };
}
