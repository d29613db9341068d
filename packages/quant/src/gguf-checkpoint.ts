import { readSync } from 'node:fs';
import { type MadviseAdvice, MappedFile, NinodesError, Tensor, byteSizeOf } from '@ninodes/kernels';
import { QuantError } from './error-codes.js';
import { type CheckpointSource, type TensorEntry, readColumnRange, rowRangeSpan } from '@ninodes/memory';
import { type GgufHeader, type GgufTensorInfo, GgufNeedMoreBytes, parseGguf } from './gguf-parser.js';
import { ggufValueToString } from './gguf-types.js';

export interface OpenGgufOptions {
  /** Check size, inode and mtime on every tensor() call (default true): the SIGBUS guard. */
  verifyOnUse?: boolean;
}

/** Parses the header from an open descriptor, growing the read until the header fits. */
function readHeaderFrom(fd: number, fileSize: number, where: string): GgufHeader {
  let want = Math.min(fileSize, 1 << 20);
  for (;;) {
    const bytes = new Uint8Array(want);
    let got = 0;
    while (got < want) {
      const n = readSync(fd, bytes, got, want - got, got);
      if (n === 0) break;
      got += n;
    }
    try {
      return parseGguf(bytes.subarray(0, got), { fileSize, where });
    } catch (error) {
      if (!(error instanceof GgufNeedMoreBytes) || got < want) throw error;
      want = Math.min(fileSize, Math.max(want * 2, error.needed));
    }
  }
}

/** Reads and parses only the header of a GGUF file. */
export function readGgufHeader(path: string): GgufHeader {
  const file = MappedFile.open(path);
  try {
    return readHeaderFrom(file.descriptor, file.byteLength, path);
  } finally {
    file.release();
  }
}

/**
 * A GGUF file as a CheckpointSource over a read-only mmap: entries carry torch-order shapes
 * (`comfy.gguf.orig_shape` honoured) and kernels dtypes, so later packages treat it like safetensors.
 * Opening parses the header only; `tensor()` is a zero-copy view.
 */
export class GgufCheckpoint implements CheckpointSource {
  readonly format = 'gguf' as const;
  readonly path: string;
  readonly header: GgufHeader;
  readonly metadata: Readonly<Record<string, string>>;
  private readonly file: MappedFile;
  private readonly byName: Map<string, GgufTensorInfo>;
  private readonly entryByName: Map<string, TensorEntry>;
  private readonly entryList: readonly TensorEntry[];
  private readonly verifyOnUse: boolean;

  private constructor(path: string, file: MappedFile, header: GgufHeader, verifyOnUse: boolean) {
    this.path = path;
    this.file = file;
    this.header = header;
    this.verifyOnUse = verifyOnUse;
    // Arrays are rendered when read: a vocabulary rendered at open would cost more than its header.
    const meta: Record<string, string> = {};
    for (const [k, v] of header.metadata) {
      if (v.type === 'array') Object.defineProperty(meta, k, { enumerable: true, get: () => ggufValueToString(v) });
      else meta[k] = ggufValueToString(v);
    }
    this.metadata = Object.freeze(meta);
    this.byName = new Map(header.tensors.map((t) => [t.name, t]));
    this.entryList = Object.freeze(
      header.tensors.map((t) =>
        Object.freeze({ name: t.name, dtype: t.dtype, shape: t.shape, byteOffset: t.byteOffset, byteLength: t.byteLength, file: path }),
      ),
    );
    this.entryByName = new Map(this.entryList.map((e) => [e.name, e]));
  }

  static open(path: string, options: OpenGgufOptions = {}): GgufCheckpoint {
    const file = MappedFile.open(path);
    try {
      return new GgufCheckpoint(path, file, readHeaderFrom(file.descriptor, file.byteLength, path), options.verifyOnUse ?? true);
    } catch (error) {
      file.release();
      throw error;
    }
  }

  get closed(): boolean {
    return this.file.released;
  }

  entries(): readonly TensorEntry[] {
    return this.entryList;
  }

  has(name: string): boolean {
    return this.byName.has(name);
  }

  entry(name: string): TensorEntry {
    const e = this.entryByName.get(name);
    if (e === undefined) throw this.notFound(name);
    return e;
  }

  /** The GGUF-specific description (ggml type, stored dims) of a tensor. */
  info(name: string): GgufTensorInfo {
    const t = this.byName.get(name);
    if (t === undefined) throw this.notFound(name);
    return t;
  }

  /**
   * Zero-copy view of the tensor's bytes in its torch shape. A block tensor whose original shape does
   * not keep whole blocks on the last dimension comes in its stored shape (see `info`); `readF32`
   * decodes and reshapes it.
   */
  tensor(name: string): Tensor {
    const t = this.info(name);
    this.checkOpen(name);
    let shape = t.shape;
    try {
      byteSizeOf(t.dtype, shape);
    } catch {
      shape = t.storedShape;
    }
    const buffer = this.file.view(t.byteOffset, t.byteLength);
    return new Tensor(t.dtype, shape, buffer, { owner: this.file.viewOwner(buffer) });
  }

  /**
   * Rows [start, end) as a zero-copy view: a block tensor's rows are whole blocks when its torch shape
   * keeps whole blocks on the last dimension (else RANGE_NOT_BLOCK_ALIGNED).
   */
  tensorRows(name: string, start: number, end: number): Tensor {
    const t = this.info(name);
    const span = rowRangeSpan({ name, dtype: t.dtype, shape: t.shape }, start, end);
    this.checkOpen(name);
    const buffer = this.file.view(t.byteOffset + span.byteOffset, span.byteLength);
    return new Tensor(t.dtype, span.shape, buffer, { owner: this.file.viewOwner(buffer) });
  }

  /**
   * Columns [start, end) copied with pread. Block tensors take block-aligned ranges only and stay
   * encoded (RANGE_NOT_BLOCK_ALIGNED otherwise: decode the whole tensor and slice instead).
   */
  tensorColumns(name: string, start: number, end: number): Tensor {
    this.checkOpen(name);
    return readColumnRange(this.file.descriptor, this.entry(name), start, end);
  }

  /** madvise a tensor's pages (`dontneed` after use, `willneed` to prefetch). */
  advise(name: string, advice: MadviseAdvice): void {
    const t = this.info(name);
    this.file.advise(t.byteOffset, t.byteLength, advice);
  }

  /** The check tensor() makes (open, and with verifyOnUse the file unchanged), without a view. */
  verify(name: string): void {
    this.checkOpen(name);
  }

  /** Faults in a tensor's pages without copying; returns a byte sum. */
  touch(name: string): number {
    const t = this.info(name);
    if (this.verifyOnUse) this.file.verify();
    return this.file.touch(t.byteOffset, t.byteLength);
  }

  /** Reads a tensor's pages in and maps them on a worker thread; resolves with the bytes (whole pages). */
  populate(name: string): Promise<number> {
    const t = this.info(name);
    if (this.verifyOnUse) this.file.verify();
    return this.file.populate(t.byteOffset, t.byteLength);
  }

  close(): void {
    this.file.release();
  }

  private checkOpen(name: string): void {
    if (this.file.released) {
      throw new QuantError('FILE_CLOSED', `${this.path} was closed`, { where: name, hint: 'open the checkpoint again' });
    }
    if (this.verifyOnUse) this.file.verify();
  }

  private notFound(name: string): NinodesError {
    return new QuantError('TENSOR_NOT_FOUND', `tensor '${name}' is not in ${this.path}`, {
      value: name,
      where: this.path,
      hint: `the file has ${this.entryList.length} tensors`,
    });
  }
}
