// Typed access to the native GPU probes (NVML and HIP, both loaded with dlopen at run time).
// A missing vendor library is an ordinary answer ({ available: false, reason }), never an error.
import { fromNativeError } from './errors.js';
import { nativeAddon } from './native-addon.js';

export interface NvmlDeviceRecord {
  index: number;
  name?: string;
  uuid?: string;
  pciBusId?: string;
  totalBytes?: number;
  freeBytes?: number;
  usedBytes?: number;
  pcieGen?: number;
  pcieWidth?: number;
  pcieMaxGen?: number;
  pcieMaxWidth?: number;
  ccMajor?: number;
  ccMinor?: number;
}

export type NvmlProbeResult =
  | { available: true; library: string; driverVersion?: string; devices: NvmlDeviceRecord[]; errors: string[] }
  | { available: false; library?: string; reason: string };

export interface HipDeviceRecord {
  index: number;
  name?: string;
  pciBusId?: string;
  totalBytes?: number;
}

export type HipProbeResult =
  | { available: true; library: string; runtimeVersion?: number; devices: HipDeviceRecord[] }
  | { available: false; library?: string; reason: string };

/** Queries every NVIDIA GPU through NVML (name, memory, PCIe link, compute capability). */
export function nvmlProbe(): NvmlProbeResult {
  try {
    return (nativeAddon().nvmlProbe as () => NvmlProbeResult)();
  } catch (error) {
    throw fromNativeError(error, 'nvmlProbe');
  }
}

/** Asks the HIP runtime which AMD GPUs this process can compute on (no device context is created). */
export function hipProbe(): HipProbeResult {
  try {
    return (nativeAddon().hipProbe as () => HipProbeResult)();
  } catch (error) {
    throw fromNativeError(error, 'hipProbe');
  }
}
