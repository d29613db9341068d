// Checkpoint workloads for tests and the `io` benchmark: tensors with deterministic bytes, written
// either sparse (header + ftruncate: instant, any size, no disk blocks) or filled (for read
// throughput), a full read, and layer-by-layer passes through the weight cache.
import { closeSync, ftruncateSync, openSync, writeSync } from 'node:fs';
import { type Tensor, byteSizeOf } from '@ninodes/kernels';
import type { CheckpointSource } from './checkpoint-source.js';
import { type TensorSource, buildHeader, writeSafetensors } from './safetensors-writer.js';
import type { CacheStats, WeightCache } from './weight-cache.js';

export interface TensorSpec {
  readonly name: string;
  readonly dtype: TensorSource['dtype'];
  readonly shape: readonly number[];
}

/**
 * Deterministic bytes per tensor name: an FNV-1a seed, then xorshift32 a word at a time (fast
 * enough that writing gigabytes is disk-bound). Same name, same bytes.
 */
export function patternBytes(name: string, bytes: number): Uint8Array {
  const out = new Uint8Array(bytes);
  let s = 2166136261;
  for (let i = 0; i < name.length; i++) s = Math.imul(s ^ name.charCodeAt(i), 16777619);
  s = s | 1;
  const words = new Uint32Array(out.buffer, 0, bytes >>> 2);
  for (let i = 0; i < words.length; i++) {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    words[i] = s;
  }
  for (let i = words.length * 4; i < bytes; i++) out[i] = i & 0xff;
  return out;
}

/**
 * Writable tensors for a list of names, dtypes and shapes, their bytes produced on demand by `fill`
 * (default `patternBytes`). Layout-neutral: a real model's key layout comes from the package that
 * owns the model (e.g. `h3TensorSpecs` in @ninodes/models).
 */
export function patternTensors(specs: readonly TensorSpec[], fill: (name: string, bytes: number) => Uint8Array = patternBytes): TensorSource[] {
  return specs.map((t) => {
    const bytes = byteSizeOf(t.dtype, t.shape, t.name);
    return { name: t.name, dtype: t.dtype, shape: t.shape, data: () => fill(t.name, bytes) };
  });
}

/** Writes the header and extends the file sparsely to its full size; returns the file size. */
export function writeSparseCheckpoint(path: string, tensors: readonly TensorSource[], metadata: Readonly<Record<string, string>> = { format: 'pt' }): number {
  const { json, sizes } = buildHeader(tensors, metadata, path);
  const length = new Uint8Array(8);
  new DataView(length.buffer).setBigUint64(0, BigInt(json.byteLength), true);
  const total = 8 + json.byteLength + sizes.reduce((a, b) => a + b, 0);
  const fd = openSync(path, 'w');
  try {
    writeSync(fd, length);
    writeSync(fd, json);
    ftruncateSync(fd, total);
  } finally {
    closeSync(fd);
  }
  return total;
}

/** Writes every tensor's bytes (streaming, atomic); returns the file size. */
export async function writeFilledCheckpoint(path: string, tensors: readonly TensorSource[], metadata: Readonly<Record<string, string>> = { format: 'pt' }): Promise<number> {
  return (await writeSafetensors(path, tensors, { metadata })).bytes;
}

/**
 * Reads every tensor of a checkpoint (the "read all" of the io benchmark). `bytes` (default) reads
 * every byte and returns their sum as the checksum; `pages` only faults in each page (one byte per
 * page), which measures mapping cost rather than a full read.
 */
export function readAllTensors(source: CheckpointSource & { sumBytes?(name: string): number }, options: { mode?: 'bytes' | 'pages' } = {}): { bytes: number; checksum: number } {
  const mode = options.mode ?? 'bytes';
  let bytes = 0;
  let checksum = 0;
  for (const e of source.entries()) {
    if (mode === 'bytes' && source.sumBytes !== undefined) {
      checksum += source.sumBytes(e.name);
    } else if (mode === 'pages' && source.touch !== undefined) {
      checksum += source.touch(e.name);
    } else {
      const t = source.tensor(e.name);
      const b = t.bytes();
      const step = mode === 'pages' ? 4096 : 1;
      for (let i = 0; i < b.length; i += step) checksum += b[i] as number;
      t.dispose();
    }
    bytes += e.byteLength;
  }
  return { bytes, checksum };
}

/** Registers a checkpoint's tensors with a cache in file order (the load order). */
export function registerCheckpoint<T>(cache: WeightCache<T>, model: string, source: CheckpointSource): void {
  cache.registerModel(model, source.entries().map((e) => ({ key: e.name, bytes: e.byteLength })));
}

/**
 * One layer-by-layer pass through the cache: every tensor in file order is acquired, materialized
 * on a miss by `materialize` (e.g. a copy or a dequantization) and released. Returns the device's
 * statistics after the pass.
 */
export function cachePass<T>(cache: WeightCache<T>, device: string, model: string, source: CheckpointSource, materialize: (tensor: Tensor) => T): CacheStats {
  cache.beginPass();
  for (const e of source.entries()) {
    const lease = cache.acquire(device, model, e.name, () => {
      const view = source.tensor(e.name);
      try {
        return materialize(view);
      } finally {
        view.dispose();
      }
    });
    lease.release();
  }
  return cache.stats(device);
}
