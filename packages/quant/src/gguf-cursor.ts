// The GGUF header reader's cursor and the value-type tables the parser and the array views share.
import { NinodesError } from '@ninodes/kernels';
import { QuantError } from './error-codes.js';
import { GGUF_VALUE_TYPE, type GgufValueTypeName } from './gguf-types.js';

/** Arrays of arrays nest at most this deep. */
export const MAX_ARRAY_DEPTH = 8;
export const VALUE_TYPE_NAMES = Object.fromEntries(Object.entries(GGUF_VALUE_TYPE).map(([k, v]) => [v, k])) as Record<number, GgufValueTypeName>;
// Smallest encoded size of a value of each type: used to reject counts that cannot fit before looping.
export const MIN_VALUE_BYTES: Record<GgufValueTypeName, number> = {
  u8: 1, i8: 1, bool: 1, u16: 2, i16: 2, u32: 4, i32: 4, f32: 4, u64: 8, i64: 8, f64: 8, string: 8, array: 12,
};

/**
 * Thrown internally when `bytes` is a prefix of a larger file and the header continues past it; the
 * caller reads more and parses again. Never escapes `readGgufHeader`.
 */
export class GgufNeedMoreBytes extends Error {
  constructor(readonly needed: number) {
    super(`GGUF header continues past byte ${needed}`);
  }
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

/** Reads little-endian GGUF fields from the first bytes of a file, every read bounds-checked. */
export class Cursor {
  pos = 0;
  readonly view: DataView;
  constructor(
    readonly bytes: Uint8Array,
    private readonly fileSize: number,
    readonly where: string,
  ) {
    this.view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  }

  /** Fails with a typed error when `n` bytes from here would pass the end of the file. */
  need(n: number, what: string): void {
    const end = this.pos + n;
    if (!Number.isSafeInteger(end) || end > this.fileSize) {
      throw new QuantError('GGUF_TRUNCATED', `${what} at byte ${this.pos} needs ${n} bytes but the file ends at ${this.fileSize}`, {
        value: { offset: this.pos, needed: n, fileSize: this.fileSize },
        where: this.where,
        hint: 'the file is truncated or a count/length field is corrupt',
      });
    }
    if (end > this.bytes.byteLength) throw new GgufNeedMoreBytes(end);
  }

  u8(what: string): number {
    this.need(1, what);
    return this.view.getUint8(this.pos++);
  }
  i8(what: string): number {
    this.need(1, what);
    return this.view.getInt8(this.pos++);
  }
  u16(what: string): number {
    this.need(2, what);
    const v = this.view.getUint16(this.pos, true);
    this.pos += 2;
    return v;
  }
  i16(what: string): number {
    this.need(2, what);
    const v = this.view.getInt16(this.pos, true);
    this.pos += 2;
    return v;
  }
  u32(what: string): number {
    this.need(4, what);
    const v = this.view.getUint32(this.pos, true);
    this.pos += 4;
    return v;
  }
  i32(what: string): number {
    this.need(4, what);
    const v = this.view.getInt32(this.pos, true);
    this.pos += 4;
    return v;
  }
  f32(what: string): number {
    this.need(4, what);
    const v = this.view.getFloat32(this.pos, true);
    this.pos += 4;
    return v;
  }
  f64(what: string): number {
    this.need(8, what);
    const v = this.view.getFloat64(this.pos, true);
    this.pos += 8;
    return v;
  }
  u64(what: string): bigint {
    this.need(8, what);
    const v = this.view.getBigUint64(this.pos, true);
    this.pos += 8;
    return v;
  }
  i64(what: string): bigint {
    this.need(8, what);
    const v = this.view.getBigInt64(this.pos, true);
    this.pos += 8;
    return v;
  }

  /** A u64 that must be a count/size usable as a JS number and fit in what is left of the file. */
  count(what: string, minBytesEach: number): number {
    const at = this.pos;
    const raw = this.u64(what);
    const left = this.fileSize - this.pos;
    if (raw > BigInt(Number.MAX_SAFE_INTEGER) || Number(raw) * minBytesEach > left) {
      throw new QuantError('GGUF_TRUNCATED', `${what} ${raw} at byte ${at} cannot fit in the ${left} bytes left in the file`, {
        value: raw,
        where: this.where,
        hint: 'the file is truncated or the count is corrupt',
      });
    }
    return Number(raw);
  }

  string(what: string): string {
    const at = this.pos;
    const len = this.count(`length of ${what}`, 1);
    this.need(len, what);
    try {
      return utf8.decode(this.bytes.subarray(this.pos, this.pos + len));
    } catch (cause) {
      throw new QuantError('GGUF_BAD_STRING', `${what} at byte ${at} is not valid UTF-8`, { where: this.where, cause });
    } finally {
      this.pos += len;
    }
  }
}

export function badValueType(typeId: number, what: string, at: number, where: string): NinodesError {
  return new QuantError('GGUF_BAD_VALUE_TYPE', `${what} has value type ${typeId}, which GGUF does not define`, {
    value: typeId,
    where: `${where} @${at}`,
    hint: `GGUF value types are 0..12 (${Object.keys(GGUF_VALUE_TYPE).join(', ')})`,
  });
}

