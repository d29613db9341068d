import { describe, expect, it } from 'vitest';
import { GGUF_QUANTIZE_TARGETS, type GgufQuantizeTarget, quantizeGguf, quantizeGgufSync } from './gguf-quantize.js';
import { dequantize } from './gguf-dequantize.js';
import { setThreads } from './threads.js';
import { Tensor } from './tensor.js';
import { f32Of, fixturePath, readSafetensors } from './test-support/fixture-files.js';

// Expected bytes from ggml itself (quantize_row_q8_0_ref / quantize_row_q4_K_ref compiled from its
// source) and gguf-py (Q8_0), made by fixtures/gguf/make_quantize_fixtures.py.
const fixture = readSafetensors(fixturePath('gguf', 'quantize.safetensors')).tensors;
const entry = (name: string) => {
  const t = fixture.get(name);
  if (t === undefined) throw new Error(`quantize.safetensors has no '${name}'`);
  return t;
};
const input = Tensor.fromArray('f32', entry('input').shape, f32Of(entry('input')));
const expectedBytes = (kind: GgufQuantizeTarget): Uint8Array => entry(kind).bytes;

/** Indices of the bytes that differ (first few), to make a failure readable. */
function differing(a: Uint8Array, b: Uint8Array): number[] {
  const out: number[] = [];
  for (let i = 0; i < Math.max(a.length, b.length) && out.length < 8; i++) if (a[i] !== b[i]) out.push(i);
  return out;
}

describe('GGUF block encode against ggml and gguf-py', () => {
  for (const kind of GGUF_QUANTIZE_TARGETS) {
    it(`${kind}: every byte equals ggml's reference quantizer (128 rows: zeros, constants, ties, subnormal and large scales)`, async () => {
      const q = await quantizeGguf(input, kind);
      expect(q.dtype).toBe(kind);
      expect(q.shape).toEqual(input.shape);
      expect(differing(q.bytes(), expectedBytes(kind))).toEqual([]);
    });

    it(`${kind}: the same bytes on one thread and many, sync and async`, async () => {
      const before = setThreads(1);
      try {
        const one = quantizeGgufSync(input, kind);
        setThreads(4);
        const many = await quantizeGguf(input, kind);
        expect(differing(one.bytes(), many.bytes())).toEqual([]);
      } finally {
        setThreads(before);
      }
    });

    it(`${kind}: decodes to what gguf-py decodes from ggml's bytes`, async () => {
      const d = await dequantize(await quantizeGguf(input, kind), 'f32');
      expect(Array.from(d.data)).toEqual(Array.from(f32Of(entry(`${kind}_dequantized`))));
    });
  }

  it('rejects rows that do not fill whole blocks, other dtypes and targets, and non-finite values', async () => {
    expect(() => quantizeGgufSync(Tensor.zeros('f32', [2, 48]), 'q8_0')).toThrow(expect.objectContaining({ code: 'BLOCK_MISALIGNED' }));
    expect(() => quantizeGgufSync(Tensor.zeros('f32', [1, 128]), 'q4_k')).toThrow(expect.objectContaining({ code: 'BLOCK_MISALIGNED' }));
    expect(() => quantizeGgufSync(Tensor.zeros('bf16', [1, 32]), 'q8_0')).toThrow(expect.objectContaining({ code: 'DTYPE_MISMATCH' }));
    expect(() => quantizeGgufSync(Tensor.zeros('f32', [1, 32]), 'q4_0' as GgufQuantizeTarget)).toThrow(expect.objectContaining({ code: 'UNSUPPORTED_QUANTIZE_TARGET' }));
    const bad = Tensor.zeros('f32', [1, 256]);
    (bad.data as Float32Array)[77] = Number.NaN;
    await expect(quantizeGguf(bad, 'q4_k')).rejects.toMatchObject({ code: 'NON_FINITE_WEIGHT' });
  });
});
