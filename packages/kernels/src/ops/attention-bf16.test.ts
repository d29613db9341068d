// attention(..., { precision: 'bf16' }) against float64 attention of the same bf16-rounded q, k, v,
// with an error bound derived per output element (no tolerance fitted to our own output):
//   A = Σ_j w_j·|v_j|  (w: the float64 softmax weights), then
//   |got − ref| ≤ (u + (e^{2δ} − 1) + (2T + 8)·2⁻²⁴)·A·(1 + u) + 1e-30, where
//   u = 2⁻⁸: the exps are rounded to bf16 (8 significant bits, nearest even) before P·V, each
//     weight moves by at most u of itself, so the weighted mean of v moves by at most u·A;
//   δ = (D + 2)·2⁻²⁴·scale·max_j Σ_d|q_d·k_jd|: the f32 accumulation of a score (bf16 products are
//     exact in f32); shifting scores by ≤ δ moves each softmax weight by a factor within e^{±2δ};
//   (2T + 8)·2⁻²⁴: the f32 sums of P·V and of the softmax denominator over T keys, and exp's ulps;
//   1e-30: exps below bf16's normal range are flushed to zero by vdpbf16ps.
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { attention, buildInfo, Tensor } from '../index.js';
import { expectBitsEqual, randomF32, roundBf16 } from '../test-support/numeric.js';
import { setThreads } from '../threads.js';

const HANG_MS = Number(process.env.NINODES_TEST_HANG_MS ?? 900_000); // the shared hang guard (vitest.shared.ts)

const units = buildInfo().bf16Units;
const U = 2 ** -8;

interface Check {
  /** max |got − ref| / bound over the elements: ≤ 1 passes. */
  worstOfBound: number;
  /** max |got − ref| / A: how much of the bf16 rounding showed up (0 for an f32 run). */
  worstOfA: number;
}

function checkAgainstF64(got: Float32Array, q: Tensor<'f32'>, k: Tensor<'f32'>, v: Tensor<'f32'>, scale: number): Check {
  const [h, s, d] = q.shape as [number, number, number];
  const t = k.shape[1] as number;
  const [qr, kr, vr] = [roundBf16(q.data), roundBf16(k.data), roundBf16(v.data)];
  let worstOfBound = 0;
  let worstOfA = 0;
  const sc = new Float64Array(t);
  for (let hh = 0; hh < h; hh++) {
    for (let i = 0; i < s; i++) {
      const qo = (hh * s + i) * d;
      let m = -Infinity;
      let mag = 0;
      for (let j = 0; j < t; j++) {
        const ko = (hh * t + j) * d;
        let dot = 0;
        let abs = 0;
        for (let c = 0; c < d; c++) {
          const p = (qr[qo + c] as number) * (kr[ko + c] as number);
          dot += p;
          abs += Math.abs(p);
        }
        sc[j] = dot * scale;
        m = Math.max(m, sc[j] as number);
        mag = Math.max(mag, abs * Math.abs(scale));
      }
      let z = 0;
      for (let j = 0; j < t; j++) z += (sc[j] = Math.exp((sc[j] as number) - m));
      const delta = (d + 2) * 2 ** -24 * mag;
      const rel = (U + Math.expm1(2 * delta) + (2 * t + 8) * 2 ** -24) * (1 + U);
      for (let c = 0; c < d; c++) {
        let ref = 0;
        let a = 0;
        for (let j = 0; j < t; j++) {
          const w = (sc[j] as number) / z;
          const vv = vr[(hh * t + j) * d + c] as number;
          ref += w * vv;
          a += w * Math.abs(vv);
        }
        const err = Math.abs((got[qo + c] as number) - ref);
        worstOfBound = Math.max(worstOfBound, err / (rel * a + 1e-30));
        if (a > 0) worstOfA = Math.max(worstOfA, err / a);
      }
    }
  }
  return { worstOfBound, worstOfA };
}

describe.runIf(units)("attention precision 'bf16' (CPU with bf16 units)", () => {
  const cases: Array<[string, number, number, number, number, number]> = [
    // name, H, S, T, D, logit scale
    ['S = 1, T = 1, D = 64', 1, 1, 1, 64, 1],
    ['S = 1, T = 129 (odd, one key past two blocks), D = 128', 2, 1, 129, 128, 1],
    ['S = 33, T = 65, D = 64 (neither a multiple of the tiles)', 3, 33, 65, 64, 1],
    ['S = 70, T = 70, D = 128, sharp logits (the running max moves)', 2, 70, 70, 128, 4],
    ['odd D = 7, S = 5, T = 3', 2, 5, 3, 7, 1],
    ['D = 80 (a 16-lane tail), S = 40, T = 100', 1, 40, 100, 80, 2],
  ];
  for (const [name, h, s, t, d, sharp] of cases) {
    it(`${name}: within the bf16 bound of float64 attention of the rounded inputs`, async () => {
      const q = randomF32([h, s, d], 11 + d, sharp);
      const k = randomF32([h, t, d], 12 + t, sharp);
      const v = randomF32([h, t, d], 13 + s);
      const scale = 1 / Math.sqrt(d);
      const got = await attention(q, k, v, { precision: 'bf16' });
      const { worstOfBound } = checkAgainstF64(got.data, q, k, v, scale);
      if (process.env.NINODES_VERBOSE) console.log(name, worstOfBound);
      expect(worstOfBound).toBeLessThanOrEqual(1);
    });
  }

  it('really rounds P to bf16: the error is of bf16 size, where f32 attention of the same rounded inputs is of f32 size', async () => {
    const [h, s, t, d] = [2, 48, 96, 64];
    const q = randomF32([h, s, d], 21);
    const k = randomF32([h, t, d], 22);
    const v = randomF32([h, t, d], 23);
    const scale = 1 / Math.sqrt(d);
    const bf = checkAgainstF64((await attention(q, k, v, { precision: 'bf16' })).data, q, k, v, scale);
    // The f32 kernel on inputs already rounded to bf16 sees exactly the reference's inputs.
    const r = (x: Tensor<'f32'>): Tensor<'f32'> => Tensor.fromArray('f32', x.shape, Float32Array.from(roundBf16(x.data)));
    const f32 = checkAgainstF64((await attention(r(q), r(k), r(v))).data, q, k, v, scale);
    if (process.env.NINODES_VERBOSE) console.log(`of A: bf16 ${bf.worstOfA}, f32 ${f32.worstOfA}; of bound ${bf.worstOfBound}`);
    expect(f32.worstOfA).toBeLessThan(2 ** -16);
    expect(bf.worstOfA).toBeGreaterThan(2 ** -12);
    expect(bf.worstOfBound).toBeLessThanOrEqual(1);
  });

  it('is bit-identical for any thread count and for any split of the heads', async () => {
    const [h, s, t, d] = [4, 97, 150, 64];
    const q = randomF32([h, s, d], 5, 2);
    const k = randomF32([h, t, d], 6, 2);
    const v = randomF32([h, t, d], 7);
    setThreads(1);
    const one = await attention(q, k, v, { precision: 'bf16' });
    setThreads(3);
    const three = await attention(q, k, v, { precision: 'bf16' });
    setThreads(0);
    expectBitsEqual(one.data, three.data);
    const part = await attention(q.rows(1, 3), k.rows(1, 3), v.rows(1, 3), { precision: 'bf16' });
    expectBitsEqual(part.data, one.data.subarray(s * d, 3 * s * d));
  });

  it('with no keys returns zeros, and writes into out', async () => {
    const out = Tensor.fromArray('f32', [2, 3, 4], new Float32Array(24).fill(7));
    await attention(randomF32([2, 3, 4], 1), Tensor.zeros('f32', [2, 0, 4]), Tensor.zeros('f32', [2, 0, 4]), { precision: 'bf16', out });
    expect(Array.from(out.data)).toEqual(new Array(24).fill(0));
  });
});

describe("attention precision 'bf16': where it cannot run", () => {
  it.runIf(!units)('is BACKEND_UNAVAILABLE on a CPU without bf16 units, never a silent f32 run', async () => {
    const x = randomF32([1, 2, 4], 1);
    await expect(attention(x, x, x, { precision: 'bf16' })).rejects.toMatchObject({ code: 'BACKEND_UNAVAILABLE' });
  });

  it('is BACKEND_UNAVAILABLE when NINODES_SIMD=avx2 caps the path', () => {
    const entry = fileURLToPath(new URL('../../dist/index.js', import.meta.url));
    const script = `
      const k = await import(${JSON.stringify(entry)});
      const x = k.Tensor.f32([1, 2, 4], [1, 2, 3, 4, 5, 6, 7, 8]);
      try { await k.attention(x, x, x, { precision: 'bf16' }); console.log('ran'); }
      catch (e) { console.log(k.buildInfo().bf16Units, e.code); }`;
    const out = execFileSync(process.execPath, ['--input-type=module', '-e', script], { env: { ...process.env, NINODES_SIMD: 'avx2' }, encoding: 'utf8', timeout: HANG_MS });
    expect(out.trim()).toBe('false BACKEND_UNAVAILABLE');
  });

  it('rejects an unknown precision', async () => {
    const x = randomF32([1, 2, 4], 1);
    await expect(attention(x, x, x, { precision: 'f16' as never })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
  });
});
