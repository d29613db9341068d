import type { DType, Tensor } from '@ninodes/kernels';

/** One tensor of a checkpoint as its file describes it; nothing is read to produce this. */
export interface TensorEntry {
  readonly name: string;
  readonly dtype: DType;
  /** torch order, outermost first (GGUF's ne0-first dims are already reversed). */
  readonly shape: readonly number[];
  /** Absolute byte range of the tensor's data in its file. */
  readonly byteOffset: number;
  readonly byteLength: number;
  /** The file holding the data (sharded checkpoints span several). */
  readonly file: string;
}

/**
 * A checkpoint opened for reading: safetensors (single or sharded) in @ninodes/memory, GGUF in
 * @ninodes/quant. Opening parses headers only; `tensor()` returns a zero-copy view of the mapping.
 * Every later package treats all formats alike through this interface.
 */
export interface CheckpointSource {
  readonly format: 'safetensors' | 'gguf';
  /** The path the user opened (for sharded checkpoints, the index file). */
  readonly path: string;
  /** String metadata: safetensors `__metadata__`; GGUF metadata rendered as strings. */
  readonly metadata: Readonly<Record<string, string>>;
  entries(): readonly TensorEntry[];
  has(name: string): boolean;
  /** Throws a NinodesError (code TENSOR_NOT_FOUND) naming the file and the missing tensor. */
  entry(name: string): TensorEntry;
  /** Zero-copy view; validates the file is still the one that was opened (size, inode, mtime). */
  tensor(name: string): Tensor;
  /**
   * Rows [start, end) of the outermost dimension as a zero-copy view (a tensor-parallel rank's output
   * rows). GGUF block tensors: rows must be whole blocks (RANGE_NOT_BLOCK_ALIGNED otherwise).
   */
  tensorRows(name: string, start: number, end: number): Tensor;
  /**
   * Columns [start, end) of the innermost dimension, copied: only those bytes are read (pread for
   * files: nothing is mapped). GGUF block tensors: block-aligned ranges only, kept encoded
   * (RANGE_NOT_BLOCK_ALIGNED otherwise).
   */
  tensorColumns(name: string, start: number, end: number): Tensor;
  /** Unmaps; views taken earlier become empty rather than dangling. */
  close(): void;
  /**
   * Optional page-cache hint for one tensor: prefetch (`willneed`) or drop after use (`dontneed`);
   * with `rows`, only rows [start, end) of its outermost dimension (a source that cannot narrow
   * it, e.g. GGUF, advises the whole tensor).
   */
  advise?(name: string, advice: 'willneed' | 'dontneed', rows?: readonly [number, number]): void;
  /** Optional: the check tensor() makes (size, inode, mtime) of the file holding `name`, without a view. */
  verify?(name: string): void;
  /** Optional: faults in every page of one tensor without copying; returns a byte sum. */
  touch?(name: string): number;
  /**
   * Optional: reads one tensor's pages in and maps them on a worker thread (prefetch off the JS
   * thread: a later view finds them resident); resolves with the bytes populated (whole pages).
   * With `rows`, only rows [start, end) of its outermost dimension, as `advise`.
   */
  populate?(name: string, rows?: readonly [number, number]): Promise<number>;
}
