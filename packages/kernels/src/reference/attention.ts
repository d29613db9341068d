import { type AttentionOptions, planAttention } from '../ops/attention.js';
import { Tensor } from '../tensor.js';

/** Reference attention: per query row, float64 scores, softmax and weighted sum; O(T) scratch. */
export function attention(q: Tensor<'f32'>, k: Tensor<'f32'>, v: Tensor<'f32'>, opts?: AttentionOptions): Tensor<'f32'> {
  const p = planAttention(q, k, v, opts);
  const [qs, ks, vs] = [p.q.data, p.k.data, p.v.data];
  const { heads: H, seqQ: S, seqK: T, headDim: D } = p;
  const out = new Float32Array(H * S * D);
  const w = new Float64Array(T);
  const acc = new Float64Array(D);
  for (let h = 0; h < H; h++) {
    for (let i = 0; i < S; i++) {
      const qo = (h * S + i) * D;
      let m = -Infinity;
      for (let j = 0; j < T; j++) {
        const ko = (h * T + j) * D;
        let dot = 0;
        for (let d = 0; d < D; d++) dot += (qs[qo + d] as number) * (ks[ko + d] as number);
        w[j] = dot * p.scale;
        m = Math.max(m, w[j] as number);
      }
      let sum = 0;
      for (let j = 0; j < T; j++) {
        w[j] = Math.exp((w[j] as number) - m);
        sum += w[j] as number;
      }
      acc.fill(0);
      for (let j = 0; j < T; j++) {
        const vo = (h * T + j) * D;
        const wj = (w[j] as number) / sum;
        for (let d = 0; d < D; d++) acc[d] = (acc[d] as number) + wj * (vs[vo + d] as number);
      }
      for (let d = 0; d < D; d++) out[qo + d] = T === 0 ? 0 : (acc[d] as number);
    }
  }
  return Tensor.fromArray('f32', p.q.shape, out);
}
