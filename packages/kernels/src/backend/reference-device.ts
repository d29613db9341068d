// The TypeScript reference ops as a backend: host memory, float64 accumulation, no native code.
// Tests run any op on it (runOp(name, args, { device: 'reference' })) and compare a backend to it.
import * as reference from '../reference/index.js';
import { ggufWeightBytes } from '../gguf-linear.js';
import { type Backend, type ComputeDevice, type PreparedWeightSpec, blocksOf } from './backend.js';
import { hostBufferType } from './host-buffer-type.js';
import { type BackendOps, asksBf16Units } from './ops.js';

const REFERENCE_OPS: BackendOps = {
  add: reference.add,
  mul: reference.mul,
  addcmul: reference.addcmul,
  modulate: reference.modulate,
  scale: reference.scale,
  silu: reference.silu,
  gelu: reference.gelu,
  swiglu: reference.swiglu,
  rmsNorm: reference.rmsNorm,
  layerNorm: reference.layerNorm,
  softmax: reference.softmax,
  ropeSplitHalf: reference.ropeSplitHalf,
  attention: reference.attention,
  linear: (x, w, bias) => reference.linear(x, w, bias),
  int8LinearQuantized: reference.int8LinearQuantized,
  hadamard: reference.hadamardSync,
  cast: reference.cast,
};


/** Unpadded host sizes: f32 4 B/param, bf16 2 B, int8 1 B + an f32 scale per row, fp8 1 B. */
function referenceWeightBytes(weight: PreparedWeightSpec): number {
  const [n, k] = weight.shape;
  if (weight.kind === 'gguf') return ggufWeightBytes(blocksOf(weight), n, k);
  const perParam = { f32: 4, bf16: 2, int8: 1, fp8: 1 }[weight.kind];
  return perParam * n * k + (weight.kind === 'int8' ? 4 * n : 0);
}

export function referenceDevice(): ComputeDevice {
  let backend: Backend | undefined;
  const device: ComputeDevice = {
    name: 'reference',
    kind: 'reference',
    description: 'the TypeScript reference ops (float64 accumulation, no native code)',
    bufferType: hostBufferType('reference'),
    memory: () => undefined,
    backend: () =>
      (backend ??= {
        name: 'reference',
        device,
        ops: REFERENCE_OPS,
        supportsOp: (op, args) => REFERENCE_OPS[op] !== undefined && !asksBf16Units(op, args),
        preparedWeightBytes: referenceWeightBytes,
        synchronize: async () => {},
      }),
  };
  return device;
}
