// The compute-device seam, in the shape of ggml's backend interface (ggml-backend.h): a device
// (what the hardware is, its memory, its buffer type) makes a backend (what runs ops on it); a
// backend says which ops it supports and how many bytes a prepared weight takes in its buffers.
// A second backend (Vulkan) is a folder that implements these two interfaces plus one
// registerDevice() call; nothing else in the tree changes.
import { KernelsError } from '../error-codes.js';
import type { GgufLinearDType } from '../gguf-linear.js';
import type { LinearPrecision } from '../linear.js';
import type { BufferType } from './device-buffer.js';
import type { BackendOps, OpArgs, OpName } from './ops.js';

/** ggml's device types: the host CPU, a discrete or integrated GPU, and the TypeScript oracle. */
export type DeviceKind = 'cpu' | 'gpu' | 'reference';

/** A linear's weight as a backend keeps it between calls (quant's prepared kinds). */
export type PreparedWeightKind = 'f32' | 'bf16' | 'int8' | 'fp8' | 'gguf';

export interface PreparedWeightSpec {
  readonly kind: PreparedWeightKind;
  /** [N, K]: out × in features. */
  readonly shape: readonly [number, number];
  /** How a bf16 weight multiplies (a CPU packs it for its bf16 units); default 'f32'. */
  readonly precision?: LinearPrecision;
  /** The block type of a 'gguf' weight (kept as its stored blocks). */
  readonly blocks?: GgufLinearDType;
}

/** The block type of a 'gguf' prepared weight (INVALID_ARGUMENT when the spec leaves it out). */
export function blocksOf(weight: PreparedWeightSpec): GgufLinearDType {
  if (weight.blocks === undefined) {
    throw new KernelsError('INVALID_ARGUMENT', "preparedWeightBytes: a 'gguf' weight needs its block type", { value: weight, where: 'preparedWeightBytes', hint: "pass { kind: 'gguf', blocks: 'q4_k', shape }" });
  }
  return weight.blocks;
}

export interface DeviceMemory {
  readonly free: number;
  readonly total: number;
}

export interface ComputeDevice {
  /** Registry key and tensor device id: 'cpu', 'reference', 'vulkan:0'. */
  readonly name: string;
  readonly kind: DeviceKind;
  /** What the hardware is, for reports ('AMD EPYC ...', 'llvmpipe (Vulkan 1.3)'). */
  readonly description: string;
  /** Where this device's tensors live. */
  readonly bufferType: BufferType;
  /** Its memory now, where the device can say (undefined: unknown). */
  memory(): DeviceMemory | undefined;
  /** The backend that runs ops on this device (one per device, made on first use). */
  backend(): Backend;
}

export interface Backend {
  readonly name: string;
  readonly device: ComputeDevice;
  /** The ops it implements; dispatch (runOp) calls them after the op's shared plan has passed. */
  readonly ops: BackendOps;
  /**
   * Whether it runs `op` on these operands (dtypes, shapes, options): ggml's supports_op. False
   * makes runOp throw OP_UNSUPPORTED rather than run elsewhere: copies between devices are explicit.
   */
  supportsOp<K extends OpName>(op: K, args: OpArgs<K>): boolean;
  /** Bytes a prepared linear weight takes in this backend's buffers (the memory account asks this). */
  preparedWeightBytes(weight: PreparedWeightSpec): number;
  /** Resolves once every op and copy it was given has finished (ggml_backend_synchronize). */
  synchronize(): Promise<void>;
}
