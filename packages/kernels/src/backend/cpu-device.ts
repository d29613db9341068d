// Today's native CPU code as the CPU backend: each op is the exported kernels op (oneDNN, the
// hand-written AVX-512/AVX2 kernels), so running through the seam gives the same bits as calling it.
import { buildInfo } from '../build-info.js';
import { cast } from '../cast.js';
import { ggufWeightBytes } from '../gguf-linear.js';
import { hadamard } from '../hadamard.js';
import { int8LinearQuantized } from '../int8.js';
import { linear, packedLinearBytes } from '../linear.js';
import { gelu, silu, swiglu } from '../ops/activations.js';
import { attention } from '../ops/attention.js';
import { add, addcmul, modulate, mul, scale } from '../ops/elementwise.js';
import { layerNorm, rmsNorm, softmax } from '../ops/norms.js';
import { ropeSplitHalf } from '../ops/rope.js';
import { type Backend, type ComputeDevice, type PreparedWeightSpec, blocksOf } from './backend.js';
import { hostBufferType } from './host-buffer-type.js';
import { type BackendOps, asksBf16Units } from './ops.js';

const CPU_OPS: BackendOps = {
  add: (a, b) => add(a, b),
  mul,
  addcmul,
  modulate: (x, shift, s) => modulate(x, shift, s),
  scale,
  silu: (x) => silu(x),
  gelu,
  swiglu: (x) => swiglu(x),
  rmsNorm: (x, weight, eps) => rmsNorm(x, weight, eps),
  layerNorm,
  softmax,
  ropeSplitHalf: (x, angles, rotDim) => ropeSplitHalf(x, angles, rotDim),
  attention,
  linear,
  int8LinearQuantized,
  hadamard,
  cast,
};


/**
 * Bytes a prepared linear weight holds on the CPU: f32 4 B/param, int8 1 B + an f32 scale per row,
 * fp8 1 B (its scale is a number), bf16 2 B, or oneDNN's padded blocks when it multiplies on the
 * bf16 units (packed once, see PackedLinearWeight).
 */
export function cpuPreparedWeightBytes(weight: PreparedWeightSpec): number {
  const [n, k] = weight.shape;
  switch (weight.kind) {
    case 'f32':
      return 4 * n * k;
    case 'bf16':
      return weight.precision === 'bf16' && n > 0 && k > 0 ? Math.max(2 * n * k, packedLinearBytes(n, k)) : 2 * n * k;
    case 'int8':
      return n * k + 4 * n;
    case 'fp8':
      return n * k;
    case 'gguf':
      return ggufWeightBytes(blocksOf(weight), n, k);
  }
}

export function cpuDevice(): ComputeDevice {
  let backend: Backend | undefined;
  const device: ComputeDevice = {
    name: 'cpu',
    kind: 'cpu',
    description: 'host CPU: the native addon (oneDNN and the hand-written SIMD kernels)',
    bufferType: hostBufferType('cpu'),
    memory: () => undefined,
    backend: () =>
      (backend ??= {
        name: 'cpu',
        device,
        ops: CPU_OPS,
        supportsOp: (op, args) => CPU_OPS[op] !== undefined && (!asksBf16Units(op, args) || buildInfo().bf16Units),
        preparedWeightBytes: cpuPreparedWeightBytes,
        // Every CPU op has finished when its promise resolves.
        synchronize: async () => {},
      }),
  };
  return device;
}
