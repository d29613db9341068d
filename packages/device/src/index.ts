export {
  DEVICE_KINDS,
  INDEXED_KINDS,
  MAX_DEVICE_INDEX,
  formatDeviceId,
  isIndexedKind,
  parseDeviceId,
  sameDevice,
  tryParseDeviceId,
  type DeviceId,
  type DeviceKind,
  type ParseDeviceIdOptions,
} from './device-id.js';
export { DEVICE_ERROR_CODES, type DeviceErrorCode, type DeviceThrownCode } from './error-codes.js';
export { resolveRoots, type ResolvedRoots, type SystemRoots } from './fs-read.js';
export { NoteLog, type ProbeNote } from './notes.js';
export { readCgroupMemory, type CgroupMemory } from './cgroup.js';
export { allowedCpus, cpuSlices, hasTaskset, parseCpuList } from './cpu-affinity.js';
export { SIMD_FLAGS, cpuArch, readCpuInfo, type CpuInfo, type SimdFlag } from './cpu-info.js';
export { readSystemMemory, type SystemMemory } from './system-memory.js';
export {
  parseProcTable,
  processMemory,
  processMemoryFrom,
  residentMemory,
  residentMemoryFrom,
  type ProcessMemory,
  type ResidentMemory,
} from './process-memory.js';
export {
  AMD_VENDOR_ID,
  countPciDisplayDevices,
  gfxTargetName,
  kfdNumber,
  parseKfdProperties,
  readAmdGpus,
  readAmdUsage,
  rocmUuid,
  type AmdSysfsGpu,
} from './amd-sysfs.js';
export { pcieBandwidthGBs, pcieGenFromSpeed } from './pcie.js';
export { applyVisibility, type VisibilityResult } from './visible-devices.js';
export {
  absentHip,
  absentNvml,
  absentVulkan,
  nativeHip,
  nativeNvml,
  nativeVulkan,
  recordedHip,
  recordedNvml,
  recordedVulkan,
  type HipSource,
  type NvmlSource,
  type VulkanSource,
} from './gpu-sources.js';
export {
  NVIDIA_VENDOR_ID,
  deviceIds,
  enumerateDevices,
  type DeviceInfo,
  type EnumerateOptions,
  type Enumeration,
} from './enumerate.js';
export {
  MemorySampler,
  deviceUsageReader,
  readProcessRss,
  type DeviceUsageReader,
  type MemoryReport,
  type MemorySample,
  type MemorySamplerOptions,
  type SeriesStats,
} from './memory-sampler.js';
export {
  defaultCacheDir,
  hostBandwidth,
  machineKey,
  measureHostMemcpy,
  type HostBandwidth,
  type HostBandwidthOptions,
  type MeasureOptions,
  type MemcpyMeasurement,
} from './bandwidth.js';
export {
  AMD_APU_TARGETS,
  BUILTIN_ARCHS,
  archProfile,
  loadProfileConfig,
  parseProfileConfig,
  profileConfigSchema,
  type ArchProfile,
  type ProfileConfig,
  type ProfileOverride,
} from './arch-profiles.js';
export { formatBytes } from './format-bytes.js';
export {
  deviceRows,
  devicesCommand,
  formatDeviceJson,
  formatDeviceTable,
  listDevices,
  type DeviceRow,
  type DevicesCommandOutput,
  type DevicesCommandOptions,
  type DevicesResult,
} from './devices-command.js';
