import { readSync } from 'node:fs';
import { type MadviseAdvice, MappedFile, Tensor } from '@ninodes/kernels';
import { MemoryError } from './error-codes.js';
import type { CheckpointSource, TensorEntry } from './checkpoint-source.js';
import { type SafetensorsHeader, parseHeader, readHeaderLength } from './safetensors-header.js';
import { readColumnRange, rowRangeSpan } from './tensor-ranges.js';

export interface OpenSafetensorsOptions {
  /** `shared` (default) read-only mapping; `private` copy-on-write (writes through views stay local). */
  mode?: 'shared' | 'private';
  /** Check size, inode and mtime on every tensor() call (default true): the SIGBUS guard. */
  verifyOnUse?: boolean;
}

/** One safetensors file over a read-only mmap; the header is parsed and validated at open. */
export class SafetensorsFile implements CheckpointSource {
  readonly format = 'safetensors' as const;
  readonly path: string;
  readonly metadata: Readonly<Record<string, string>>;
  readonly header: SafetensorsHeader;
  private readonly file: MappedFile;
  private readonly byName: Map<string, TensorEntry>;
  private readonly verifyOnUse: boolean;

  private constructor(path: string, file: MappedFile, header: SafetensorsHeader, verifyOnUse: boolean) {
    this.path = path;
    this.file = file;
    this.header = header;
    this.metadata = header.metadata;
    this.verifyOnUse = verifyOnUse;
    this.byName = new Map(header.entries.map((e) => [e.name, e]));
  }

  static open(path: string, options: OpenSafetensorsOptions = {}): SafetensorsFile {
    const file = MappedFile.open(path, options.mode === undefined ? {} : { mode: options.mode });
    try {
      const size = file.byteLength;
      const prefix = new Uint8Array(8);
      const got = size >= 8 ? readSync(file.descriptor, prefix, 0, 8, 0) : 0;
      const headerBytes = readHeaderLength(prefix.subarray(0, got), size, path);
      const json = new Uint8Array(headerBytes);
      let read = 0;
      while (read < headerBytes) {
        const n = readSync(file.descriptor, json, read, headerBytes - read, 8 + read);
        if (n === 0) break;
        read += n;
      }
      const header = parseHeader(json.subarray(0, read), size - 8 - headerBytes, path);
      return new SafetensorsFile(path, file, header, options.verifyOnUse ?? true);
    } catch (error) {
      file.release();
      throw error;
    }
  }

  get closed(): boolean {
    return this.file.released;
  }

  /** Bytes of the whole file. */
  get byteLength(): number {
    return this.file.byteLength;
  }

  entries(): readonly TensorEntry[] {
    return this.header.entries;
  }

  has(name: string): boolean {
    return this.byName.has(name);
  }

  entry(name: string): TensorEntry {
    const e = this.byName.get(name);
    if (e === undefined) {
      throw new MemoryError('TENSOR_NOT_FOUND', `${this.path} has no tensor '${name}'`, {
        where: this.path,
        value: name,
        hint: `it has ${this.byName.size} tensors; list them with entries()`,
      });
    }
    return e;
  }

  tensor(name: string): Tensor {
    const e = this.entry(name);
    if (this.verifyOnUse) this.file.verify();
    const buffer = this.file.view(e.byteOffset, e.byteLength);
    return new Tensor(e.dtype, e.shape, buffer, { owner: this.file.viewOwner(buffer) });
  }

  tensorRows(name: string, start: number, end: number): Tensor {
    const e = this.entry(name);
    const span = rowRangeSpan(e, start, end);
    if (this.verifyOnUse) this.file.verify();
    const buffer = this.file.view(e.byteOffset + span.byteOffset, span.byteLength);
    return new Tensor(e.dtype, span.shape, buffer, { owner: this.file.viewOwner(buffer) });
  }

  tensorColumns(name: string, start: number, end: number): Tensor {
    const e = this.entry(name);
    if (this.file.released) throw new MemoryError('FILE_CLOSED', `${this.path} was closed`, { where: name, hint: 'open the checkpoint again' });
    if (this.verifyOnUse) this.file.verify();
    return readColumnRange(this.file.descriptor, e, start, end);
  }

  /** madvise a tensor's pages (of rows [start, end) with `rows`): `willneed` prefetches, `dontneed` drops them after use. */
  advise(name: string, advice: MadviseAdvice, rows?: readonly [number, number]): void {
    const { byteOffset, byteLength } = this.span(name, rows);
    this.file.advise(byteOffset, byteLength, advice);
  }

  /** Faults in a tensor's pages (one byte read per page); returns a byte sum. */
  touch(name: string): number {
    const e = this.entry(name);
    if (this.verifyOnUse) this.file.verify();
    return this.file.touch(e.byteOffset, e.byteLength);
  }

  /**
   * Reads a tensor's pages (of rows [start, end) with `rows`) in and maps them on a worker thread;
   * resolves with the bytes (whole pages).
   */
  populate(name: string, rows?: readonly [number, number]): Promise<number> {
    const { byteOffset, byteLength } = this.span(name, rows);
    if (this.verifyOnUse) this.file.verify();
    return this.file.populate(byteOffset, byteLength);
  }

  /** Where a tensor (or rows [start, end) of it) lies in the file. */
  private span(name: string, rows: readonly [number, number] | undefined): { byteOffset: number; byteLength: number } {
    const e = this.entry(name);
    if (rows === undefined) return e;
    const span = rowRangeSpan(e, rows[0], rows[1]);
    return { byteOffset: e.byteOffset + span.byteOffset, byteLength: span.byteLength };
  }

  /** Reads every byte of a tensor (in parallel, no copy) and returns their sum. */
  sumBytes(name: string): number {
    const e = this.entry(name);
    if (this.verifyOnUse) this.file.verify();
    return this.file.sumBytes(e.byteOffset, e.byteLength);
  }

  /** Throws FILE_TRUNCATED / FILE_MODIFIED / FILE_REPLACED when the file changed since open. */
  verify(): void {
    this.file.verify();
  }

  close(): void {
    this.file.release();
  }
}
