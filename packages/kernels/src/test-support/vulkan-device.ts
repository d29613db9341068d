// The Vulkan device the tests run on (lavapipe in CI). Where none is usable the Vulkan tests skip,
// except under CI=true, where a missing device fails the suite: CI installs lavapipe, so its absence
// is a broken set-up, not a machine without a GPU.
import { vulkanProbe } from '../vulkan/vulkan-probe.js';
import { openVulkanDevice } from '../vulkan/vulkan-backend.js';
import type { VulkanDevice } from '../vulkan/vulkan-device.js';

export function vulkanTestDevice(): VulkanDevice | undefined {
  const probe = vulkanProbe();
  const usable = probe.available && probe.devices.length > 0;
  if (!usable) {
    if (process.env.CI === 'true') {
      throw new Error(`CI=true but no Vulkan device: ${probe.available ? 'no physical device' : probe.reason} (setup installs mesa-vulkan-drivers for lavapipe)`);
    }
    return undefined;
  }
  return openVulkanDevice(0);
}
