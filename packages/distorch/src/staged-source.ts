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
  private readonly staged = new Map<string, ArrayBuffer>();

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
    const buffer = this.staged.get(name);
    if (buffer === undefined) return this.inner.tensor(name);
    const e = this.inner.entry(name);
    if (isBlockDType(e.dtype)) {
      // A GGUF block tensor may be viewed in its stored shape (whole blocks per row): take the
      // shape the mapped source gives it, without touching its pages.
      const view = this.inner.tensor(name);
      const shape = view.shape;
      view.dispose();
      return new Tensor(e.dtype, shape, buffer);
    }
    return new Tensor(e.dtype, e.shape, buffer);
  }

  tensorRows(name: string, start: number, end: number): Tensor {
    return this.inner.tensorRows(name, start, end);
  }

  tensorColumns(name: string, start: number, end: number): Tensor {
    return this.inner.tensorColumns(name, start, end);
  }

  close(): void {
    this.staged.clear();
    this.inner.close();
  }

  advise(name: string, advice: 'willneed' | 'dontneed'): void {
    this.inner.advise?.(name, advice);
  }

  /** Serves `name` from `buffer` (exactly its bytes as stored) until unstaged. */
  stage(name: string, buffer: ArrayBuffer): void {
    this.staged.set(name, buffer);
  }

  unstage(name: string): void {
    this.staged.delete(name);
  }

  isStaged(name: string): boolean {
    return this.staged.has(name);
  }
}
