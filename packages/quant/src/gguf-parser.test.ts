import { readFileSync } from 'node:fs';
import { isNinodesError } from '@ninodes/kernels';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { GgufNeedMoreBytes, parseGguf } from './gguf-parser.js';
import { plainGgufValue, type GgufValue } from './gguf-types.js';
import { encodeGguf, type TestGgufTensor } from './testing/gguf-bytes.js';
import { fixturePath } from './testing/fixtures.js';

function codeOf(f: () => unknown): string {
  try {
    f();
  } catch (e) {
    if (isNinodesError(e)) return e.code;
    throw e;
  }
  return 'NO_ERROR';
}

const f32Tensor = (name: string, ne: number[]): TestGgufTensor => ({
  name,
  ne,
  ggmlType: 0,
  data: new Uint8Array(ne.reduce((a, b) => a * b, 1) * 4),
});

describe('parseGguf on the gguf-py fixture', () => {
  const bytes = new Uint8Array(readFileSync(fixturePath('gguf', 'quants.gguf')));
  const expected = JSON.parse(readFileSync(fixturePath('gguf', 'quants.metadata.json'), 'utf8')) as Record<string, unknown>;
  const h = parseGguf(bytes);

  it('reads every metadata value exactly (64-bit as bigint)', () => {
    for (const [key, want] of Object.entries(expected)) {
      if (key === 'alignment' || key === 'torch_shapes') continue;
      const v = h.metadata.get(key);
      expect(v, key).toBeDefined();
      const got = plainGgufValue(v as GgufValue);
      if (typeof got === 'bigint') expect(got.toString(), key).toBe(want);
      else if (key === 'test.f32') expect(got).toBe(Math.fround(want as number));
      else expect(got, key).toEqual(want);
    }
    expect(h.metadata.get('test.u64')).toEqual({ type: 'u64', value: 9223372036854775813n });
    expect(h.metadata.get('test.i64')?.type).toBe('i64');
    expect(h.metadata.get('test.arr_i32')).toMatchObject({ type: 'array', itemType: 'i32' });
  });

  it('has the alignment and torch shapes (orig_shape honoured)', () => {
    expect(h.version).toBe(3);
    expect(h.alignment).toBe(expected.alignment);
    const shapes = expected.torch_shapes as Record<string, number[]>;
    expect(h.tensors.map((t) => t.name).sort()).toEqual(Object.keys(shapes).sort());
    for (const t of h.tensors) {
      expect(t.shape, t.name).toEqual(shapes[t.name]);
      expect(t.byteOffset % h.alignment).toBe(0);
      expect(t.ggmlTypeName.toLowerCase(), t.name).toBe(t.name === 't.reshaped' ? 'q8_0' : t.name.slice(2));
    }
    const reshaped = h.tensors.find((t) => t.name === 't.reshaped');
    expect(reshaped?.storedShape).toEqual([4, 256]);
    expect(reshaped?.ne).toEqual([256, 4]);
  });

  it('asks for more bytes when given only a prefix of the file', () => {
    expect(() => parseGguf(bytes.subarray(0, 100), { fileSize: bytes.length })).toThrow(GgufNeedMoreBytes);
  });
});

describe('parseGguf on malformed files', () => {
  const good = () => ({
    metadata: [['general.architecture', { type: 'string', value: 'x' }]] as [string, GgufValue][],
    tensors: [f32Tensor('a', [8, 2]), f32Tensor('b', [4])],
  });

  it('accepts the unmodified base file', () => {
    const h = parseGguf(encodeGguf(good()));
    expect(h.tensors.map((t) => t.shape)).toEqual([[2, 8], [4]]);
  });

  it.each([
    ['bad magic', { magic: 0x46554748 }, 'GGUF_BAD_MAGIC'],
    ['version 1', { version: 1 }, 'GGUF_UNSUPPORTED_VERSION'],
    ['version 4', { version: 4 }, 'GGUF_UNSUPPORTED_VERSION'],
    ['big-endian version', { version: 0x03000000 }, 'GGUF_UNSUPPORTED_VERSION'],
    ['tensor count past EOF', { tensorCount: 1n << 40n }, 'GGUF_TRUNCATED'],
    ['kv count past EOF', { kvCount: 1000n }, 'GGUF_TRUNCATED'],
    ['huge kv count', { kvCount: 0xffffffffffffffffn }, 'GGUF_TRUNCATED'],
    ['misaligned data', { tensors: [f32Tensor('a', [8, 2]), { ...f32Tensor('b', [4]), offset: 68n }] }, 'GGUF_MISALIGNED_TENSOR'],
    ['overlapping data', { tensors: [f32Tensor('a', [8, 2]), { ...f32Tensor('b', [4]), offset: 32n }] }, 'GGUF_OVERLAPPING_TENSORS'],
    ['unknown type id', { tensors: [{ ...f32Tensor('a', [8]), ggmlType: 77 }] }, 'GGUF_UNSUPPORTED_TENSOR_TYPE'],
    ['unsupported type id', { tensors: [{ ...f32Tensor('a', [256]), ggmlType: 16 }] }, 'GGUF_UNSUPPORTED_TENSOR_TYPE'],
    ['partial block', { tensors: [{ name: 'q', ne: [16], ggmlType: 8, data: new Uint8Array(34) }] }, 'GGUF_BAD_DIMS'],
    ['5 dims', { tensors: [f32Tensor('a', [1, 1, 1, 1, 1])] }, 'GGUF_BAD_DIMS'],
    ['duplicate tensor', { tensors: [f32Tensor('a', [8]), f32Tensor('a', [8])] }, 'GGUF_DUPLICATE_TENSOR'],
    ['alignment 3', { alignment: 3 }, 'GGUF_BAD_ALIGNMENT'],
    ['bad orig_shape', { metadata: [['comfy.gguf.orig_shape.a', { type: 'array', itemType: 'i32', value: [{ type: 'i32', value: 3 }] }]] }, 'GGUF_BAD_ORIG_SHAPE'],
  ] as const)('%s -> %s', (_what, patch, code) => {
    expect(codeOf(() => parseGguf(encodeGguf({ ...good(), ...patch } as never)))).toBe(code);
  });

  it('rejects data no tensor describes: appended bytes, or a gap of an alignment or more between tensors', () => {
    const b = encodeGguf(good());
    expect(codeOf(() => parseGguf(b))).toBe('NO_ERROR');
    const appended = new Uint8Array(b.length + 32);
    appended.set(b);
    expect(codeOf(() => parseGguf(appended))).toBe('GGUF_UNUSED_BYTES');
    // Less than an alignment after the last tensor is a writer's padding.
    expect(codeOf(() => parseGguf(appended.subarray(0, b.length + 31)))).toBe('NO_ERROR');
    expect(codeOf(() => parseGguf(encodeGguf({ ...good(), tensors: [f32Tensor('a', [8, 2]), { ...f32Tensor('b', [4]), offset: 96n }] } as never)))).toBe('GGUF_UNUSED_BYTES');
  });

  it('rejects a tensor whose data passes the end of the file', () => {
    const b = encodeGguf(good());
    expect(codeOf(() => parseGguf(b.subarray(0, b.length - 4)))).toBe('GGUF_TENSOR_PAST_EOF');
  });

  it('rejects an unknown metadata value type', () => {
    const b = encodeGguf(good());
    // the value type u32 sits right after the 8-byte length and the 20-byte key
    const at = 24 + 8 + 'general.architecture'.length;
    new DataView(b.buffer).setUint32(at, 13, true);
    expect(codeOf(() => parseGguf(b))).toBe('GGUF_BAD_VALUE_TYPE');
  });

  it('rejects a string length past EOF and invalid UTF-8', () => {
    const b = encodeGguf(good());
    new DataView(b.buffer).setBigUint64(24, 1n << 50n, true);
    expect(codeOf(() => parseGguf(b))).toBe('GGUF_TRUNCATED');
    const c = encodeGguf(good());
    c[32] = 0xff;
    expect(codeOf(() => parseGguf(c))).toBe('GGUF_BAD_STRING');
  });

  it('never crashes on any truncation or byte corruption of a valid file', () => {
    const base = encodeGguf({
      metadata: [
        ['k.arr', { type: 'array', itemType: 'string', value: [{ type: 'string', value: 'ab' }] }],
        ['k.u64', { type: 'u64', value: 5n }],
      ],
      tensors: [f32Tensor('a', [8, 2]), { name: 'q', ne: [32, 2], ggmlType: 8, data: new Uint8Array(68) }],
    });
    fc.assert(
      fc.property(fc.nat(base.length), fc.nat(base.length - 1), fc.integer({ min: 0, max: 255 }), (cut, at, byte) => {
        const b = base.slice(0, Math.max(cut, 1));
        if (at < b.length) b[at] = byte;
        try {
          parseGguf(b);
        } catch (e) {
          expect(isNinodesError(e) && e.code.startsWith('GGUF_')).toBe(true);
        }
      }),
      { numRuns: 2000 },
    );
  });
});

describe('parseGguf property: random valid files round-trip', () => {
  const valueArb: fc.Arbitrary<GgufValue> = fc.oneof(
    fc.integer({ min: 0, max: 255 }).map((value) => ({ type: 'u8', value }) as GgufValue),
    fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 }).map((value) => ({ type: 'i32', value }) as GgufValue),
    fc.bigInt({ min: 0n, max: 2n ** 64n - 1n }).map((value) => ({ type: 'u64', value }) as GgufValue),
    fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }).map((value) => ({ type: 'i64', value }) as GgufValue),
    fc.double({ noNaN: true }).map((value) => ({ type: 'f64', value }) as GgufValue),
    fc.boolean().map((value) => ({ type: 'bool', value }) as GgufValue),
    fc.string({ unit: 'grapheme' }).map((value) => ({ type: 'string', value }) as GgufValue),
    fc.array(fc.integer({ min: -32768, max: 32767 }), { maxLength: 5 }).map(
      (xs) => ({ type: 'array', itemType: 'i16', value: xs.map((value) => ({ type: 'i16', value })) }) as GgufValue,
    ),
  );
  it('metadata and tensor shapes survive encode -> parse', () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(fc.tuple(fc.string({ minLength: 1, maxLength: 12 }), valueArb), { selector: (x) => x[0], maxLength: 6 }),
        fc.array(fc.array(fc.integer({ min: 0, max: 5 }), { minLength: 1, maxLength: 4 }), { maxLength: 4 }),
        fc.constantFrom(1, 8, 32, 64),
        (kvs, dims, alignment) => {
          const tensors = dims.map((ne, i) => f32Tensor(`t${i}`, ne));
          const h = parseGguf(encodeGguf({ metadata: kvs.filter(([k]) => k !== 'general.alignment'), tensors, alignment }));
          expect(h.alignment).toBe(alignment);
          for (const [k, v] of kvs) {
            if (k === 'general.alignment') continue;
            const got = h.metadata.get(k) as GgufValue;
            expect(got.type).toBe(v.type);
            if (v.type === 'array') expect(got).toMatchObject({ itemType: v.itemType });
            expect(plainGgufValue(got)).toEqual(plainGgufValue(v));
          }
          expect(h.tensors.map((t) => t.shape)).toEqual(dims.map((d) => [...d].reverse()));
          expect(h.dataOffset % alignment).toBe(0);
        },
      ),
      { numRuns: 200 },
    );
  });
});

describe('parseGguf metadata arrays are views decoded on access (issue 17.9)', () => {
  const arr = (itemType: GgufValue['type'], value: GgufValue[]): GgufValue => ({ type: 'array', itemType, value }) as GgufValue;
  const s = (value: string): GgufValue => ({ type: 'string', value });

  it('decodes every item type, nested arrays and negative indices like the values written', () => {
    const nested = arr('array', [arr('string', [s('a'), s('ü€'), s('')]), arr('u64', [{ type: 'u64', value: 2n ** 64n - 1n }]), arr('bool', [])]);
    const metadata: [string, GgufValue][] = [
      ['n', nested],
      ['b', arr('bool', [{ type: 'bool', value: true }, { type: 'bool', value: false }])],
      ['f', arr('f32', [{ type: 'f32', value: 1.5 }, { type: 'f32', value: -2 }])],
      ['i', arr('i8', [{ type: 'i8', value: -128 }, { type: 'i8', value: 127 }])],
    ];
    const h = parseGguf(encodeGguf({ metadata }));
    for (const [k, v] of metadata) expect(plainGgufValue(h.metadata.get(k) as GgufValue), k).toEqual(plainGgufValue(v));
    const n = h.metadata.get('n') as Extract<GgufValue, { type: 'array' }>;
    expect(n.value.length).toBe(3);
    expect(n.value.at(-3)).toMatchObject({ type: 'array', itemType: 'string' });
    expect(plainGgufValue(n.value.at(-3) as GgufValue)).toEqual(['a', 'ü€', '']);
    expect(n.value.at(3)).toBeUndefined();
    expect(n.value.at(1.5)).toBeUndefined();
  });

  it('still validates every item when parsed: a bad bool or bad UTF-8 deep in an array is a coded error', () => {
    const bytes = encodeGguf({ metadata: [['b', arr('bool', [{ type: 'bool', value: true }, { type: 'bool', value: false }])]] });
    bytes[24 + 8 + 1 + 4 + 4 + 8 + 1] = 2; // header, key 'b', value type, item type, count: then the items
    expect(codeOf(() => parseGguf(bytes))).toBe('GGUF_BAD_VALUE');
    const str = encodeGguf({ metadata: [['s', arr('array', [arr('string', [s('ok'), s('xy')])])]] });
    str[str.lastIndexOf(0x79)] = 0xff; // the 'y' of 'xy'
    expect(codeOf(() => parseGguf(str))).toBe('GGUF_BAD_STRING');
  });

  it('a string array claiming billions of items in a huge file allocates nothing for them up front', () => {
    // 'k': array of strings, count 2^37, and one real item: only a prefix of a 4 TB "file" is given.
    const bytes = encodeGguf({ metadata: [['k', arr('string', [s('a')])]] });
    const countAt = 24 + 8 + 1 + 4 + 4;
    new DataView(bytes.buffer).setBigUint64(countAt, 2n ** 37n, true);
    expect(() => parseGguf(bytes, { fileSize: 2 ** 42 })).toThrow(GgufNeedMoreBytes);
    expect(codeOf(() => parseGguf(bytes))).toBe('GGUF_TRUNCATED');
  });
});
