import { copyFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isNinodesError } from '@ninodes/kernels';
import { readF32 } from './materialize.js';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { GgufCheckpoint, readGgufHeader } from './gguf-checkpoint.js';
import type { GgufValue } from './gguf-types.js';
import { encodeGguf } from './testing/gguf-bytes.js';
import { fixturePath, readSafetensorsFixture } from './testing/fixtures.js';

const dir = mkdtempSync(join(tmpdir(), 'quant-gguf-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('GgufCheckpoint on the gguf-py fixture', () => {
  const path = fixturePath('gguf', 'quants.gguf');
  const expected = readSafetensorsFixture(fixturePath('gguf', 'quants.expected.safetensors'));

  it('lists entries with torch shapes, kernels dtypes and absolute byte ranges', () => {
    const g = GgufCheckpoint.open(path);
    expect(g.format).toBe('gguf');
    expect(g.entries().map((e) => e.name).sort()).toEqual([...expected.names].sort());
    for (const e of g.entries()) {
      expect(e.shape, e.name).toEqual(expected.info(e.name).shape);
      expect(e.file).toBe(path);
      expect(e.byteOffset % 32).toBe(0);
    }
    expect(g.entry('t.q6_k').dtype).toBe('q6_k');
    expect(g.metadata['test.u64']).toBe('9223372036854775813');
    expect(g.metadata['test.arr_str']).toBe('["a","bc",""]');
    expect(g.metadata['general.architecture']).toBe('ninodes-test');
    expect(readGgufHeader(path).tensors).toHaveLength(16);
  });

  it('decodes every tensor to quants.expected.safetensors (1e-6 relative)', async () => {
    const g = GgufCheckpoint.open(path);
    for (const e of g.entries()) {
      const d = await readF32(g, e.name);
      expect(d.shape, e.name).toEqual(e.shape);
      const want = expected.f32(e.name);
      const got = d.data as Float32Array;
      expect(got.length, e.name).toBe(want.length);
      let worst = 0;
      for (let i = 0; i < want.length; i++) {
        const w = want[i] as number;
        const err = Math.abs((got[i] as number) - w) / Math.max(Math.abs(w), 1e-30);
        if (Math.abs((got[i] as number) - w) > 0 && err > worst) worst = err;
      }
      expect(worst, e.name).toBeLessThanOrEqual(1e-6);
    }
  });

  it('returns F32 tensors as the exact stored values', () => {
    const g = GgufCheckpoint.open(path);
    expect([...(g.tensor('t.f32').data as Float32Array)]).toEqual([...expected.f32('t.f32')]);
  });

  it('names the missing tensor and refuses a changed or closed file', () => {
    const copy = join(dir, 'q.gguf');
    copyFileSync(path, copy);
    const g = GgufCheckpoint.open(copy);
    const code = (f: () => unknown) => {
      try {
        f();
      } catch (e) {
        return isNinodesError(e) ? e.code : 'OTHER';
      }
      return 'NONE';
    };
    expect(code(() => g.tensor('nope'))).toBe('TENSOR_NOT_FOUND');
    expect(g.tensor('t.f32').numel).toBe(1536);
    writeFileSync(copy, 'GGUF', { flag: 'a' });
    expect(code(() => g.tensor('t.f32'))).toMatch(/^FILE_(MODIFIED|TRUNCATED|REPLACED)$/);
    const h = GgufCheckpoint.open(copy);
    h.close();
    expect(code(() => h.tensor('t.f32'))).toBe('FILE_CLOSED');
  });
});

describe('GgufCheckpoint views', () => {
  it('are zero-copy views that become empty on close', () => {
    const g = GgufCheckpoint.open(fixturePath('gguf', 'quants.gguf'));
    const t = g.tensor('t.q4_k');
    expect(t.byteLength).toBe(3 * 2 * 144);
    const first = t.bytes()[0];
    expect(first).toBe(g.tensor('t.q4_k').bytes()[0]);
    g.close();
    expect(t.disposed).toBe(true);
  });

  it('open fails with a typed error on a malformed or missing file', () => {
    const bad = join(dir, 'bad.gguf');
    writeFileSync(bad, 'GGUF\u0001\u0000\u0000\u0000');
    expect(() => GgufCheckpoint.open(bad)).toThrow(expect.objectContaining({ code: 'GGUF_UNSUPPORTED_VERSION' }));
    expect(() => GgufCheckpoint.open(join(dir, 'missing.gguf'))).toThrow(expect.objectContaining({ code: 'FILE_NOT_FOUND' }));
  });
});

describe('GgufCheckpoint property: random valid files', () => {
  // ggml type id, kernels dtype, block elements, block bytes
  const TYPES = [
    [0, 'f32', 1, 4],
    [1, 'f16', 1, 2],
    [30, 'bf16', 1, 2],
    [8, 'q8_0', 32, 34],
    [12, 'q4_k', 256, 144],
    [23, 'iq4_xs', 256, 136],
  ] as const;
  it('entries and tensor bytes round-trip (dims reversed, orig_shape honoured)', () => {
    let file = 0;
    fc.assert(
      fc.property(
        fc.array(
          fc.record({
            type: fc.constantFrom(...(TYPES as readonly (typeof TYPES)[number][])),
            blocks: fc.integer({ min: 1, max: 3 }),
            rows: fc.array(fc.integer({ min: 1, max: 3 }), { maxLength: 2 }),
            fold: fc.boolean(),
          }),
          { minLength: 1, maxLength: 4 },
        ),
        fc.constantFrom(16, 32, 64),
        (specs, alignment) => {
          const tensors = specs.map((sp, i) => {
            const ggmlType: number = sp.type[0];
            const blockElements: number = sp.type[2];
            const blockBytes: number = sp.type[3];
            const ne = [sp.blocks * blockElements, ...sp.rows];
            const count = ne.reduce((a, b) => a * b, 1) / blockElements;
            const data = Uint8Array.from({ length: count * blockBytes }, (_, j) => (j * 31 + i * 7) & 0xff);
            return { name: `t${i}.weight`, ne, ggmlType, data };
          });
          // Fold the first tensor with an orig_shape that splits its outermost torch dim in two.
          const first = tensors[0] as (typeof tensors)[number];
          const torch0 = [...first.ne].reverse();
          const orig = specs[0]?.fold && torch0.length > 1 ? [1, ...torch0] : undefined;
          const metadata: [string, GgufValue][] = orig
            ? [[`comfy.gguf.orig_shape.${first.name}`, { type: 'array', itemType: 'i32', value: orig.map((v) => ({ type: 'i32', value: v })) }]]
            : [];
          const path = join(dir, `prop-${file++}.gguf`);
          writeFileSync(path, encodeGguf({ tensors, alignment, metadata }));
          const g = GgufCheckpoint.open(path);
          try {
            tensors.forEach((t, i) => {
              const e = g.entry(t.name);
              expect(e.dtype).toBe(specs[i]?.type[1]);
              expect(e.shape).toEqual(i === 0 && orig ? orig : [...t.ne].reverse());
              expect(e.byteLength).toBe(t.data.length);
              expect([...g.tensor(t.name).bytes()]).toEqual([...t.data]);
            });
          } finally {
            g.close();
          }
        },
      ),
      { numRuns: 60 },
    );
  });
});
