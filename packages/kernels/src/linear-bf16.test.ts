import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { buildInfo, cast, linear, Tensor } from './index.js';
import { roundBf16 } from './test-support/numeric.js';

function rand(n: number, seed: number): Float32Array {
  let s = seed;
  return Float32Array.from({ length: n }, () => ((((s = (Math.imul(s, 1103515245) + 12345) | 0) >>> 8) / 2 ** 24) * 2 - 1));
}

const units = buildInfo().bf16Units;

describe("linear precision 'bf16'", () => {
  it.runIf(units)('equals float64 of bf16-rounded inputs times bf16 weights within the f32 accumulation bound', async () => {
    for (const [m, k, n, withBias] of [
      [1, 1, 1, false],
      [3, 17, 5, true],
      // Up to 4 rows take the dot-product path: K with and without 32/64-wide tails, one row and four.
      [1, 768, 300, true],
      [1, 97, 65, false],
      [4, 1000, 33, true],
      [2, 64, 7, false],
      [5, 160, 50, true],
      [33, 64, 40, true],
      [70, 300, 129, false],
    ] as const) {
      const x = Tensor.f32([m, k], rand(m * k, m + k));
      const w = cast(Tensor.f32([n, k], rand(n * k, n * 7 + 1)), 'bf16');
      const bias = withBias ? Tensor.f32([n], rand(n, 99)) : undefined;
      const y = (await linear(x, w, bias, { precision: 'bf16' })).data;
      const xr = roundBf16(x.data);
      const wr = roundBf16(cast(w, 'f32').data);
      for (let i = 0; i < m; i++) {
        for (let j = 0; j < n; j++) {
          let exact = bias === undefined ? 0 : (bias.data[j] as number);
          let mag = Math.abs(exact);
          for (let t = 0; t < k; t++) {
            const p = (xr[i * k + t] as number) * (wr[j * k + t] as number);
            exact += p;
            mag += Math.abs(p);
          }
          expect(Math.abs((y[i * n + j] as number) - exact)).toBeLessThanOrEqual((k + 2) * 2 ** -23 * mag + 1e-30);
        }
      }
    }
  });

  it.runIf(units)('differs from the exact f32 multiply by the input rounding, as PyTorch bf16 mode does', async () => {
    const x = Tensor.f32([8, 256], rand(8 * 256, 5));
    const w = cast(Tensor.f32([16, 256], rand(16 * 256, 6)), 'bf16');
    const a = (await linear(x, w, undefined, { precision: 'bf16' })).data;
    const b = (await linear(x, w)).data;
    let diff = 0;
    let norm = 0;
    a.forEach((v, i) => {
      diff += (v - (b[i] as number)) ** 2;
      norm += (b[i] as number) ** 2;
    });
    const rel = Math.sqrt(diff / norm);
    expect(rel).toBeGreaterThan(0);
    expect(rel).toBeLessThan(2 ** -7);
  });

  it('needs bf16 weights', async () => {
    await expect(linear(Tensor.f32([1, 4], [1, 2, 3, 4]), Tensor.f32([1, 4], [1, 1, 1, 1]), undefined, { precision: 'bf16' })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
  });

  it.runIf(!units)('is BACKEND_UNAVAILABLE on a CPU without bf16 units, never a silent f32 run', async () => {
    const w = cast(Tensor.f32([1, 4], [1, 1, 1, 1]), 'bf16');
    await expect(linear(Tensor.f32([1, 4], [1, 2, 3, 4]), w, undefined, { precision: 'bf16' })).rejects.toMatchObject({ code: 'BACKEND_UNAVAILABLE' });
  });

  it('is BACKEND_UNAVAILABLE when NINODES_SIMD=avx2 caps the path', () => {
    const entry = fileURLToPath(new URL('../dist/index.js', import.meta.url));
    const script = `
      const k = await import(${JSON.stringify(entry)});
      const w = k.cast(k.Tensor.f32([1, 4], [1, 1, 1, 1]), 'bf16');
      try { await k.linear(k.Tensor.f32([1, 4], [1, 2, 3, 4]), w, undefined, { precision: 'bf16' }); console.log('ran'); }
      catch (e) { console.log(k.buildInfo().bf16Units, e.code); }`;
    const out = execFileSync(process.execPath, ['--input-type=module', '-e', script], { env: { ...process.env, NINODES_SIMD: 'avx2' }, encoding: 'utf8' });
    expect(out.trim()).toBe('false BACKEND_UNAVAILABLE');
  });
});
