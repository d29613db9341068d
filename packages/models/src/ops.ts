// The one place the model touches numeric ops. Signatures are @ninodes/kernels' op contract
// (KERNELS_API); until those ops land on main these are plain TypeScript loops with the same
// semantics, so swapping to the native ops is a change to this file only.
import { NinodesError, Tensor } from '@ninodes/kernels';

function f32(shape: readonly number[], data: Float32Array): Tensor<'f32'> {
  return Tensor.fromArray('f32', shape, data);
}

function lastDim(x: Tensor, op: string): number {
  const d = x.shape[x.rank - 1];
  if (d === undefined) throw new NinodesError('SHAPE_MISMATCH', `${op}: a scalar has no last dimension`, { value: x.shape });
  return d;
}

function checkVec(v: Tensor<'f32'>, d: number, op: string, what: string): void {
  if (v.numel !== d) throw new NinodesError('SHAPE_MISMATCH', `${op}: ${what} has ${v.numel} values, expected ${d}`, { value: v.shape, where: op });
}

export function rmsNorm(x: Tensor<'f32'>, weight: Tensor<'f32'> | undefined, eps: number): Tensor<'f32'> {
  const d = lastDim(x, 'rmsNorm');
  if (weight) checkVec(weight, d, 'rmsNorm', 'weight');
  const src = x.data;
  const w = weight?.data;
  const out = new Float32Array(src.length);
  for (let r = 0; r < src.length / d; r++) {
    const o = r * d;
    let ss = 0;
    for (let i = 0; i < d; i++) ss += (src[o + i] as number) ** 2;
    const inv = 1 / Math.sqrt(ss / d + eps);
    for (let i = 0; i < d; i++) out[o + i] = (src[o + i] as number) * inv * (w ? (w[i] as number) : 1);
  }
  return f32(x.shape, out);
}

export function silu(x: Tensor<'f32'>): Tensor<'f32'> {
  return f32(x.shape, x.data.map((v) => v / (1 + Math.exp(-v))));
}

export function swiglu(x: Tensor<'f32'>): Tensor<'f32'> {
  const d2 = lastDim(x, 'swiglu');
  if (d2 % 2 !== 0) throw new NinodesError('SHAPE_MISMATCH', `swiglu: last dim ${d2} is odd`, { value: x.shape });
  const f = d2 / 2;
  const src = x.data;
  const rows = src.length / d2;
  const out = new Float32Array(rows * f);
  for (let r = 0; r < rows; r++) {
    for (let i = 0; i < f; i++) {
      const g = src[r * d2 + i] as number;
      out[r * f + i] = (g / (1 + Math.exp(-g))) * (src[r * d2 + f + i] as number);
    }
  }
  return f32([...x.shape.slice(0, -1), f], out);
}

/** x [S, H, D], angles [S, R]: pair (i, i + R/2) of each head rotated by angles[s, i]. */
export function ropeSplitHalf(x: Tensor<'f32'>, angles: Tensor<'f32'>, rotDim: number): Tensor<'f32'> {
  const [s, h, d] = x.shape as [number, number, number];
  if (x.rank !== 3 || angles.rank !== 2 || angles.shape[0] !== s || (angles.shape[1] as number) < rotDim || rotDim > d || rotDim % 2 !== 0) {
    throw new NinodesError('SHAPE_MISMATCH', `ropeSplitHalf: x [${x.shape.join(', ')}], angles [${angles.shape.join(', ')}], rotDim ${rotDim}`, { value: { x: x.shape, angles: angles.shape, rotDim } });
  }
  const out = Float32Array.from(x.data);
  const a = angles.data;
  const ar = angles.shape[1] as number;
  const half = rotDim / 2;
  for (let t = 0; t < s; t++) {
    for (let i = 0; i < half; i++) {
      const ang = a[t * ar + i] as number;
      const c = Math.cos(ang);
      const sn = Math.sin(ang);
      for (let hh = 0; hh < h; hh++) {
        const o = (t * h + hh) * d;
        const x1 = out[o + i] as number;
        const x2 = out[o + i + half] as number;
        out[o + i] = x1 * c - x2 * sn;
        out[o + i + half] = x1 * sn + x2 * c;
      }
    }
  }
  return f32(x.shape, out);
}

/** q [H, S, D], k/v [H, T, D] -> [H, S, D]; softmax(q·kᵀ·scale)·v per head. */
export async function attention(q: Tensor<'f32'>, k: Tensor<'f32'>, v: Tensor<'f32'>, opts: { scale?: number } = {}): Promise<Tensor<'f32'>> {
  const [h, s, d] = q.shape as [number, number, number];
  const t = k.shape[1] as number;
  if (q.rank !== 3 || k.rank !== 3 || v.rank !== 3 || k.shape[0] !== h || v.shape[0] !== h || k.shape[2] !== d || v.shape[1] !== t || v.shape[2] !== d) {
    throw new NinodesError('SHAPE_MISMATCH', `attention: q [${q.shape.join(', ')}], k [${k.shape.join(', ')}], v [${v.shape.join(', ')}]`, { value: [q.shape, k.shape, v.shape] });
  }
  const scale = opts.scale ?? 1 / Math.sqrt(d);
  const qd = q.data;
  const kd = k.data;
  const vd = v.data;
  const out = new Float32Array(h * s * d);
  const p = new Float64Array(t);
  const acc = new Float64Array(d);
  for (let hh = 0; hh < h; hh++) {
    for (let i = 0; i < s; i++) {
      const qo = (hh * s + i) * d;
      let mx = -Infinity;
      for (let j = 0; j < t; j++) {
        const ko = (hh * t + j) * d;
        let dot = 0;
        for (let c = 0; c < d; c++) dot += (qd[qo + c] as number) * (kd[ko + c] as number);
        p[j] = dot * scale;
        if (dot * scale > mx) mx = dot * scale;
      }
      let z = 0;
      acc.fill(0);
      for (let j = 0; j < t; j++) {
        const e = Math.exp((p[j] as number) - mx);
        z += e;
        const vo = (hh * t + j) * d;
        for (let c = 0; c < d; c++) acc[c] = (acc[c] as number) + e * (vd[vo + c] as number);
      }
      for (let c = 0; c < d; c++) out[qo + c] = (acc[c] as number) / z;
    }
  }
  return f32(q.shape, out);
}

/** x [S, D] * (1 + scale) + shift, shift/scale [D]. */
export function modulate(x: Tensor<'f32'>, shift: Tensor<'f32'>, scale: Tensor<'f32'>): Tensor<'f32'> {
  const d = lastDim(x, 'modulate');
  checkVec(shift, d, 'modulate', 'shift');
  checkVec(scale, d, 'modulate', 'scale');
  const src = x.data;
  const sh = shift.data;
  const sc = scale.data;
  const out = new Float32Array(src.length);
  for (let i = 0; i < src.length; i++) out[i] = (src[i] as number) * (1 + (sc[i % d] as number)) + (sh[i % d] as number);
  return f32(x.shape, out);
}

/** x + a·b, b broadcast over leading dims (its shape a suffix of a's). */
export function addcmul(x: Tensor<'f32'>, a: Tensor<'f32'>, b: Tensor<'f32'>): Tensor<'f32'> {
  if (x.numel !== a.numel || a.numel % b.numel !== 0) {
    throw new NinodesError('SHAPE_MISMATCH', `addcmul: x [${x.shape.join(', ')}], a [${a.shape.join(', ')}], b [${b.shape.join(', ')}]`, { value: [x.shape, a.shape, b.shape] });
  }
  const xd = x.data;
  const ad = a.data;
  const bd = b.data;
  const n = bd.length;
  const out = new Float32Array(xd.length);
  for (let i = 0; i < xd.length; i++) out[i] = (xd[i] as number) + (ad[i] as number) * (bd[i % n] as number);
  return f32(x.shape, out);
}

/** Any float tensor to f32 (bf16/f16 widen exactly). */
export function castF32(x: Tensor): Tensor<'f32'> {
  switch (x.dtype) {
    case 'f32':
      return x as Tensor<'f32'>;
    case 'bf16': {
      const src = (x as Tensor<'bf16'>).data;
      const bits = new Uint32Array(src.length);
      for (let i = 0; i < src.length; i++) bits[i] = (src[i] as number) << 16;
      return f32(x.shape, new Float32Array(bits.buffer));
    }
    case 'f16': {
      const src = (x as Tensor<'f16'>).data;
      const out = new Float32Array(src.length);
      for (let i = 0; i < src.length; i++) {
        const hb = src[i] as number;
        const sgn = hb & 0x8000 ? -1 : 1;
        const e = (hb >> 10) & 0x1f;
        const m = hb & 0x3ff;
        out[i] = e === 0 ? sgn * m * 2 ** -24 : e === 31 ? (m ? Number.NaN : sgn * Number.POSITIVE_INFINITY) : sgn * (1 + m / 1024) * 2 ** (e - 15);
      }
      return f32(x.shape, out);
    }
    case 'f64':
      return f32(x.shape, Float32Array.from((x as Tensor<'f64'>).data));
    default:
      throw new NinodesError('DTYPE_MISMATCH', `cannot cast a ${x.dtype} tensor to f32 here`, { value: x.dtype, hint: 'norm weights and buffers must be float tensors' });
  }
}
