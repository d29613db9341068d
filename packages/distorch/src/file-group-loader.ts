import { type FileHandle, open } from 'node:fs/promises';
import { type DType } from '@ninodes/kernels';
import { DistorchError } from './error-codes.js';
import { type CheckpointSource, HostBufferPool, type PooledBuffer } from '@ninodes/memory';
import type { LayoutGroup } from '@ninodes/quant';
import type { GroupLoader, LoadedGroup } from './streaming-executor.js';

/** One tensor's bytes as stored, read into a pooled host buffer. */
export interface LoadedTensor {
  readonly name: string;
  readonly dtype: DType;
  readonly shape: readonly number[];
  readonly bytes: Uint8Array;
}

export interface FileGroupLoader extends GroupLoader<ReadonlyMap<string, LoadedTensor>> {
  /** Closes the file handles it opened. */
  close(): Promise<void>;
}

/** Positioned reads of one tensor's bytes as stored into a pooled buffer (libuv's thread pool, off the JS thread). */
export interface TensorReader {
  read(name: string): Promise<{ tensor: LoadedTensor; buffer: PooledBuffer }>;
  /** Closes the file handles it opened. */
  close(): Promise<void>;
}

export function tensorReader(source: CheckpointSource, pool: HostBufferPool): TensorReader {
  const handles = new Map<string, Promise<FileHandle>>();
  const handle = (file: string): Promise<FileHandle> => {
    let h = handles.get(file);
    if (h === undefined) {
      h = open(file, 'r');
      handles.set(file, h);
    }
    return h;
  };
  return {
    async read(name: string): Promise<{ tensor: LoadedTensor; buffer: PooledBuffer }> {
      const e = source.entry(name);
      const buffer = pool.acquire(e.byteLength);
      try {
        const bytes = new Uint8Array(buffer.buffer, 0, e.byteLength);
        const fh = await handle(e.file);
        let done = 0;
        while (done < e.byteLength) {
          const { bytesRead } = await fh.read(bytes, done, e.byteLength - done, e.byteOffset + done);
          if (bytesRead === 0) {
            throw new DistorchError('FILE_TRUNCATED', `${e.file} ends inside tensor '${name}' (${done} of ${e.byteLength} bytes read)`, { value: name, where: e.file, hint: 'the file changed or was cut short since it was opened; re-download or re-convert it' });
          }
          done += bytesRead;
        }
        return { tensor: { name, dtype: e.dtype, shape: e.shape, bytes }, buffer };
      } catch (error) {
        buffer.release();
        throw error;
      }
    },
    async close(): Promise<void> {
      const all = [...handles.values()];
      handles.clear();
      await Promise.allSettled(all.map(async (h) => (await h).close()));
    },
  };
}

/**
 * `reader`, adding each tensor's bytes to `progress` when its read starts (its buffer is taken from
 * the pool then): what a load in flight holds, for the executor's `inFlightBytes`. The caller takes
 * them off again when it gives a buffer back.
 */
export function countingReader(reader: TensorReader, source: CheckpointSource, progress: { bytes: number }): TensorReader {
  return {
    read: (name) => {
      progress.bytes += source.entry(name).byteLength;
      return reader.read(name);
    },
    close: () => reader.close(),
  };
}

/**
 * Reads every tensor of `names`, at most `concurrency` at a time (default: all at once); on any
 * failure releases what was read and throws the first error. Each read in flight holds one of
 * libuv's threads (4 by default), where the model's own kernels queue too: a loader that reads
 * ahead while the model computes bounds it.
 */
export async function readAll(reader: TensorReader, names: readonly string[], concurrency = Number.POSITIVE_INFINITY): Promise<{ tensor: LoadedTensor; buffer: PooledBuffer }[]> {
  const results: PromiseSettledResult<{ tensor: LoadedTensor; buffer: PooledBuffer }>[] = new Array(names.length);
  let next = 0;
  let failed = false;
  const lane = async (): Promise<void> => {
    while (next < names.length && !failed) {
      const i = next++;
      try {
        results[i] = { status: 'fulfilled', value: await reader.read(names[i] as string) };
      } catch (reason) {
        results[i] = { status: 'rejected', reason };
        failed = true;
      }
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(concurrency, names.length)) }, lane));
  const ok = results.filter((r): r is PromiseFulfilledResult<{ tensor: LoadedTensor; buffer: PooledBuffer }> => r?.status === 'fulfilled').map((r) => r.value);
  const error = results.find((r): r is PromiseRejectedResult => r?.status === 'rejected');
  if (error !== undefined) {
    for (const r of ok) r.buffer.release();
    throw error.reason;
  }
  return ok;
}

/**
 * Reads a group's tensors with positioned reads (libuv's thread pool, so reads overlap compute on
 * the JS thread) into buffers from a HostBufferPool: blocks of one model come in a few sizes, so an
 * evicted group's buffers serve the next. The mapped checkpoint is only advised (`willneed` /
 * `dontneed`); its pages are never copied through the mapping, so they add no file-backed RSS.
 */
export function fileGroupLoader(source: CheckpointSource, options: { pool?: HostBufferPool } = {}): FileGroupLoader {
  const pool = options.pool ?? new HostBufferPool({ capBytes: 0 });
  const reader = tensorReader(source, pool);
  /** The bytes each load in flight has taken buffers for. */
  const inFlight = new Set<{ bytes: number }>();

  return {
    async load(group: LayoutGroup): Promise<LoadedGroup<ReadonlyMap<string, LoadedTensor>>> {
      const progress = { bytes: 0 };
      inFlight.add(progress);
      let ok: Awaited<ReturnType<typeof readAll>>;
      try {
        ok = await readAll(countingReader(reader, source, progress), group.tensors.map((t) => t.name));
      } finally {
        inFlight.delete(progress);
      }
      let released = false;
      return {
        value: new Map(ok.map((r) => [r.tensor.name, r.tensor])),
        bytes: ok.reduce((a, r) => a + r.tensor.bytes.byteLength, 0),
        release: () => {
          if (released) return;
          released = true;
          for (const r of ok) r.buffer.release();
        },
      };
    },
    // A group holds its tensors' bytes as stored, and nothing more while it loads.
    footprint: (group) => {
      const bytes = group.tensors.reduce((a, t) => a + t.byteLength, 0);
      return { bytes, peakBytes: bytes };
    },
    inFlightBytes: () => [...inFlight].reduce((a, p) => a + p.bytes, 0),
    advise(group: LayoutGroup, advice: 'willneed' | 'dontneed'): void {
      if (source.advise === undefined) return;
      for (const t of group.tensors) source.advise(t.name, advice);
    },
    idleBytes: () => idleOf(pool),
    trim: () => pool.trim(),
    close: () => reader.close(),
  };
}

/** Bytes a pool keeps idle for reuse. */
export function idleOf(pool: HostBufferPool): number {
  const s = pool.stats();
  return s.pooledBytes - s.inUseBytes;
}
