// Test-only: the honest comparison of an int8 convrot linear with comfy-kitchen's fixture.
// comfy-kitchen rotates with a dense Hadamard product, the kernels with a fast transform; the two
// differ by fp32 rounding, so re-quantized operands may differ by ±1 on ≤0.1% of elements (the
// fixture's stated tolerance). The chain asserted here leaves no slack beyond that:
//  1. the fixture is self-consistent: y_int8_convrot == f(acc_i32, x_scale, weight_scale, bias);
//  2. the op's output == f(our qx, our x_scale, our qweight, our weight_scale, bias), bit for bit;
//  3. our operands match the fixture's within the stated tolerance;
//  4. every output whose operands all match is bit-identical to y_int8_convrot.
import { type Tensor, hadamardSync, quantizeRowsInt8 } from '@ninodes/kernels';
import { expect } from 'vitest';
import type { SafetensorsFixture } from './fixtures.js';

/** float(acc) * (x_scale * w_scale) + bias in fp32, in that order; acc exact (|acc| < 2^24 here). */
function formula(qx: Int8Array, xs: Float32Array, qw: Int8Array, ws: Float32Array, bias: Float32Array, m: number, n: number, k: number): Float32Array {
  const y = new Float32Array(m * n);
  for (let i = 0; i < m; i++)
    for (let j = 0; j < n; j++) {
      let acc = 0;
      for (let c = 0; c < k; c++) acc += (qx[i * k + c] as number) * (qw[j * k + c] as number);
      const unit = Math.fround((xs[i] as number) * (ws[j] as number));
      y[i * n + j] = Math.fround(Math.fround(Math.fround(acc) * unit) + (bias[j] as number));
    }
  return y;
}

function countOffByOne(a: Int8Array, b: Int8Array): number {
  let n = 0;
  for (let i = 0; i < a.length; i++) {
    const d = Math.abs((a[i] as number) - (b[i] as number));
    expect(d).toBeLessThanOrEqual(1);
    n += d;
  }
  return n;
}

export interface Int8CheckResult {
  qweightMismatches: number;
  qxMismatches: number;
  exactOutputs: number;
  outputs: number;
}

export function checkInt8ConvrotAgainstFixture(fx: SafetensorsFixture, layer: string, y: Tensor, qw: Int8Array, ws: Float32Array): Int8CheckResult {
  const [n, k] = fx.info(`${layer}.w`).shape as [number, number];
  const m = fx.info(`${layer}.x`).shape[0] as number;
  const bias = fx.f32(`${layer}.bias`);
  const qxF = fx.tensor(`${layer}.qx`).data as Int8Array;
  const xsF = fx.f32(`${layer}.x_scale`);
  const qwF = fx.tensor(`${layer}.qweight`).data as Int8Array;
  const wsF = fx.f32(`${layer}.weight_scale`);
  const yF = fx.f32(`${layer}.y_int8_convrot`);

  // 1. fixture self-consistency (also checks acc_i32).
  expect([...formula(qxF, xsF, qwF, wsF, bias, m, n, k)]).toEqual([...yF]);

  // 2. our activations, as the kernels quantize them online, and the op's output from our operands.
  const { q, scale } = quantizeRowsInt8(hadamardSync(fx.tensor(`${layer}.x`), { group: 256 }));
  const qx = q.data;
  const xs = scale.data;
  expect([...(y.data as Float32Array)]).toEqual([...formula(qx, xs, qw, ws, bias, m, n, k)]);

  // 3. operands within the stated tolerance.
  const qxMismatches = countOffByOne(qx, qxF);
  const qweightMismatches = countOffByOne(qw, qwF);
  expect(qxMismatches).toBeLessThanOrEqual(Math.floor(0.001 * qx.length));
  expect(qweightMismatches).toBeLessThanOrEqual(Math.floor(0.001 * qw.length));
  for (let i = 0; i < m; i++) expect(Math.abs((xs[i] as number) / (xsF[i] as number) - 1)).toBeLessThan(1e-6);
  for (let j = 0; j < n; j++) expect(Math.abs((ws[j] as number) / (wsF[j] as number) - 1)).toBeLessThan(1e-6);

  // 4. outputs whose operands all match are bit-identical.
  const rowSame = (a: Int8Array, b: Int8Array, r: number) => a.subarray(r * k, (r + 1) * k).every((v, c) => v === b[r * k + c]);
  let exactOutputs = 0;
  const yd = y.data as Float32Array;
  for (let i = 0; i < m; i++) {
    const xClean = xs[i] === xsF[i] && rowSame(qx, qxF, i);
    for (let j = 0; j < n; j++) {
      if (xClean && ws[j] === wsF[j] && rowSame(qw, qwF, j)) {
        expect(yd[i * n + j], `y[${i},${j}]`).toBe(yF[i * n + j]);
        exactOutputs++;
      }
    }
  }
  return { qweightMismatches, qxMismatches, exactOutputs, outputs: m * n };
}
