// Test-only: fixture paths and expected values as kernels Tensors, read by the repository's one
// independent test safetensors reader (@ninodes/test-safetensors), not by @ninodes/memory.
import { Tensor, type DType } from '@ninodes/kernels';
import { DTYPE_NAMES, readSafetensorsFile } from '@ninodes/test-safetensors';

export { fixturePath } from '@ninodes/test-safetensors';

export interface SafetensorsFixture {
  metadata: Record<string, string>;
  names: string[];
  headerJson: string;
  tensor(name: string): Tensor;
  f32(name: string): Float32Array;
  info(name: string): { dtype: string; shape: number[]; data_offsets: [number, number] };
}

/** Reads a whole (small) safetensors fixture; tensors are aligned copies. */
export function readSafetensorsFixture(path: string): SafetensorsFixture {
  const ck = readSafetensorsFile(path);
  const raw = (name: string) => {
    const t = ck.tensors.get(name);
    if (t === undefined) throw new Error(`no tensor ${name} in ${path}`);
    return t;
  };
  const tensor = (name: string): Tensor => {
    const t = raw(name);
    const dtype = DTYPE_NAMES[t.dtype] as DType | undefined;
    if (dtype === undefined) throw new Error(`dtype ${t.dtype}`);
    // A fresh copy per call, as before: tests may write into what they get.
    return new Tensor(dtype, t.shape, t.bytes.slice().buffer);
  };
  return {
    metadata: ck.metadata,
    names: [...ck.tensors.keys()],
    headerJson: ck.headerJson,
    info: (name) => {
      const t = raw(name);
      return { dtype: t.dtype, shape: t.shape, data_offsets: t.dataOffsets };
    },
    tensor,
    f32: (name) => tensor(name).data as Float32Array,
  };
}
