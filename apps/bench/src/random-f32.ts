// Bench inputs shared by the op suites (kernels, gpu).
import { Tensor } from '@ninodes/kernels';

/** Deterministic values in [-1, 1) (xorshift32), so runs and peers see comparable data. */
export function randomF32(shape: readonly number[], seed: number): Tensor<'f32'> {
  const n = shape.reduce((a, b) => a * b, 1);
  const a = new Float32Array(n);
  let s = (seed * 2654435761) | 1;
  for (let i = 0; i < n; i++) {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    a[i] = (s | 0) / 2147483648;
  }
  return Tensor.fromArray('f32', shape, a);
}
