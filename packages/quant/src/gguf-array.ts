// GGUF metadata arrays as views over the header bytes. The parser validates every item once (bounds,
// bools, UTF-8, nesting) and keeps nothing per item except, for variable-size items (strings,
// arrays), where each starts; `at(i)` decodes one item when asked. A header then costs a small
// multiple of its bytes, where one JS object per element cost 70-150x.
import { Buffer, isUtf8 } from 'node:buffer';
import { QuantError } from './error-codes.js';
import { Cursor, MAX_ARRAY_DEPTH, MIN_VALUE_BYTES, VALUE_TYPE_NAMES, badValueType } from './gguf-cursor.js';
import type { GgufArrayItems, GgufValue, GgufValueTypeName } from './gguf-types.js';

/** The bytes one item of each fixed-size type takes. */
const FIXED_BYTES: Partial<Record<GgufValueTypeName, number>> = { u8: 1, i8: 1, bool: 1, u16: 2, i16: 2, u32: 4, i32: 4, f32: 4, u64: 8, i64: 8, f64: 8 };

/**
 * Checks string item `i` at `c.pos` and returns where it ends. The common case (in the bytes at hand,
 * ASCII) allocates nothing: a vocabulary has millions of items. Anything else takes the cursor's
 * checked reads, which build the error (or ask for more bytes).
 */
function scanString(c: Cursor, what: string, i: number): number {
  const at = c.pos;
  const bytes = c.bytes;
  if (at + 8 <= bytes.byteLength) {
    const hi = c.view.getUint32(at + 4, true);
    const end = at + 8 + c.view.getUint32(at, true) + hi * 4294967296;
    if (hi < 0x200000 && end <= bytes.byteLength) {
      let ascii = true;
      for (let j = at + 8; j < end; j++) {
        if ((bytes[j] as number) >= 0x80) {
          ascii = false;
          break;
        }
      }
      if (ascii || isUtf8(bytes.subarray(at + 8, end))) return end;
      throw new QuantError('GGUF_BAD_STRING', `${what}[${i}] at byte ${at} is not valid UTF-8`, { where: c.where });
    }
  }
  const len = c.count(`length of ${what}[${i}]`, 1);
  c.need(len, `${what}[${i}]`);
  // need() throws when the string does not fit, so the fast path above saw an impossible length.
  throw new QuantError('GGUF_TRUNCATED', `${what}[${i}] at byte ${at} does not fit in the header`, { where: c.where });
}

export class GgufArrayView implements GgufArrayItems {
  // The header bytes as a Buffer (no copy): its utf8 slice decodes a short string several times
  // faster than TextDecoder. Items were validated as UTF-8 by scan().
  private text: Buffer | undefined;

  private constructor(
    readonly itemType: GgufValueTypeName,
    readonly length: number,
    private readonly c: Cursor,
    /** Fixed-size items: where item 0 starts. */
    private readonly start: number,
    /** Variable-size items: where each starts. */
    private readonly offsets: Float64Array | undefined,
  ) {}

  /** Validates the array whose item type id is at `c.pos` (an array value's body) and moves past it. */
  static scan(c: Cursor, what: string, depth: number): GgufArrayView {
    if (depth >= MAX_ARRAY_DEPTH) throw new QuantError('GGUF_BAD_VALUE', `${what} nests arrays deeper than ${MAX_ARRAY_DEPTH}`, { where: c.where });
    const itemTypeId = c.u32(`item type of ${what}`);
    const itemType = VALUE_TYPE_NAMES[itemTypeId];
    if (itemType === undefined) throw badValueType(itemTypeId, `item type of ${what}`, c.pos - 4, c.where);
    const n = c.count(`length of ${what}`, MIN_VALUE_BYTES[itemType]);
    const fixed = FIXED_BYTES[itemType];
    if (fixed !== undefined) {
      c.need(n * fixed, what);
      const start = c.pos;
      if (itemType === 'bool') {
        for (let i = 0; i < n; i++) {
          const b = c.bytes[start + i] as number;
          if (b > 1) {
            throw new QuantError('GGUF_BAD_VALUE', `${what}[${i}] at byte ${start + i} is a bool stored as ${b}`, { value: b, where: c.where, hint: 'GGUF bools are 0 or 1' });
          }
        }
      }
      c.pos += n * fixed;
      return new GgufArrayView(itemType, n, c, start, undefined);
    }
    // Grown as items are found, not sized by the count: a count is only bounded by the file's size,
    // and a checkpoint's header is a sliver of it.
    let offsets = new Float64Array(Math.min(n, 1024));
    for (let i = 0; i < n; i++) {
      if (i === offsets.length) {
        const grown = new Float64Array(Math.min(n, offsets.length * 2));
        grown.set(offsets);
        offsets = grown;
      }
      offsets[i] = c.pos;
      if (itemType === 'array') {
        GgufArrayView.scan(c, `${what}[${i}]`, depth + 1);
        continue;
      }
      c.pos = scanString(c, what, i);
    }
    return new GgufArrayView(itemType, n, c, 0, offsets);
  }

  at(index: number): GgufValue | undefined {
    const i = index < 0 ? index + this.length : index;
    if (!Number.isInteger(i) || i < 0 || i >= this.length) return undefined;
    const v = this.c.view;
    const type = this.itemType;
    if (this.offsets === undefined) {
      const p = this.start + i * (FIXED_BYTES[type] as number);
      switch (type) {
        case 'u8': return { type, value: v.getUint8(p) };
        case 'i8': return { type, value: v.getInt8(p) };
        case 'u16': return { type, value: v.getUint16(p, true) };
        case 'i16': return { type, value: v.getInt16(p, true) };
        case 'u32': return { type, value: v.getUint32(p, true) };
        case 'i32': return { type, value: v.getInt32(p, true) };
        case 'f32': return { type, value: v.getFloat32(p, true) };
        case 'f64': return { type, value: v.getFloat64(p, true) };
        case 'u64': return { type, value: v.getBigUint64(p, true) };
        case 'i64': return { type, value: v.getBigInt64(p, true) };
        default: return { type: 'bool', value: v.getUint8(p) === 1 };
      }
    }
    const p = this.offsets[i] as number;
    if (type === 'string') {
      const len = v.getUint32(p, true) + v.getUint32(p + 4, true) * 4294967296;
      this.text ??= Buffer.from(this.c.bytes.buffer, this.c.bytes.byteOffset, this.c.bytes.byteLength);
      return { type, value: this.text.toString('utf8', p + 8, p + 8 + len) };
    }
    // A nested array: validated when the header was parsed, so scanning it again cannot fail.
    const saved = this.c.pos;
    this.c.pos = p;
    try {
      const value = GgufArrayView.scan(this.c, 'nested array', 0);
      return { type: 'array', itemType: value.itemType, value };
    } finally {
      this.c.pos = saved;
    }
  }

  *[Symbol.iterator](): Iterator<GgufValue> {
    for (let i = 0; i < this.length; i++) yield this.at(i) as GgufValue;
  }
}
