import { KernelsError } from '../error-codes.js';
import { Tensor } from '../tensor.js';
import { requireF32, requireRank } from '../arg-checks.js';

export interface CausalAttentionOptions {
  /** Score scale; default 1/√D. */
  scale?: number;
}

/**
 * Causal grouped-query attention as a decoder LM's prefill computes it (Qwen3, Llama): q [S, H, D],
 * k and v [S, Hkv, D] (the token-major layout a linear's output has, so no transpose), H a multiple
 * of Hkv (query head h reads key/value head ⌊h·Hkv/H⌋); query i sees keys 0..i. Returns [S, H·D],
 * each token's heads side by side as an output projection reads them.
 *
 * TypeScript with float64 scores and sums: the native flash kernel has no mask yet, and a text
 * encoder's prompts are short (S in the hundreds), where this costs less than the linears.
 */
export function causalAttention(q: Tensor<'f32'>, k: Tensor<'f32'>, v: Tensor<'f32'>, opts: CausalAttentionOptions = {}): Tensor<'f32'> {
  const op = 'causalAttention';
  const tq = requireF32(q, op, 'q');
  const tk = requireF32(k, op, 'k');
  const tv = requireF32(v, op, 'v');
  requireRank(tq, 3, op, 'q');
  requireRank(tk, 3, op, 'k');
  requireRank(tv, 3, op, 'v');
  const [S, H, D] = tq.shape as [number, number, number];
  const [ks, hkv, kd] = tk.shape as [number, number, number];
  const sameKv = tv.shape[0] === ks && tv.shape[1] === hkv && tv.shape[2] === kd;
  if (ks !== S || kd !== D || !sameKv || hkv === 0 || H % hkv !== 0) {
    throw new KernelsError('SHAPE_MISMATCH', `${op}: q [${tq.shape.join(', ')}], k [${tk.shape.join(', ')}], v [${tv.shape.join(', ')}] do not agree`, {
      value: { q: tq.shape, k: tk.shape, v: tv.shape },
      where: op,
      hint: 'q [S, H, D], k and v [S, Hkv, D] with H a multiple of Hkv',
    });
  }
  const scale = opts.scale ?? (D === 0 ? 1 : 1 / Math.sqrt(D));
  if (typeof scale !== 'number' || !Number.isFinite(scale)) {
    throw new KernelsError('INVALID_ARGUMENT', `${op}: scale must be a finite number`, { value: scale, where: `${op}(opts.scale)` });
  }
  const qs = tq.data;
  const kv = tk.data;
  const vs = tv.data;
  const out = new Float32Array(S * H * D);
  const w = new Float64Array(S);
  const acc = new Float64Array(D);
  const group = H / hkv;
  for (let h = 0; h < H; h++) {
    const g = Math.floor(h / group);
    for (let i = 0; i < S; i++) {
      const qo = (i * H + h) * D;
      let m = -Infinity;
      for (let j = 0; j <= i; j++) {
        const ko = (j * hkv + g) * D;
        let dot = 0;
        for (let d = 0; d < D; d++) dot += (qs[qo + d] as number) * (kv[ko + d] as number);
        const s = dot * scale;
        w[j] = s;
        if (s > m) m = s;
      }
      let sum = 0;
      for (let j = 0; j <= i; j++) {
        const e = Math.exp((w[j] as number) - m);
        w[j] = e;
        sum += e;
      }
      acc.fill(0);
      for (let j = 0; j <= i; j++) {
        const vo = (j * hkv + g) * D;
        const p = (w[j] as number) / sum;
        for (let d = 0; d < D; d++) acc[d] = (acc[d] as number) + p * (vs[vo + d] as number);
      }
      for (let d = 0; d < D; d++) out[qo + d] = acc[d] as number;
    }
  }
  return Tensor.fromArray('f32', [S, H * D], out);
}
