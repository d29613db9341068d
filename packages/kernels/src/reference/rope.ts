import { planRope } from '../ops/rope.js';
import { Tensor } from '../tensor.js';

export function ropeSplitHalf(x: Tensor<'f32'>, angles: Tensor<'f32'>, rotDim: number): Tensor<'f32'> {
  const p = planRope(x, angles, rotDim);
  const xs = p.x.data;
  const an = p.angles.data;
  const out = Float32Array.from(xs);
  const half = p.rotDim / 2;
  for (let s = 0; s < p.seq; s++) {
    for (let h = 0; h < p.heads; h++) {
      const o = (s * p.heads + h) * p.headDim;
      for (let i = 0; i < half; i++) {
        const a = an[s * p.angleColumns + i] as number;
        const [c, sn] = [Math.cos(a), Math.sin(a)];
        const x1 = xs[o + i] as number;
        const x2 = xs[o + i + half] as number;
        out[o + i] = x1 * c - x2 * sn;
        out[o + i + half] = x2 * c + x1 * sn;
      }
    }
  }
  return Tensor.fromArray('f32', p.x.shape, out);
}
