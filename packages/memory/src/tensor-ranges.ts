import { readSync } from 'node:fs';
import { BLOCK_DTYPES, Tensor, byteSizeOf, isBlockDType } from '@ninodes/kernels';
import { MemoryError } from './error-codes.js';
import type { TensorEntry } from './checkpoint-source.js';

function checkRange(start: number, end: number, extent: number, what: string, where: string): void {
  if (!Number.isSafeInteger(start) || !Number.isSafeInteger(end) || start < 0 || end < start || end > extent) {
    throw new MemoryError('INDEX_OUT_OF_RANGE', `${what} [${start}, ${end}) is outside [0, ${extent}) of ${where}`, { value: { start, end, extent }, where });
  }
}

/** Bytes of one unit of a tensor's innermost dimension range, or a coded error for split blocks. */
function innerBytes(entry: Pick<TensorEntry, 'name' | 'dtype' | 'shape'>, start: number, end: number): { offset: number; bytes: number; rowBytes: number } {
  const last = entry.shape.length === 0 ? 1 : (entry.shape[entry.shape.length - 1] as number);
  if (isBlockDType(entry.dtype)) {
    const { blockElements, blockBytes } = BLOCK_DTYPES[entry.dtype];
    if (start % blockElements !== 0 || end % blockElements !== 0 || last % blockElements !== 0) {
      throw new MemoryError('RANGE_NOT_BLOCK_ALIGNED', `columns [${start}, ${end}) of ${entry.name} (${entry.dtype}, [${entry.shape.join(', ')}]) split its ${blockElements}-element blocks`, {
        value: { start, end, blockElements },
        where: entry.name,
        hint: `column ranges of a ${entry.dtype} tensor must start and end on multiples of ${blockElements}`,
      });
    }
    return { offset: (start / blockElements) * blockBytes, bytes: ((end - start) / blockElements) * blockBytes, rowBytes: (last / blockElements) * blockBytes };
  }
  const size = byteSizeOf(entry.dtype, [1]);
  return { offset: start * size, bytes: (end - start) * size, rowBytes: last * size };
}

/**
 * Where rows [start, end) of the outermost dimension lie in the file, relative to the tensor's data:
 * a row range of a row-major tensor is one contiguous span, so it is served as a zero-copy view.
 */
export function rowRangeSpan(entry: Pick<TensorEntry, 'name' | 'dtype' | 'shape'>, start: number, end: number): { byteOffset: number; byteLength: number; shape: number[] } {
  const outer = entry.shape[0];
  if (outer === undefined) throw new MemoryError('INVALID_SHAPE', `${entry.name} is a scalar; it has no rows`, { value: entry.shape, where: entry.name });
  checkRange(start, end, outer, 'rows', entry.name);
  const inner = entry.shape.slice(1);
  let rowBytes: number;
  try {
    rowBytes = byteSizeOf(entry.dtype, inner);
  } catch (error) {
    throw new MemoryError('RANGE_NOT_BLOCK_ALIGNED', `rows of ${entry.name} (${entry.dtype}, [${entry.shape.join(', ')}]) are not whole blocks`, {
      value: entry.shape,
      where: entry.name,
      cause: error,
      hint: 'the tensor was reshaped when it was stored (comfy.gguf.orig_shape); read it whole and slice after decoding',
    });
  }
  return { byteOffset: start * rowBytes, byteLength: (end - start) * rowBytes, shape: [end - start, ...inner] };
}

/**
 * Copies columns [start, end) of the innermost dimension of a tensor stored at `entry` in the open
 * file `fd`, reading only those bytes with pread (nothing is mapped, so only the copy is resident).
 * Block dtypes take block-aligned ranges only (RANGE_NOT_BLOCK_ALIGNED otherwise) and stay encoded.
 */
export function readColumnRange(fd: number, entry: TensorEntry, start: number, end: number): Tensor {
  if (entry.shape.length === 0) throw new MemoryError('INVALID_SHAPE', `${entry.name} is a scalar; it has no columns`, { value: entry.shape, where: entry.name });
  const last = entry.shape[entry.shape.length - 1] as number;
  checkRange(start, end, last, 'columns', entry.name);
  const { offset, bytes, rowBytes } = innerBytes(entry, start, end);
  const rows = rowBytes === 0 ? 0 : entry.byteLength / rowBytes;
  const out = new Uint8Array(rows * bytes);
  // Adjacent rows' segments are contiguous when the range is the whole row: one read then.
  const whole = bytes === rowBytes;
  const reads = whole ? 1 : rows;
  const span = whole ? rows * bytes : bytes;
  for (let r = 0; r < reads; r++) {
    let got = 0;
    while (got < span) {
      const n = readSync(fd, out, r * span + got, span - got, entry.byteOffset + r * rowBytes + offset + got);
      if (n === 0) {
        throw new MemoryError('FILE_TRUNCATED', `${entry.file} ended inside ${entry.name}`, { where: entry.file, value: entry.name, hint: 'the file changed since it was opened' });
      }
      got += n;
    }
  }
  return new Tensor(entry.dtype, [...entry.shape.slice(0, -1), end - start], out.buffer);
}

/** Columns [start, end) of an in-memory tensor, copied (for CheckpointSources that hold tensors). */
export function copyColumnRange(t: Tensor, name: string, start: number, end: number): Tensor {
  if (t.shape.length === 0) throw new MemoryError('INVALID_SHAPE', `${name} is a scalar; it has no columns`, { value: t.shape, where: name });
  const last = t.shape[t.shape.length - 1] as number;
  checkRange(start, end, last, 'columns', name);
  const { offset, bytes, rowBytes } = innerBytes({ name, dtype: t.dtype, shape: t.shape }, start, end);
  const rows = rowBytes === 0 ? 0 : t.byteLength / rowBytes;
  const src = t.bytes();
  const out = new Uint8Array(rows * bytes);
  for (let r = 0; r < rows; r++) out.set(src.subarray(r * rowBytes + offset, r * rowBytes + offset + bytes), r * bytes);
  return new Tensor(t.dtype, [...t.shape.slice(0, -1), end - start], out.buffer);
}

/** Rows [start, end) of an in-memory tensor as a view (for CheckpointSources that hold tensors). */
export function viewRowRange(t: Tensor, name: string, start: number, end: number): Tensor {
  const span = rowRangeSpan({ name, dtype: t.dtype, shape: t.shape }, start, end);
  return t.view(t.dtype, span.shape, t.byteOffset + span.byteOffset);
}
