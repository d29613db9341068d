import { BLOCK_DTYPES, type BlockDType, dequantize } from '@ninodes/kernels';
import { describe, expect, it } from 'vitest';
import { randomBlockTensor } from './synthetic-blocks.js';

/** fp16 bits -> number, from the definition. */
function half(bits: number): number {
  const e = (bits >> 10) & 0x1f;
  const m = bits & 0x3ff;
  const v = e === 0 ? m * 2 ** -24 : e === 31 ? (m ? Number.NaN : Infinity) : (1 + m / 1024) * 2 ** (e - 15);
  return bits & 0x8000 ? -v : v;
}

describe('randomBlockTensor', () => {
  it.each(Object.keys(BLOCK_DTYPES) as BlockDType[])('%s: sane scales, finite decode, reproducible', async (dtype) => {
    const shape = [3, 512];
    const t = randomBlockTensor(dtype, shape, 9);
    expect(t.dtype).toBe(dtype);
    expect([...randomBlockTensor(dtype, shape, 9).bytes()]).toEqual([...t.bytes()]);
    expect([...randomBlockTensor(dtype, shape, 10).bytes()]).not.toEqual([...t.bytes()]);
    // The first block's d field (offset 0 for most types) decodes to 0.001..0.03.
    const off = { q2_k: 80, q3_k: 108, q6_k: 208 }[dtype as 'q2_k'] ?? 0;
    const d = half(new DataView(t.buffer).getUint16(off, true));
    expect(d).toBeGreaterThanOrEqual(2 ** -10);
    expect(d).toBeLessThan(2 ** -5);
    const y = (await dequantize(t as never, 'f32')).data as Float32Array;
    expect(y.length).toBe(1536);
    expect(y.every((v) => Number.isFinite(v) && Math.abs(v) < 256)).toBe(true);
    expect(y.some((v) => v !== 0)).toBe(true);
  });
});
