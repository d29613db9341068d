import { statfsSync } from 'node:fs';
import { AMD_VENDOR_ID, countPciDisplayDevices, readAmdGpus, type AmdSysfsGpu } from './amd-sysfs.js';
import { archProfile, type ArchProfile, type ProfileConfig } from './arch-profiles.js';
import { cpuArch, readCpuInfo, type CpuInfo } from './cpu-info.js';
import type { DeviceKind } from './device-id.js';
import { resolveRoots, type SystemRoots } from './fs-read.js';
import { type VulkanHeap, vulkanDeviceMemory } from '@ninodes/kernels';
import { nativeHip, nativeNvml, nativeVulkan, type HipSource, type NvmlSource, type VulkanSource } from './gpu-sources.js';
import { NoteLog, type ProbeNote } from './notes.js';
import { applyVisibility } from './visible-devices.js';

export const NVIDIA_VENDOR_ID = 0x10de;

export interface DeviceInfo {
  /** Canonical id: `cpu`, `disk`, `cuda:0`, `hip:1`. */
  id: string;
  kind: DeviceKind;
  index: number | null;
  name: string;
  vendor: 'amd' | 'nvidia' | 'intel' | 'unknown';
  /** `gfx1100`, `sm_89`, `cpu-avx2`, or `unknown`. */
  arch: string;
  profile: ArchProfile | null;
  totalBytes: number | null;
  freeBytes: number | null;
  usedBytes: number | null;
  /** Device memory is host RAM (APU): budgets for it and for `cpu` overlap. */
  unifiedMemory: boolean;
  pciBusId: string | null;
  pcie: { gen: number | null; width: number | null } | null;
  /** Whether a compute runtime for it is loadable in this process (NVML-visible CUDA, HIP). */
  runtimeAvailable: boolean;
  cpu?: CpuInfo;
  amd?: AmdSysfsGpu;
  /** `nvmlIndex` is the physical (NVML, PCI-ordered) index; `index` is after CUDA_VISIBLE_DEVICES. */
  nvidia?: { uuid: string | null; nvmlIndex: number; computeCapability: string | null; driverVersion: string | null };
  disk?: { path: string };
  /**
   * A Vulkan device (`vk:N`, N in the loader's order). `sameAs` is the CUDA / HIP id of the same
   * card, matched by PCI address: one GPU, two ways to compute on it (memory budgets overlap).
   */
  vulkan?: {
    type: 'integrated' | 'discrete' | 'virtual' | 'cpu' | 'other';
    driverName: string;
    driverInfo: string;
    apiVersion: string;
    vendorId: number;
    deviceId: number;
    heaps: VulkanHeap[];
    /** VK_EXT_memory_budget present: freeBytes is the driver's budget less this process's usage. */
    memoryBudget: boolean;
    sameAs: string | null;
  };
}

export interface Enumeration {
  devices: DeviceInfo[];
  notes: ProbeNote[];
}

export interface EnumerateOptions extends SystemRoots {
  nvml?: NvmlSource;
  hip?: HipSource;
  /** Architecture profile overrides (already validated with loadProfileConfig). */
  profiles?: ProfileConfig;
  /** Directory whose filesystem the `disk` device reports; default the current directory. */
  diskPath?: string;
  /** Include the `disk` pseudo-device (default true). */
  includeDisk?: boolean;
  vulkan?: VulkanSource;
  /** Environment for CUDA_/ROCR_/HIP_VISIBLE_DEVICES and CUDA_DEVICE_ORDER; default process.env. */
  env?: Record<string, string | undefined>;
}

type Env = Record<string, string | undefined>;

function vendorOfModel(model: string): DeviceInfo['vendor'] {
  if (/intel/i.test(model)) return 'intel';
  if (/amd|ryzen|epyc|threadripper/i.test(model)) return 'amd';
  return 'unknown';
}

function cpuDevice(cpu: CpuInfo, config: ProfileConfig | undefined): DeviceInfo {
  const arch = cpu.logicalCores === null && cpu.simd.length === 0 && cpu.model === 'unknown' ? 'unknown' : cpuArch(cpu.simd);
  return {
    id: 'cpu',
    kind: 'cpu',
    index: null,
    name: cpu.model,
    vendor: vendorOfModel(cpu.model),
    arch,
    profile: archProfile(arch === 'unknown' ? 'cpu-scalar' : arch, config),
    totalBytes: cpu.totalBytes,
    freeBytes: cpu.freeBytes,
    usedBytes: cpu.totalBytes !== null && cpu.freeBytes !== null ? cpu.totalBytes - cpu.freeBytes : null,
    unifiedMemory: false,
    pciBusId: null,
    pcie: null,
    runtimeAvailable: true,
    cpu,
  };
}

function normalizeBusId(id: string | null | undefined): string | null {
  if (id === null || id === undefined) return null;
  // NVML writes an 8-hex-digit domain (00000000:65:00.0), sysfs and HIP four; compare on the tail.
  const m = /([0-9a-f]+):([0-9a-f]{2}):([0-9a-f]{2})\.([0-7])$/i.exec(id.trim());
  if (m === null) return id.trim().toLowerCase();
  return `${(m[1] as string).slice(-4).padStart(4, '0')}:${m[2]}:${m[3]}.${m[4]}`.toLowerCase();
}

function visible<T>(devices: readonly T[], env: Env, name: string, uuidOf: (d: T) => string | null, log: NoteLog): T[] {
  const spec = env[name];
  const result = applyVisibility(devices, spec, uuidOf);
  if (result.invalid !== null) {
    log.warn('visibility', `${name}='${spec}': entry '${result.invalid}' matches no device (or repeats one); it and later entries are ignored, as the runtime does`);
  } else if (spec !== undefined) {
    log.debug('visibility', `${name}='${spec}' leaves ${result.devices.length} of ${devices.length} device(s) visible`);
  }
  return result.devices;
}

function amdDevices(roots: ReturnType<typeof resolveRoots>, hip: HipSource, config: ProfileConfig | undefined, env: Env, log: NoteLog): DeviceInfo[] {
  const all = readAmdGpus(roots, log);
  const onBus = countPciDisplayDevices(roots, AMD_VENDOR_ID);
  if (onBus > all.length) {
    log.warn('amd-sysfs', `${onBus} AMD display device(s) on the PCI bus but ${all.length} amdgpu DRM card(s): is the amdgpu driver loaded?`);
  }
  if (all.length === 0) {
    log.debug('amd-sysfs', 'no AMD GPU in /sys/class/drm');
    return [];
  }
  // ROCr filters first (indices or UUIDs); HIP then indexes what ROCr left, and reads
  // CUDA_VISIBLE_DEVICES when HIP_VISIBLE_DEVICES is unset.
  const afterRocr = visible(all, env, 'ROCR_VISIBLE_DEVICES', (g) => g.uuid, log);
  const hipVar = env.HIP_VISIBLE_DEVICES !== undefined ? 'HIP_VISIBLE_DEVICES' : 'CUDA_VISIBLE_DEVICES';
  const gpus = visible(afterRocr, env, hipVar, (g) => g.uuid, log);
  let hipBusIds: Set<string> | undefined;
  try {
    const answer = hip.probe();
    if (answer.available) hipBusIds = new Set(answer.devices.map((d) => normalizeBusId(d.pciBusId) ?? ''));
    else log.debug('hip', `HIP runtime not available: ${answer.reason}`);
  } catch (error) {
    log.warn('hip', `HIP probe failed: ${(error as Error).message}`);
  }
  return gpus.map((g, index) => {
    const arch = g.gfxTarget ?? 'unknown';
    const profile = g.gfxTarget === null ? null : archProfile(g.gfxTarget, config);
    const unified = profile?.unifiedMemory ?? false;
    let total = g.vramTotalBytes;
    let used = g.vramUsedBytes;
    // An APU's carve-out is small; most of what it can use is GTT (host RAM mapped for the GPU).
    if (unified && total !== null && g.gttTotalBytes !== null) {
      total += g.gttTotalBytes;
      used = used !== null && g.gttUsedBytes !== null ? used + g.gttUsedBytes : null;
    }
    const busId = normalizeBusId(g.pciBusId);
    const name = g.productName ?? `AMD GPU ${g.pciDeviceId === null ? '' : `0x${g.pciDeviceId.toString(16).padStart(4, '0')} `}(${arch})`;
    return {
      id: `hip:${index}`,
      kind: 'hip' as const,
      index,
      name,
      vendor: 'amd' as const,
      arch,
      profile,
      totalBytes: total,
      freeBytes: total !== null && used !== null ? Math.max(0, total - used) : null,
      usedBytes: used,
      unifiedMemory: unified,
      pciBusId: busId,
      pcie: g.pcieGen === null && g.pcieWidth === null ? null : { gen: g.pcieGen, width: g.pcieWidth },
      runtimeAvailable: hipBusIds !== undefined && (busId === null || hipBusIds.has(busId)),
      amd: g,
    };
  });
}

function nvidiaDevices(roots: ReturnType<typeof resolveRoots>, nvml: NvmlSource, config: ProfileConfig | undefined, env: Env, log: NoteLog): DeviceInfo[] {
  let answer;
  try {
    answer = nvml.probe();
  } catch (error) {
    log.warn('nvml', `NVML probe failed: ${(error as Error).message}`);
    return [];
  }
  if (!answer.available) {
    const present = countPciDisplayDevices(roots, NVIDIA_VENDOR_ID);
    // Absent driver on a machine without NVIDIA hardware is normal; with hardware it is a problem.
    if (present > 0) log.warn('nvml', `${present} NVIDIA display device(s) on the PCI bus but NVML is unavailable: ${answer.reason}`);
    else log.debug('nvml', `NVML not available: ${answer.reason}`);
    return [];
  }
  for (const e of answer.errors) log.warn('nvml', e);
  const names = new Set(answer.devices.map((d) => d.name ?? ''));
  if (names.size > 1 && env.CUDA_DEVICE_ORDER !== 'PCI_BUS_ID') {
    // CUDA's default order is fastest-first; ours (NVML's) is PCI bus order. They differ on mixed machines.
    log.warn('nvml', `GPUs of different models (${[...names].join(', ')}): cuda:N here follows PCI bus order; set CUDA_DEVICE_ORDER=PCI_BUS_ID so CUDA numbers them the same way`);
  }
  const shown = visible(answer.devices, env, 'CUDA_VISIBLE_DEVICES', (d) => d.uuid ?? null, log);
  return shown.map((d, index) => {
    const cc = d.ccMajor !== undefined && d.ccMinor !== undefined ? `${d.ccMajor}.${d.ccMinor}` : null;
    const arch = d.ccMajor !== undefined && d.ccMinor !== undefined ? `sm_${d.ccMajor}${d.ccMinor}` : 'unknown';
    if (d.totalBytes === undefined) log.warn('nvml', `cuda:${index}: memory info unavailable`);
    return {
      id: `cuda:${index}`,
      kind: 'cuda' as const,
      index,
      name: d.name ?? 'unknown',
      vendor: 'nvidia' as const,
      arch,
      profile: arch === 'unknown' ? null : archProfile(arch, config),
      totalBytes: d.totalBytes ?? null,
      freeBytes: d.freeBytes ?? null,
      usedBytes: d.usedBytes ?? null,
      unifiedMemory: false,
      pciBusId: normalizeBusId(d.pciBusId),
      // Idle GPUs train their link down (gen 1); the maximum is what transfers will see.
      pcie: d.pcieGen === undefined && d.pcieMaxGen === undefined ? null : { gen: d.pcieMaxGen ?? d.pcieGen ?? null, width: d.pcieMaxWidth ?? d.pcieWidth ?? null },
      runtimeAvailable: true,
      nvidia: { uuid: d.uuid ?? null, nvmlIndex: d.index, computeCapability: cc, driverVersion: answer.driverVersion ?? null },
    };
  });
}

const VULKAN_VENDORS: Record<number, DeviceInfo['vendor']> = { 0x1002: 'amd', 0x10de: 'nvidia', 0x8086: 'intel' };

function vulkanDevices(vulkan: VulkanSource, gpus: readonly DeviceInfo[], log: NoteLog): DeviceInfo[] {
  let answer;
  try {
    answer = vulkan.probe();
  } catch (error) {
    log.warn('vulkan', `Vulkan probe failed: ${(error as Error).message}`);
    return [];
  }
  if (!answer.available) {
    // No loader or driver is an ordinary machine; with a GPU present it is worth a debug note only,
    // since CUDA / HIP may still compute on it.
    log.debug('vulkan', `Vulkan not available: ${answer.reason}`);
    return [];
  }
  return answer.devices.map((d) => {
    const busId = normalizeBusId(d.pciBusId);
    const twin = busId === null ? undefined : gpus.find((g) => g.pciBusId === busId);
    const { totalBytes: total, freeBytes: free } = vulkanDeviceMemory(d);
    if (!d.memoryBudget) log.debug('vulkan', `vk:${d.index} (${d.driverName}) lacks VK_EXT_memory_budget: free memory unknown`);
    return {
      id: `vk:${d.index}`,
      kind: 'vk' as const,
      index: d.index,
      name: d.name,
      vendor: VULKAN_VENDORS[d.vendorId] ?? 'unknown',
      arch: twin?.arch ?? (d.type === 'cpu' ? 'vulkan-cpu' : 'unknown'),
      profile: twin?.profile ?? null,
      totalBytes: total,
      freeBytes: free,
      usedBytes: total !== null && free !== null ? Math.max(0, total - free) : null,
      unifiedMemory: d.unifiedMemory,
      pciBusId: busId,
      pcie: twin?.pcie ?? null,
      runtimeAvailable: true,
      vulkan: {
        type: d.type,
        driverName: d.driverName,
        driverInfo: d.driverInfo,
        apiVersion: d.apiVersion,
        vendorId: d.vendorId,
        deviceId: d.deviceId,
        heaps: d.heaps,
        memoryBudget: d.memoryBudget,
        sameAs: twin?.id ?? null,
      },
    };
  });
}

function diskDevice(path: string, log: NoteLog): DeviceInfo {
  let total: number | null = null;
  let free: number | null = null;
  try {
    const s = statfsSync(path);
    total = s.blocks * s.bsize;
    free = s.bavail * s.bsize;
  } catch (error) {
    log.warn('disk', `cannot stat filesystem: ${(error as Error).message}`, path);
  }
  return {
    id: 'disk',
    kind: 'disk',
    index: null,
    name: `filesystem of ${path}`,
    vendor: 'unknown',
    arch: 'disk',
    profile: null,
    totalBytes: total,
    freeBytes: free,
    usedBytes: total !== null && free !== null ? total - free : null,
    unifiedMemory: false,
    pciBusId: null,
    pcie: null,
    runtimeAvailable: true,
    disk: { path },
  };
}

/**
 * Everything this machine offers: the CPU (with RAM bounded by any cgroup limit), NVIDIA GPUs via
 * NVML, AMD GPUs via sysfs/KFD (and HIP when loadable), Vulkan devices (when a loader and driver
 * are), and the disk. Never throws for missing
 * vendors or unreadable files: those become `debug` or `warn` notes and `unknown`/null fields.
 */
export function enumerateDevices(options: EnumerateOptions = {}): Enumeration {
  const roots = resolveRoots(options);
  const log = new NoteLog();
  const devices: DeviceInfo[] = [cpuDevice(readCpuInfo(roots, log), options.profiles)];
  const env = options.env ?? process.env;
  devices.push(...nvidiaDevices(roots, options.nvml ?? nativeNvml, options.profiles, env, log));
  devices.push(...amdDevices(roots, options.hip ?? nativeHip, options.profiles, env, log));
  devices.push(...vulkanDevices(options.vulkan ?? nativeVulkan, devices.slice(1), log));
  if (options.includeDisk !== false) devices.push(diskDevice(options.diskPath ?? process.cwd(), log));
  return { devices, notes: log.notes };
}

/** Canonical ids of the devices found, for parseDeviceId's `available` list. */
export function deviceIds(enumeration: Enumeration): string[] {
  return enumeration.devices.map((d) => d.id);
}
