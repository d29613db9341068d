import { Tensor, isBlockDType } from '@ninodes/kernels';
import type { CheckpointSource, TensorEntry } from '@ninodes/memory';

/**
 * A checkpoint source that serves some tensors from host buffers instead of the mapping: the
 * streaming loader reads a group's linear weights into pooled buffers off the JS thread, stages
 * them here, and the model's linear ops (built over this source) prepare their weights from those
 * bytes. Every other tensor, and every tensor not staged, is the mapped source's zero-copy view.
 *
 * A staged tensor is a view of the buffer (no owner): the loader unstages it and reuses the buffer
 * only after the ops that read it released what they prepared.
 */
export class StagedSource implements CheckpointSource {
  private readonly staged = new Map<string, { readonly buffer: ArrayBufferLike; readonly byteOffset: number; readonly shape?: readonly number[] }>();
  /** Views of the mapping kept across loads (see stageMapped), disposed on close. */
  private readonly mapped = new Map<string, Tensor>();

  constructor(readonly inner: CheckpointSource) {}

  get format(): CheckpointSource['format'] {
    return this.inner.format;
  }

  get path(): string {
    return this.inner.path;
  }

  get metadata(): Readonly<Record<string, string>> {
    return this.inner.metadata;
  }

  entries(): readonly TensorEntry[] {
    return this.inner.entries();
  }

  has(name: string): boolean {
    return this.inner.has(name);
  }

  entry(name: string): TensorEntry {
    return this.inner.entry(name);
  }

  tensor(name: string): Tensor {
    const staged = this.staged.get(name);
    if (staged === undefined) return this.inner.tensor(name);
    const e = this.inner.entry(name);
    const { buffer, byteOffset } = staged;
    if (staged.shape !== undefined) return new Tensor(e.dtype, staged.shape, buffer, { byteOffset });
    if (isBlockDType(e.dtype)) {
      // A GGUF block tensor may be viewed in its stored shape (whole blocks per row): take the
      // shape the mapped source gives it, without touching its pages.
      const view = this.inner.tensor(name);
      const shape = view.shape;
      view.dispose();
      return new Tensor(e.dtype, shape, buffer, { byteOffset });
    }
    return new Tensor(e.dtype, e.shape, buffer, { byteOffset });
  }

  tensorRows(name: string, start: number, end: number): Tensor {
    return this.inner.tensorRows(name, start, end);
  }

  tensorColumns(name: string, start: number, end: number): Tensor {
    return this.inner.tensorColumns(name, start, end);
  }

  close(): void {
    this.staged.clear();
    for (const t of this.mapped.values()) t.dispose();
    this.mapped.clear();
    this.inner.close();
  }

  advise(name: string, advice: 'willneed' | 'dontneed', rows?: readonly [number, number]): void {
    this.inner.advise?.(name, advice, rows);
  }

  verify(name: string): void {
    this.inner.verify?.(name);
  }

  /** Populates the mapped pages of `name` (of `rows`: see CheckpointSource.populate); 0 when the source cannot. */
  populate(name: string, rows?: readonly [number, number]): Promise<number> {
    return this.inner.populate?.(name, rows) ?? Promise.resolve(0);
  }

  /** Serves `name` from `buffer` (exactly its bytes as stored) until unstaged. */
  stage(name: string, buffer: ArrayBuffer): void {
    this.staged.set(name, { buffer, byteOffset: 0 });
  }

  /**
   * Serves `name` from a view of the mapping (zero-copy; its pages fault in where they are used)
   * that is made once and kept across loads: a new view per load is a new external ArrayBuffer,
   * and V8 answers hundreds of MiB of those per step with major collections (measured: more CPU
   * than the copy they save). The view holds no memory by itself; `advise('dontneed')` drops the
   * pages it mapped.
   */
  stageMapped(name: string): void {
    let t = this.mapped.get(name);
    if (t === undefined) {
      t = this.inner.tensor(name);
      this.mapped.set(name, t);
    } else {
      // The check tensor() makes on each view (the SIGBUS guard): the file is still the one mapped.
      this.inner.verify?.(name);
    }
    this.staged.set(name, { buffer: t.buffer, byteOffset: t.byteOffset, shape: t.shape });
  }

  unstage(name: string): void {
    this.staged.delete(name);
  }

  isStaged(name: string): boolean {
    return this.staged.has(name);
  }
}
