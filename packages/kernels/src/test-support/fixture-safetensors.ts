// Test-only: a fixture's tensors as kernels Tensors (aligned copies), read by the repository's one
// test safetensors reader (@ninodes/test-safetensors; the real reader lives in @ninodes/memory,
// which kernels may not import).
import { DTYPE_NAMES, fixturePath, readSafetensorsFile } from '@ninodes/test-safetensors';
import type { ElementDType } from '../dtype.js';
import { Tensor } from '../tensor.js';

export function readFixture(...parts: string[]): Map<string, Tensor> {
  const out = new Map<string, Tensor>();
  for (const [name, t] of readSafetensorsFile(fixturePath(...parts)).tensors) {
    const dtype = DTYPE_NAMES[t.dtype] as ElementDType | undefined;
    if (dtype === undefined) throw new Error(`fixture dtype ${t.dtype} not handled`);
    out.set(name, new Tensor(dtype, t.shape, t.bytes.buffer as ArrayBuffer));
  }
  return out;
}

export function get<D extends ElementDType>(tensors: Map<string, Tensor>, name: string, dtype: D): Tensor<D> {
  const t = tensors.get(name);
  if (t === undefined || t.dtype !== dtype) throw new Error(`fixture tensor ${name} (${dtype}) missing`);
  return t as Tensor<D>;
}
