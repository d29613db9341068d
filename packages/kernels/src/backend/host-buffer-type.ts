import { type DType, byteSizeOf } from '../dtype.js';
import type { BufferType } from './device-buffer.js';

/**
 * Host memory as a buffer type: ordinary ArrayBuffers, exact sizes (no padding), which `.data`
 * views. The CPU and reference backends keep their tensors here.
 */
export function hostBufferType(device: string): BufferType {
  return {
    name: `${device} (host memory)`,
    device,
    isHost: true,
    alignment: 8,
    allocSize: (dtype: DType, shape: readonly number[]) => byteSizeOf(dtype, shape),
    allocate: (byteLength: number) => new ArrayBuffer(byteLength),
  };
}
