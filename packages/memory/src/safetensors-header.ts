// The safetensors header: an 8-byte little-endian length, then that many bytes of JSON. Validated
// the way the Hugging Face implementation validates it (and a little more), each rule with its own
// error code so a caller (and the malformed-file corpus) can tell exactly what is wrong.
import { ELEMENT_DTYPES } from '@ninodes/kernels';
import { MEMORY_ERROR_CODES, MemoryError, type MemoryErrorCode } from './error-codes.js';
import type { TensorEntry } from './checkpoint-source.js';
import { SAFETENSORS_DTYPES, isSafetensorsDType } from './safetensors-dtype.js';

/** Hugging Face's MAX_HEADER_SIZE. */
export const MAX_HEADER_BYTES = 100_000_000;

/** Every rule the reader checks, one error code each (their meanings live in memory's list). */
const HEADER_RULES = [
  'SAFETENSORS_NO_LENGTH',
  'SAFETENSORS_HEADER_TOO_LARGE',
  'SAFETENSORS_HEADER_PAST_END',
  'SAFETENSORS_HEADER_NOT_UTF8',
  'SAFETENSORS_HEADER_NOT_JSON',
  'SAFETENSORS_DUPLICATE_KEY',
  'SAFETENSORS_HEADER_NOT_OBJECT',
  'SAFETENSORS_ENTRY_NOT_OBJECT',
  'SAFETENSORS_UNKNOWN_DTYPE',
  'SAFETENSORS_INVALID_SHAPE',
  'SAFETENSORS_INVALID_OFFSETS',
  'SAFETENSORS_OFFSETS_PAST_END',
  'SAFETENSORS_SIZE_MISMATCH',
  'SAFETENSORS_OVERLAP',
  'SAFETENSORS_HOLE',
  'SAFETENSORS_TRAILING_BYTES',
  'SAFETENSORS_INVALID_METADATA',
] as const satisfies readonly MemoryErrorCode[];

export type SafetensorsErrorCode = (typeof HEADER_RULES)[number];

/** Each header rule's code with its meaning. */
export const SAFETENSORS_ERRORS = Object.fromEntries(HEADER_RULES.map((code) => [code, MEMORY_ERROR_CODES[code]])) as { readonly [C in SafetensorsErrorCode]: (typeof MEMORY_ERROR_CODES)[C] };

export interface SafetensorsHeader {
  /** Bytes of JSON after the 8-byte length. */
  readonly headerBytes: number;
  /** Absolute offset where tensor data starts (8 + headerBytes). */
  readonly dataStart: number;
  readonly metadata: Readonly<Record<string, string>>;
  /** In file (data offset) order. */
  readonly entries: readonly TensorEntry[];
}

function fail(code: SafetensorsErrorCode, file: string, tensor: string | undefined, detail: string, value?: unknown): never {
  const where = tensor === undefined ? file : `${file} :: ${tensor}`;
  const subject = tensor === undefined ? file : `${file}: tensor '${tensor}'`;
  throw new MemoryError(code, `${subject}: ${SAFETENSORS_ERRORS[code]} (${detail})`, {
    where,
    value,
    hint: 'the file is not a valid safetensors checkpoint; re-download or re-export it',
  });
}

/** Reads the header length from the first 8 bytes and checks it against the file size. */
export function readHeaderLength(prefix: Uint8Array, fileBytes: number, file: string): number {
  if (fileBytes < 8 || prefix.byteLength < 8) fail('SAFETENSORS_NO_LENGTH', file, undefined, `file has ${fileBytes} bytes`, fileBytes);
  const n = new DataView(prefix.buffer, prefix.byteOffset, 8).getBigUint64(0, true);
  if (n > BigInt(MAX_HEADER_BYTES)) fail('SAFETENSORS_HEADER_TOO_LARGE', file, undefined, `header length ${n}`, String(n));
  const length = Number(n);
  if (8 + length > fileBytes) fail('SAFETENSORS_HEADER_PAST_END', file, undefined, `header needs bytes 8..${8 + length}, file has ${fileBytes}`, length);
  return length;
}

/**
 * The first key that an object of `text` (valid JSON) names twice, if any. JSON.parse keeps the
 * last silently; Hugging Face's reader refuses such a header, and two readers that pick differently
 * would load two different tensors from one file.
 */
function duplicateKey(text: string): string | undefined {
  const objects: ({ keys: Set<string>; expectKey: boolean } | undefined)[] = [];
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22) {
      let j = i + 1;
      while (text.charCodeAt(j) !== 0x22) j += text.charCodeAt(j) === 0x5c ? 2 : 1;
      const top = objects[objects.length - 1];
      if (top?.expectKey) {
        const key = JSON.parse(text.slice(i, j + 1)) as string;
        if (top.keys.has(key)) return key;
        top.keys.add(key);
        top.expectKey = false;
      }
      i = j;
    } else if (c === 0x7b) objects.push({ keys: new Set(), expectKey: true });
    else if (c === 0x5b) objects.push(undefined);
    else if (c === 0x7d || c === 0x5d) objects.pop();
    else if (c === 0x2c) {
      const top = objects[objects.length - 1];
      if (top !== undefined) top.expectKey = true;
    }
  }
  return undefined;
}

const isInt = (v: unknown): v is number => typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;

/**
 * Parses and validates the JSON header. `dataBytes` is the size of the data region (file size minus
 * 8 minus the header), which every tensor must exactly tile.
 */
export function parseHeader(json: Uint8Array, dataBytes: number, file: string): SafetensorsHeader {
  // Hugging Face rejects a header whose first byte is not '{' (InvalidHeaderStart).
  if (json[0] !== 0x7b) fail('SAFETENSORS_HEADER_NOT_OBJECT', file, undefined, json.byteLength === 0 ? 'the header is empty' : `it starts with byte 0x${(json[0] as number).toString(16)}`);
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(json);
  } catch (error) {
    fail('SAFETENSORS_HEADER_NOT_UTF8', file, undefined, (error as Error).message);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    fail('SAFETENSORS_HEADER_NOT_JSON', file, undefined, (error as Error).message, text.slice(0, 80));
  }
  const twice = duplicateKey(text);
  if (twice !== undefined) fail('SAFETENSORS_DUPLICATE_KEY', file, undefined, `key '${twice}' appears twice`, twice);
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    fail('SAFETENSORS_HEADER_NOT_OBJECT', file, undefined, `got ${Array.isArray(parsed) ? 'an array' : typeof parsed}`, text.slice(0, 80));
  }
  let metadata: Record<string, string> = {};
  const raw: { name: string; dtype: keyof typeof SAFETENSORS_DTYPES; shape: number[]; begin: number; end: number }[] = [];
  for (const [name, value] of Object.entries(parsed as Record<string, unknown>)) {
    if (name === '__metadata__') {
      if (typeof value !== 'object' || value === null || Array.isArray(value)) {
        fail('SAFETENSORS_INVALID_METADATA', file, undefined, 'not an object', value);
      }
      for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
        if (typeof v !== 'string') fail('SAFETENSORS_INVALID_METADATA', file, undefined, `key '${k}' has a ${typeof v} value`, v);
      }
      metadata = { ...(value as Record<string, string>) };
      continue;
    }
    if (typeof value !== 'object' || value === null || Array.isArray(value)) {
      fail('SAFETENSORS_ENTRY_NOT_OBJECT', file, name, `got ${Array.isArray(value) ? 'an array' : typeof value}`, value);
    }
    const keys = Object.keys(value).sort().join(',');
    if (keys !== 'data_offsets,dtype,shape') fail('SAFETENSORS_ENTRY_NOT_OBJECT', file, name, `keys are [${keys}]`, value);
    const { dtype, shape, data_offsets: offsets } = value as { dtype: unknown; shape: unknown; data_offsets: unknown };
    if (typeof dtype !== 'string' || !isSafetensorsDType(dtype)) fail('SAFETENSORS_UNKNOWN_DTYPE', file, name, `dtype ${JSON.stringify(dtype)}`, dtype);
    if (!Array.isArray(shape) || !shape.every(isInt)) fail('SAFETENSORS_INVALID_SHAPE', file, name, `shape ${JSON.stringify(shape)}`, shape);
    if (!Array.isArray(offsets) || offsets.length !== 2 || !isInt(offsets[0]) || !isInt(offsets[1]) || offsets[0] > offsets[1]) {
      fail('SAFETENSORS_INVALID_OFFSETS', file, name, `data_offsets ${JSON.stringify(offsets)}`, offsets);
    }
    const [begin, end] = offsets as [number, number];
    if (end > dataBytes) fail('SAFETENSORS_OFFSETS_PAST_END', file, name, `ends at ${end}, the data region has ${dataBytes} bytes`, offsets);
    let numel = 1;
    for (const d of shape as number[]) numel *= d;
    const expected = numel * ELEMENT_DTYPES[SAFETENSORS_DTYPES[dtype]].bytes;
    if (!Number.isSafeInteger(expected) || expected !== end - begin) {
      fail('SAFETENSORS_SIZE_MISMATCH', file, name, `${dtype} [${(shape as number[]).join(', ')}] needs ${expected} bytes, data_offsets give ${end - begin}`, offsets);
    }
    raw.push({ name, dtype, shape: shape as number[], begin, end });
  }
  raw.sort((a, b) => a.begin - b.begin || a.end - b.end);
  let cursor = 0;
  let previous: string | undefined;
  for (const t of raw) {
    if (t.begin < cursor) fail('SAFETENSORS_OVERLAP', file, t.name, `starts at ${t.begin}, before '${previous}' ends at ${cursor}`, [t.begin, t.end]);
    if (t.begin > cursor) fail('SAFETENSORS_HOLE', file, t.name, `starts at ${t.begin}, the previous tensor ends at ${cursor}`, [t.begin, t.end]);
    cursor = t.end;
    previous = t.name;
  }
  if (cursor !== dataBytes) fail('SAFETENSORS_TRAILING_BYTES', file, previous, `tensors end at ${cursor}, the data region has ${dataBytes} bytes`, dataBytes);
  const dataStart = 8 + json.byteLength;
  const entries = raw.map(
    (t): TensorEntry =>
      Object.freeze({
        name: t.name,
        dtype: SAFETENSORS_DTYPES[t.dtype],
        shape: Object.freeze([...t.shape]),
        byteOffset: dataStart + t.begin,
        byteLength: t.end - t.begin,
        file,
      }),
  );
  return { headerBytes: json.byteLength, dataStart, metadata: Object.freeze(metadata), entries };
}
