// Test-only CheckpointSource over tensors in memory (stand-in for safetensors files in unit tests).
import { Tensor } from '@ninodes/kernels';
import { QuantError } from '../error-codes.js';
import { type CheckpointSource, type TensorEntry, copyColumnRange, viewRowRange } from '@ninodes/memory';
import { readSafetensorsFixture } from './fixtures.js';

export function memoryCheckpoint(path: string, tensors: Record<string, Tensor>, metadata: Record<string, string> = {}): CheckpointSource {
  let offset = 0;
  const list: TensorEntry[] = Object.entries(tensors).map(([name, t]) => {
    const e = { name, dtype: t.dtype, shape: t.shape, byteOffset: offset, byteLength: t.byteLength, file: path };
    offset += t.byteLength;
    return e;
  });
  const byName = new Map(list.map((e) => [e.name, e]));
  return {
    format: 'safetensors',
    path,
    metadata,
    entries: () => list,
    has: (name) => byName.has(name),
    entry(name) {
      const e = byName.get(name);
      if (!e) throw new QuantError('TENSOR_NOT_FOUND', `${name} not in ${path}`, { value: name, where: path });
      return e;
    },
    tensor(name) {
      const t = tensors[name];
      if (!t) throw new QuantError('TENSOR_NOT_FOUND', `${name} not in ${path}`, { value: name, where: path });
      // A fresh view per call, as a mapped file gives: a weight cache disposing the view it was
      // handed (on eviction) must not free the tensor this source holds.
      return new Tensor(t.dtype, t.shape, t.buffer, { byteOffset: t.byteOffset });
    },
    tensorRows(name, start, end) {
      return viewRowRange(this.tensor(name), name, start, end);
    },
    tensorColumns(name, start, end) {
      return copyColumnRange(this.tensor(name), name, start, end);
    },
    close() {},
  };
}

export function fixtureCheckpoint(path: string): CheckpointSource {
  const f = readSafetensorsFixture(path);
  return memoryCheckpoint(path, Object.fromEntries(f.names.map((n) => [n, f.tensor(n)])), f.metadata);
}
