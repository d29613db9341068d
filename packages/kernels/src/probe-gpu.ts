// Typed access to the native GPU probes (NVML and HIP, both loaded with dlopen at run time).
// A missing vendor library is an ordinary answer ({ available: false, reason }), never an error.
import type { HipDeviceRecord, HipProbeResult, NvmlDeviceRecord, NvmlProbeResult } from '@ninodes/native';
import { callNative } from './native-addon.js';

export type { HipDeviceRecord, HipProbeResult, NvmlDeviceRecord, NvmlProbeResult };

/** Queries every NVIDIA GPU through NVML (name, memory, PCIe link, compute capability). */
export function nvmlProbe(): NvmlProbeResult {
  return callNative('nvmlProbe', (n) => n.nvmlProbe());
}

/** Asks the HIP runtime which AMD GPUs this process can compute on (no device context is created). */
export function hipProbe(): HipProbeResult {
  return callNative('hipProbe', (n) => n.hipProbe());
}
