import type { HadamardOrder } from '../arg-checks.js';
import { type HadamardOptions, resolveHadamard } from '../hadamard-options.js';
import { Tensor } from '../tensor.js';

const f = Math.fround;

/**
 * In-place normalized FWHT of each `group` chunk of `x` (float32 rounding at every step, in the
 * native kernels' operation order). Regular stage: S = (a+b)+(c+d), outputs S-2d, S-2c, S-2b, S-2a.
 */
export function fwhtInPlace(x: Float32Array, group: number, order: HadamardOrder): void {
  const regular = order === 'regular';
  const k = regular ? 2 ** -Math.round(Math.log2(group) / 2) : f(1 / Math.sqrt(group));
  for (let g = 0; g < x.length; g += group) {
    if (regular) {
      for (let s = 1; s < group; s *= 4) {
        for (let base = g; base < g + group; base += 4 * s) {
          for (let j = base; j < base + s; j++) {
            const a = x[j] as number, b = x[j + s] as number, c = x[j + 2 * s] as number, d = x[j + 3 * s] as number;
            const S = f(f(a + b) + f(c + d));
            x[j] = S - f(d + d);
            x[j + s] = S - f(c + c);
            x[j + 2 * s] = S - f(b + b);
            x[j + 3 * s] = S - f(a + a);
          }
        }
      }
    } else {
      for (let h = 1; h < group; h *= 2) {
        for (let base = g; base < g + group; base += 2 * h) {
          for (let j = base; j < base + h; j++) {
            const a = x[j] as number, b = x[j + h] as number;
            x[j] = a + b;
            x[j + h] = a - b;
          }
        }
      }
    }
    for (let i = g; i < g + group; i++) x[i] = (x[i] as number) * k;
  }
}

/** Reference Hadamard rotation x·H per group of the last dimension. */
export function hadamardSync(x: Tensor, opts?: HadamardOptions): Tensor<'f32'> {
  const r = resolveHadamard(x, opts, 'hadamard');
  const rotated = x.copy() as Tensor<'f32'>;
  fwhtInPlace(rotated.data, r.group, r.order);
  if (opts?.out === undefined) return rotated;
  const out = opts.out as Tensor<'f32'>;
  out.data.set(rotated.data);
  return out;
}

/** Same as hadamardSync (the reference backend is synchronous). */
export const hadamard = hadamardSync;
