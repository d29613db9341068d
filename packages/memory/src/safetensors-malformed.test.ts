// A corpus of malformed safetensors files, each built to break exactly one rule, plus truncations
// of a valid file at every boundary and random byte mutations. Every file must give its specific
// typed error (never a crash, never a generic error).
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { isNinodesError } from '@ninodes/kernels';
import { afterAll, describe, expect, it } from 'vitest';
import { SAFETENSORS_ERRORS } from './safetensors-header.js';
import { SafetensorsFile } from './safetensors-file.js';

const dir = mkdtempSync(join(tmpdir(), 'ninodes-malformed-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const fixture = join(process.env.NINODES_FIXTURES as string, 'safetensors', 'dtypes.safetensors');

function file(header: string | Uint8Array, dataBytes: number, lengthField?: bigint): Uint8Array {
  const json = typeof header === 'string' ? new TextEncoder().encode(header) : header;
  const out = new Uint8Array(8 + json.byteLength + dataBytes);
  new DataView(out.buffer).setBigUint64(0, lengthField ?? BigInt(json.byteLength), true);
  out.set(json, 8);
  return out;
}
const h = (o: unknown): string => JSON.stringify(o);
const f32 = (shape: number[], offsets: unknown): unknown => ({ dtype: 'F32', shape, data_offsets: offsets });

let counter = 0;
function openBytes(bytes: Uint8Array): { error: unknown; path: string } {
  const path = join(dir, `case-${counter++}.safetensors`);
  writeFileSync(path, bytes);
  try {
    SafetensorsFile.open(path).close();
    return { error: undefined, path };
  } catch (error) {
    return { error, path };
  }
}

// [description, bytes, expected code, tensor the error must name (if any)]
const RULES: [string, Uint8Array, keyof typeof SAFETENSORS_ERRORS, string | undefined][] = [
  ['empty file', new Uint8Array(0), 'SAFETENSORS_NO_LENGTH', undefined],
  ['5-byte file', new Uint8Array(5), 'SAFETENSORS_NO_LENGTH', undefined],
  ['header length over 100 MB', file('{}', 0, 100_000_001n), 'SAFETENSORS_HEADER_TOO_LARGE', undefined],
  ['header length 2^64-1', file('{}', 0, 2n ** 64n - 1n), 'SAFETENSORS_HEADER_TOO_LARGE', undefined],
  ['header past the end', file('{}', 0, 1000n), 'SAFETENSORS_HEADER_PAST_END', undefined],
  ['header not UTF-8', file(new Uint8Array([0x7b, 0xff, 0xfe, 0x7d]), 0), 'SAFETENSORS_HEADER_NOT_UTF8', undefined],
  ['header starting with a space', file(' {}', 0), 'SAFETENSORS_HEADER_NOT_OBJECT', undefined],
  ['header not JSON', file('{"a":', 0), 'SAFETENSORS_HEADER_NOT_JSON', undefined],
  ['header empty', file('', 0), 'SAFETENSORS_HEADER_NOT_OBJECT', undefined],
  ['header with trailing garbage', file('{} x', 0), 'SAFETENSORS_HEADER_NOT_JSON', undefined],
  ['header an array', file('[1,2]', 0), 'SAFETENSORS_HEADER_NOT_OBJECT', undefined],
  ['header a string', file('"x"', 0), 'SAFETENSORS_HEADER_NOT_OBJECT', undefined],
  ['entry a number', file(h({ w: 5 }), 0), 'SAFETENSORS_ENTRY_NOT_OBJECT', 'w'],
  ['entry with an extra key', file(h({ w: { ...(f32([1], [0, 4]) as object), extra: 1 } }), 4), 'SAFETENSORS_ENTRY_NOT_OBJECT', 'w'],
  ['entry missing data_offsets', file(h({ w: { dtype: 'F32', shape: [1] } }), 4), 'SAFETENSORS_ENTRY_NOT_OBJECT', 'w'],
  ['unknown dtype F128', file(h({ w: { dtype: 'F128', shape: [1], data_offsets: [0, 16] } }), 16), 'SAFETENSORS_UNKNOWN_DTYPE', 'w'],
  ['lower-case dtype', file(h({ w: { dtype: 'f32', shape: [1], data_offsets: [0, 4] } }), 4), 'SAFETENSORS_UNKNOWN_DTYPE', 'w'],
  ['negative dimension', file(h({ w: f32([-1], [0, 4]) }), 4), 'SAFETENSORS_INVALID_SHAPE', 'w'],
  ['fractional dimension', file(h({ w: f32([1.5], [0, 4]) }), 4), 'SAFETENSORS_INVALID_SHAPE', 'w'],
  ['shape a string', file(h({ w: { dtype: 'F32', shape: '1', data_offsets: [0, 4] } }), 4), 'SAFETENSORS_INVALID_SHAPE', 'w'],
  ['offsets reversed', file(h({ w: f32([1], [4, 0]) }), 4), 'SAFETENSORS_INVALID_OFFSETS', 'w'],
  ['offsets one number', file(h({ w: f32([1], [4]) }), 4), 'SAFETENSORS_INVALID_OFFSETS', 'w'],
  ['offsets negative', file(h({ w: f32([1], [-4, 0]) }), 4), 'SAFETENSORS_INVALID_OFFSETS', 'w'],
  ['offsets past the data', file(h({ w: f32([25], [0, 100]) }), 4), 'SAFETENSORS_OFFSETS_PAST_END', 'w'],
  ['size mismatch', file(h({ w: f32([2], [0, 4]) }), 4), 'SAFETENSORS_SIZE_MISMATCH', 'w'],
  ['overlap', file(h({ a: f32([2], [0, 8]), b: f32([2], [4, 12]) }), 12), 'SAFETENSORS_OVERLAP', 'b'],
  ['hole between tensors', file(h({ a: f32([1], [0, 4]), b: f32([1], [8, 12]) }), 12), 'SAFETENSORS_HOLE', 'b'],
  ['hole at the start', file(h({ a: f32([1], [4, 8]) }), 8), 'SAFETENSORS_HOLE', 'a'],
  ['trailing bytes', file(h({ a: f32([1], [0, 4]) }), 8), 'SAFETENSORS_TRAILING_BYTES', 'a'],
  ['metadata with a number', file(h({ __metadata__: { k: 1 } }), 0), 'SAFETENSORS_INVALID_METADATA', undefined],
  ['a tensor named twice', file('{"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}', 4), 'SAFETENSORS_DUPLICATE_KEY', undefined],
  ['a field named twice', file('{"w":{"dtype":"F32","dtype":"I32","shape":[1],"data_offsets":[0,4]}}', 4), 'SAFETENSORS_DUPLICATE_KEY', undefined],
  ['a metadata key twice, escaped differently', file('{"__metadata__":{"k":"a","\\u006b":"b"}}', 0), 'SAFETENSORS_DUPLICATE_KEY', undefined],
  ['metadata an array', file(h({ __metadata__: ['k'] }), 0), 'SAFETENSORS_INVALID_METADATA', undefined],
];

describe('malformed safetensors corpus', () => {
  it('covers every rule', () => {
    expect(RULES.length).toBeGreaterThanOrEqual(25);
    expect(new Set(RULES.map((r) => r[2]))).toEqual(new Set(Object.keys(SAFETENSORS_ERRORS)));
  });

  it.each(RULES)('%s -> its error', (_name, bytes, code, tensor) => {
    const { error, path } = openBytes(bytes);
    expect(isNinodesError(error), String(error)).toBe(true);
    expect((error as { code: string }).code).toBe(code);
    expect((error as Error).message).toContain(path);
    expect((error as Error).message).toContain(SAFETENSORS_ERRORS[code]);
    if (tensor !== undefined) {
      expect((error as { where: string }).where).toBe(`${path} :: ${tensor}`);
      expect((error as Error).message).toContain(`tensor '${tensor}'`);
    }
  });

  it('a valid file truncated at every boundary gives the error of the region it cuts', () => {
    const bytes = new Uint8Array(readFileSync(fixture));
    const headerBytes = Number(new DataView(bytes.buffer).getBigUint64(0, true));
    const header = JSON.parse(new TextDecoder().decode(bytes.subarray(8, 8 + headerBytes))) as Record<string, { data_offsets: [number, number] }>;
    const boundaries = new Set<number>([0, 1, 7, 8, 9, 8 + headerBytes - 1, 8 + headerBytes]);
    for (const [name, e] of Object.entries(header)) {
      if (name === '__metadata__') continue;
      for (const o of e.data_offsets) for (const d of [-1, 0, 1]) boundaries.add(8 + headerBytes + o + d);
    }
    let checked = 0;
    for (const cut of [...boundaries].sort((a, b) => a - b)) {
      if (cut < 0 || cut >= bytes.byteLength) continue;
      const expected = cut < 8 ? 'SAFETENSORS_NO_LENGTH' : cut < 8 + headerBytes ? 'SAFETENSORS_HEADER_PAST_END' : 'SAFETENSORS_OFFSETS_PAST_END';
      const { error } = openBytes(bytes.slice(0, cut));
      expect((error as { code?: string })?.code, `cut at ${cut}`).toBe(expected);
      checked++;
    }
    expect(checked).toBeGreaterThan(40);
  });

  it('random mutations of a valid file open or fail with a typed safetensors error, never crash', () => {
    const bytes = new Uint8Array(readFileSync(fixture));
    const headerBytes = Number(new DataView(bytes.buffer).getBigUint64(0, true));
    const codes = new Set<string>();
    fc.assert(
      fc.property(
        fc.array(fc.record({ at: fc.integer({ min: 0, max: 8 + headerBytes - 1 }), byte: fc.integer({ min: 0, max: 255 }) }), { minLength: 1, maxLength: 4 }),
        (edits) => {
          const copy = bytes.slice();
          for (const { at, byte } of edits) copy[at] = byte;
          const { error } = openBytes(copy);
          if (error === undefined) return;
          expect(isNinodesError(error), String(error)).toBe(true);
          const code = (error as { code: string }).code;
          expect(Object.keys(SAFETENSORS_ERRORS)).toContain(code);
          codes.add(code);
        },
      ),
      { numRuns: 300, seed: 20261129 },
    );
    expect(codes.size).toBeGreaterThan(3);
  });
});
