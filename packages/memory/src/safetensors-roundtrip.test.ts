// Property: any set of tensors (every dtype, shapes with 0 and 1 and odd sizes) written by the
// writer reads back with the same names, dtypes, shapes, bytes and metadata, and the header parser
// agrees with an independent computation of the offsets.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { ELEMENT_DTYPES, type ElementDType, Tensor } from '@ninodes/kernels';
import { afterAll, describe, expect, it } from 'vitest';
import { SAFETENSORS_DTYPES } from './safetensors-dtype.js';
import { SafetensorsFile } from './safetensors-file.js';
import { writeSafetensors } from './safetensors-writer.js';

const dir = mkdtempSync(join(tmpdir(), 'ninodes-rt-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const dtypes = Object.values(SAFETENSORS_DTYPES) as ElementDType[];

describe('safetensors write/read round trip (property)', () => {
  it('reads back exactly what was written', async () => {
    let n = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.uniqueArray(
          fc.record({
            name: fc.string({ minLength: 1, maxLength: 12 }).filter((s) => s !== '__metadata__'),
            dtype: fc.constantFrom(...dtypes),
            shape: fc.array(fc.oneof(fc.constant(0), fc.constant(1), fc.integer({ min: 2, max: 7 })), { maxLength: 3 }),
            seed: fc.nat(),
          }),
          { selector: (t) => t.name, maxLength: 8 },
        ),
        fc.dictionary(fc.string({ maxLength: 6 }).filter((k) => k !== '__proto__'), fc.string({ maxLength: 10 }), { maxKeys: 3 }),
        async (specs, metadata) => {
          const tensors = specs.map((s) => {
            const bytes = s.shape.reduce((a, b) => a * b, 1) * ELEMENT_DTYPES[s.dtype].bytes;
            const raw = Uint8Array.from({ length: bytes }, (_, i) => (s.seed + i * 131) & 0xff);
            return { ...s, raw, tensor: new Tensor(s.dtype, s.shape, raw.buffer) };
          });
          const path = join(dir, `rt-${n++}.safetensors`);
          await writeSafetensors(path, tensors.map((t) => ({ name: t.name, dtype: t.dtype, shape: t.shape, data: () => t.tensor })), { metadata });
          // Independent check of the layout: offsets are the running sum in the given order.
          const file = readFileSync(path);
          const headerBytes = Number(file.readBigUInt64LE(0));
          expect(headerBytes % 8).toBe(0);
          const header = JSON.parse(file.subarray(8, 8 + headerBytes).toString('utf8')) as Record<string, { data_offsets: number[] }>;
          let offset = 0;
          for (const t of tensors) {
            expect(header[t.name]?.data_offsets).toEqual([offset, offset + t.raw.byteLength]);
            offset += t.raw.byteLength;
          }
          expect(file.byteLength).toBe(8 + headerBytes + offset);
          const st = SafetensorsFile.open(path);
          try {
            expect(st.metadata).toEqual(metadata);
            expect(st.entries().length).toBe(tensors.length);
            for (const t of tensors) {
              const back = st.tensor(t.name);
              expect(back.dtype).toBe(t.dtype);
              expect(back.shape).toEqual(t.shape);
              expect(Buffer.from(back.bytes()).equals(Buffer.from(t.raw))).toBe(true);
            }
          } finally {
            st.close();
          }
        },
      ),
      { numRuns: 60, seed: 777 },
    );
  });
});
