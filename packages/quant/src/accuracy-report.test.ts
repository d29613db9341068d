import { Tensor } from '@ninodes/kernels';
import { describe, expect, it } from 'vitest';
import { accuracyReport, normalStream, sampleActivations } from './accuracy-report.js';
import { fixturePath, readSafetensorsFixture } from './testing/fixtures.js';
import { memoryCheckpoint } from './testing/memory-checkpoint.js';

const fx = readSafetensorsFixture(fixturePath('int8', 'int8_convrot.safetensors'));

describe('accuracyReport', () => {
  const odd = Tensor.fromArray('f32', [4, 100], Float32Array.from({ length: 400 }, (_, i) => Math.cos(i)));
  const src = memoryCheckpoint('m.safetensors', { 'lin_a.weight': fx.tensor('lin_a.w'), 'lin_b.weight': fx.tensor('lin_b.w'), 'odd.weight': odd });

  it('ranks convrot below plain int8 when inputs have outlier channels', async () => {
    const rows = await accuracyReport(src, { samples: 16 });
    expect(rows.map((r) => r.layer)).toEqual(['lin_a', 'lin_b', 'odd']);
    for (const r of rows.slice(0, 2)) {
      const { int8_rowwise: plain, int8_convrot: rot, f8_e4m3fn: fp8 } = r.error;
      expect(plain).toBeGreaterThan(0);
      expect(rot).toBeGreaterThan(0);
      expect(rot as number).toBeLessThan(plain as number);
      // e4m3 keeps 3 mantissa bits: a few percent; int8 plain with 20x outliers is worse than that.
      expect(fp8).toBeLessThan(0.05);
    }
    expect(rows[2]?.notes.int8_convrot).toMatch(/not a multiple of 256/);
    expect(rows[2]?.error.int8_convrot).toBeUndefined();
  });

  it('on the fixture activations, plain vs convrot errors equal comfy-kitchen\'s (~8.6% -> ~1.3%)', async () => {
    const withBias = memoryCheckpoint('m.safetensors', {
      'lin_a.weight': fx.tensor('lin_a.w'),
      'lin_a.bias': fx.tensor('lin_a.bias'),
      'lin_b.weight': fx.tensor('lin_b.w'),
      'lin_b.bias': fx.tensor('lin_b.bias'),
    });
    const inputs = { lin_a: fx.tensor('lin_a.x') as Tensor<'f32'>, lin_b: fx.tensor('lin_b.x') as Tensor<'f32'> };
    const rows = await accuracyReport(withBias, { inputs, formats: ['int8_rowwise', 'int8_convrot'] });
    for (const r of rows) {
      const ref = fx.f32(`${r.layer}.y_fp32`);
      const err = (y: Float32Array) => Math.sqrt(y.reduce((a, v, i) => a + (v - (ref[i] as number)) ** 2, 0) / ref.reduce((a, v) => a + v * v, 0));
      const plain = err(fx.f32(`${r.layer}.y_int8_plain`));
      const rot = err(fx.f32(`${r.layer}.y_int8_convrot`));
      expect(plain).toBeGreaterThan(0.08);
      expect(rot).toBeLessThan(0.014);
      expect(r.error.int8_rowwise as number).toBeCloseTo(plain, 4);
      expect(r.error.int8_convrot as number).toBeCloseTo(rot, 4);
    }
  });

  it('samples reproducible activations with the requested outliers', () => {
    const a = sampleActivations(4, 300, { seed: 3, outlierFraction: 0.01, outlierScale: 50 });
    const b = sampleActivations(4, 300, { seed: 3, outlierFraction: 0.01, outlierScale: 50 });
    expect([...(a.data as Float32Array)]).toEqual([...(b.data as Float32Array)]);
    const next = normalStream(7);
    const xs = Array.from({ length: 20000 }, next);
    const mean = xs.reduce((p, c) => p + c, 0) / xs.length;
    const variance = xs.reduce((p, c) => p + (c - mean) ** 2, 0) / xs.length;
    expect(Math.abs(mean)).toBeLessThan(0.03);
    expect(Math.abs(variance - 1)).toBeLessThan(0.05);
  });
});
