import { hipProbe, nvmlProbe, readSmallFile, vulkanProbe, type HipProbeResult, type NvmlProbeResult, type VulkanProbeResult } from '@ninodes/kernels';

/** A recorded probe answer (JSON of a few kilobytes), read as a side file: never a FIFO waited on. */
const readAnswer = (path: string): unknown => JSON.parse(readSmallFile(path, { maxBytes: 1 << 20 }).data.toString('utf8'));

/**
 * Where NVIDIA answers come from. NVML has no file tree to record, so tests use recorded answers
 * of real machines through this interface; production uses the native dlopen probe.
 */
export interface NvmlSource {
  probe(): NvmlProbeResult;
}

/** Where HIP runtime answers come from (native dlopen probe, or recorded answers in tests). */
export interface HipSource {
  probe(): HipProbeResult;
}

/** Where Vulkan answers come from (the addon's volk-loaded probe, or recorded answers in tests). */
export interface VulkanSource {
  probe(): VulkanProbeResult;
}

export const nativeVulkan: VulkanSource = { probe: vulkanProbe };
export const nativeNvml: NvmlSource = { probe: nvmlProbe };
export const nativeHip: HipSource = { probe: hipProbe };

/** Replays one recorded answer (a JSON file written from a real machine's probe). */
export function recordedNvml(answer: NvmlProbeResult | string): NvmlSource {
  const value = typeof answer === 'string' ? (readAnswer(answer) as NvmlProbeResult) : answer;
  return { probe: () => structuredClone(value) };
}

export function recordedHip(answer: HipProbeResult | string): HipSource {
  const value = typeof answer === 'string' ? (readAnswer(answer) as HipProbeResult) : answer;
  return { probe: () => structuredClone(value) };
}

/** A source whose library is absent, as on a machine without that vendor's driver. */
export function absentNvml(reason = 'libnvidia-ml.so.1 not loadable'): NvmlSource {
  return { probe: () => ({ available: false, reason }) };
}

export function absentHip(reason = 'libamdhip64.so not loadable'): HipSource {
  return { probe: () => ({ available: false, reason }) };
}

export function recordedVulkan(answer: VulkanProbeResult | string): VulkanSource {
  const value = typeof answer === 'string' ? (readAnswer(answer) as VulkanProbeResult) : answer;
  return { probe: () => structuredClone(value) };
}

export function absentVulkan(reason = 'the Vulkan loader (libvulkan.so.1) is not loadable'): VulkanSource {
  return { probe: () => ({ available: false, reason }) };
}
