import { type DType, NinodesError, byteSizeOf, numelOf } from '@ninodes/kernels';
import { QuantError } from './error-codes.js';
import { GgufArrayView } from './gguf-array.js';
import { Cursor, GgufNeedMoreBytes, VALUE_TYPE_NAMES, badValueType } from './gguf-cursor.js';
import { GGML_TYPE_NAMES, GGML_TYPE_TO_DTYPE, type GgufValue } from './gguf-types.js';

export { GgufNeedMoreBytes } from './gguf-cursor.js';

/** One tensor described by a GGUF header. */
export interface GgufTensorInfo {
  readonly name: string;
  /** ggml type id as stored, and its name (`Q4_K`). */
  readonly ggmlType: number;
  readonly ggmlTypeName: string;
  readonly dtype: DType;
  /** Dims as the file stores them (ne0 first, innermost first). */
  readonly ne: readonly number[];
  /** The stored dims in torch order (ne reversed): the shape the bytes encode. */
  readonly storedShape: readonly number[];
  /** The torch shape the model expects: `comfy.gguf.orig_shape.<name>` when present, else storedShape. */
  readonly shape: readonly number[];
  /** Offset relative to the start of the data section, as stored. */
  readonly relativeOffset: number;
  /** Absolute byte range in the file. */
  readonly byteOffset: number;
  readonly byteLength: number;
}

export interface GgufHeader {
  readonly version: 2 | 3;
  readonly alignment: number;
  /** Every key/value in file order. */
  readonly metadata: ReadonlyMap<string, GgufValue>;
  readonly tensors: readonly GgufTensorInfo[];
  /** Absolute offset of the data section (end of header, padded to the alignment). */
  readonly dataOffset: number;
  readonly fileSize: number;
}

export interface ParseGgufOptions {
  /** Size of the whole file when `bytes` holds only its beginning (the header). Default: bytes.length. */
  fileSize?: number;
  /** Path or name for error messages. */
  where?: string;
}

const MAGIC = 0x46554747; // 'GGUF' little-endian
const MAX_DIMS = 4; // GGML_MAX_DIMS
const ORIG_SHAPE_PREFIX = 'comfy.gguf.orig_shape.';

function readValue(c: Cursor, typeId: number, what: string, where: string): GgufValue {
  const type = VALUE_TYPE_NAMES[typeId];
  switch (type) {
    case 'u8':
    case 'i8':
    case 'u16':
    case 'i16':
    case 'u32':
    case 'i32':
    case 'f32':
    case 'f64':
      return { type, value: c[type](what) };
    case 'u64':
    case 'i64':
      return { type, value: c[type](what) };
    case 'bool': {
      const at = c.pos;
      const b = c.u8(what);
      if (b > 1) throw new QuantError('GGUF_BAD_VALUE', `${what} at byte ${at} is a bool stored as ${b}`, { value: b, where, hint: 'GGUF bools are 0 or 1' });
      return { type, value: b === 1 };
    }
    case 'string':
      return { type, value: c.string(what) };
    case 'array': {
      const value = GgufArrayView.scan(c, what, 0);
      return { type: 'array', itemType: value.itemType, value };
    }
    default:
      throw badValueType(typeId, what, c.pos - 4, where);
  }
}

function integerOf(v: GgufValue): number | undefined {
  if (v.type === 'u64' || v.type === 'i64') return v.value <= BigInt(Number.MAX_SAFE_INTEGER) && v.value >= 0n ? Number(v.value) : undefined;
  if (v.type === 'f32' || v.type === 'f64' || typeof v.value !== 'number') return undefined;
  return v.value;
}

/**
 * Parses a GGUF v2/v3 header (little-endian) from the file's first bytes. Every count, length, type
 * and tensor byte range is validated before use; malformed input is a NinodesError with a GGUF_* code.
 * Throws `GgufNeedMoreBytes` only when `bytes` is a strict prefix of the file and the header is longer.
 */
export function parseGguf(bytes: Uint8Array, options: ParseGgufOptions = {}): GgufHeader {
  const where = options.where ?? 'gguf';
  const fileSize = options.fileSize ?? bytes.byteLength;
  const c = new Cursor(bytes, fileSize, where);

  const magic = c.u32('magic');
  if (magic !== MAGIC) {
    throw new QuantError('GGUF_BAD_MAGIC', `not a GGUF file: magic is 0x${magic.toString(16).padStart(8, '0')}`, {
      value: magic,
      where,
      hint: "a GGUF file starts with the bytes 'GGUF'",
    });
  }
  const version = c.u32('version');
  if (version !== 2 && version !== 3) {
    const bigEndian = version === 0x02000000 || version === 0x03000000;
    throw new QuantError('GGUF_UNSUPPORTED_VERSION', `GGUF version ${version} is not supported`, {
      value: version,
      where,
      hint: bigEndian ? 'this is a big-endian GGUF; convert it to little-endian' : 'only GGUF v2 and v3 (little-endian) are read; re-convert older files',
    });
  }
  const tensorCount = c.count('tensor count', 8 + 4 + 8 + 4 + 8);
  const kvCount = c.count('metadata count', 8 + 4 + 1);

  const metadata = new Map<string, GgufValue>();
  for (let i = 0; i < kvCount; i++) {
    const key = c.string(`key of metadata entry ${i}`);
    if (metadata.has(key)) {
      throw new QuantError('GGUF_DUPLICATE_KEY', `metadata key '${key}' appears twice`, { value: key, where, hint: 'the file is corrupt' });
    }
    const typeId = c.u32(`type of '${key}'`);
    metadata.set(key, readValue(c, typeId, `value of '${key}'`, where));
  }

  let alignment = 32;
  const alignValue = metadata.get('general.alignment');
  if (alignValue !== undefined) {
    const a = integerOf(alignValue);
    if (a === undefined || a <= 0 || (a & (a - 1)) !== 0) {
      throw new QuantError('GGUF_BAD_ALIGNMENT', `general.alignment ${String(alignValue.value)} is not a positive power of two`, {
        value: alignValue.value,
        where,
        hint: 'GGUF alignment is a power of two (default 32)',
      });
    }
    alignment = a;
  }

  interface RawInfo {
    name: string;
    ne: number[];
    ggmlType: number;
    offset: bigint;
  }
  const raw: RawInfo[] = [];
  const names = new Set<string>();
  for (let i = 0; i < tensorCount; i++) {
    const name = c.string(`name of tensor ${i}`);
    if (names.has(name)) {
      throw new QuantError('GGUF_DUPLICATE_TENSOR', `tensor '${name}' is described twice`, { value: name, where, hint: 'the file is corrupt' });
    }
    names.add(name);
    const nDims = c.u32(`dimension count of '${name}'`);
    if (nDims < 1 || nDims > MAX_DIMS) {
      throw new QuantError('GGUF_BAD_DIMS', `tensor '${name}' has ${nDims} dimensions`, { value: nDims, where, hint: `ggml tensors have 1..${MAX_DIMS} dimensions` });
    }
    const ne: number[] = [];
    for (let d = 0; d < nDims; d++) {
      const v = c.u64(`dimension ${d} of '${name}'`);
      if (v > BigInt(Number.MAX_SAFE_INTEGER)) {
        throw new QuantError('GGUF_BAD_DIMS', `dimension ${d} of tensor '${name}' is ${v}`, { value: v, where, hint: 'the file is corrupt' });
      }
      ne.push(Number(v));
    }
    const ggmlType = c.u32(`type of '${name}'`);
    const offset = c.u64(`data offset of '${name}'`);
    raw.push({ name, ne, ggmlType, offset });
  }

  const headerEnd = c.pos;
  const dataOffset = Math.ceil(headerEnd / alignment) * alignment;
  if (dataOffset > fileSize && tensorCount > 0) {
    throw new QuantError('GGUF_TRUNCATED', `the data section would start at byte ${dataOffset}, past the end of the ${fileSize}-byte file`, { where });
  }

  const tensors: GgufTensorInfo[] = raw.map((r) => {
    const typeName = GGML_TYPE_NAMES[r.ggmlType];
    const dtype = GGML_TYPE_TO_DTYPE[r.ggmlType];
    if (dtype === undefined) {
      throw new QuantError(
        'GGUF_UNSUPPORTED_TENSOR_TYPE',
        typeName === undefined ? `tensor '${r.name}' has ggml type id ${r.ggmlType}, which is unknown` : `tensor '${r.name}' is ${typeName}, which the kernels cannot decode`,
        {
          value: r.ggmlType,
          where: `${where}: ${r.name}`,
          hint: `supported: ${Object.keys(GGML_TYPE_TO_DTYPE).map((id) => GGML_TYPE_NAMES[Number(id)]).join(', ')}`,
        },
      );
    }
    const storedShape = [...r.ne].reverse();
    let byteLength: number;
    try {
      byteLength = byteSizeOf(dtype, storedShape, `${where}: ${r.name}`);
    } catch (cause) {
      throw new QuantError('GGUF_BAD_DIMS', `tensor '${r.name}' ${typeName} [${storedShape.join(', ')}] does not fill whole blocks or is too large`, {
        value: storedShape,
        where: `${where}: ${r.name}`,
        hint: 'the innermost dimension (ne0) of a block type must be a multiple of its block size',
        cause,
      });
    }
    if (r.offset % BigInt(alignment) !== 0n) {
      throw new QuantError('GGUF_MISALIGNED_TENSOR', `tensor '${r.name}' data offset ${r.offset} is not a multiple of the alignment ${alignment}`, {
        value: r.offset,
        where: `${where}: ${r.name}`,
        hint: 'the file is corrupt or was written with another general.alignment',
      });
    }
    const end = BigInt(dataOffset) + r.offset + BigInt(byteLength);
    if (end > BigInt(fileSize)) {
      throw new QuantError('GGUF_TENSOR_PAST_EOF', `tensor '${r.name}' needs bytes up to ${end} but the file has ${fileSize}`, {
        value: { offset: r.offset, byteLength, fileSize },
        where: `${where}: ${r.name}`,
        hint: 'the file is truncated',
      });
    }
    let shape: readonly number[] = storedShape;
    const orig = metadata.get(ORIG_SHAPE_PREFIX + r.name);
    if (orig !== undefined) shape = origShapeOf(orig, r.name, storedShape, where);
    const relativeOffset = Number(r.offset);
    return {
      name: r.name,
      ggmlType: r.ggmlType,
      ggmlTypeName: typeName as string,
      dtype,
      ne: r.ne,
      storedShape,
      shape,
      relativeOffset,
      byteOffset: dataOffset + relativeOffset,
      byteLength,
    };
  });

  const byOffset = [...tensors].sort((a, b) => a.byteOffset - b.byteOffset);
  for (let i = 1; i < byOffset.length; i++) {
    const prev = byOffset[i - 1] as GgufTensorInfo;
    const next = byOffset[i] as GgufTensorInfo;
    if (prev.byteOffset + prev.byteLength > next.byteOffset && prev.byteLength > 0 && next.byteLength > 0) {
      throw new QuantError('GGUF_OVERLAPPING_TENSORS', `tensors '${prev.name}' and '${next.name}' share bytes ${next.byteOffset}..${prev.byteOffset + prev.byteLength}`, {
        value: { [prev.name]: [prev.byteOffset, prev.byteLength], [next.name]: [next.byteOffset, next.byteLength] },
        where,
        hint: 'the file is corrupt',
      });
    }
  }

  // Writers (gguf-py, llama.cpp) pad each tensor to the alignment and nothing more: an alignment or
  // more of bytes that no tensor covers is data the header does not describe, e.g. a tensor dropped
  // from the count. Quantizing or running such a file would silently leave that tensor out.
  let cursor = dataOffset;
  for (const t of byOffset) {
    if (t.byteLength === 0) continue;
    if (t.byteOffset - cursor >= alignment) throw unusedBytes(cursor, t.byteOffset, `before tensor '${t.name}'`, where);
    cursor = Math.max(cursor, t.byteOffset + t.byteLength);
  }
  if (fileSize - cursor >= alignment) throw unusedBytes(cursor, fileSize, 'after the last tensor', where);

  return { version, alignment, metadata, tensors, dataOffset, fileSize };
}

function unusedBytes(from: number, to: number, at: string, where: string): NinodesError {
  return new QuantError('GGUF_UNUSED_BYTES', `bytes ${from}..${to} ${at} belong to no tensor the header describes`, {
    value: { from, to },
    where,
    hint: 'the header lost a tensor (its count or its record) or data was appended: re-download or re-export the file',
  });
}

function origShapeOf(v: GgufValue, name: string, storedShape: readonly number[], where: string): readonly number[] {
  const bad = (why: string) =>
    new QuantError('GGUF_BAD_ORIG_SHAPE', `${ORIG_SHAPE_PREFIX}${name} ${why}`, {
      value: v.value,
      where: `${where}: ${name}`,
      hint: 'the original shape must be an array of non-negative integers with as many elements as the stored tensor',
    });
  if (v.type !== 'array') throw bad('is not an array');
  const shape = Array.from(v.value, (x) => {
    const n = integerOf(x);
    if (n === undefined || n < 0) throw bad('holds a value that is not a non-negative integer');
    return n;
  });
  if (numelOf(shape) !== numelOf(storedShape)) throw bad(`[${shape.join(', ')}] does not hold the ${numelOf(storedShape)} stored elements`);
  return shape;
}
