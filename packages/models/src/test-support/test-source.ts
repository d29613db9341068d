// Test-only CheckpointSource over the test safetensors reader, and an f32 LinearProvider: the model
// under test gets its weights without depending on @ninodes/memory or @ninodes/quant.
import { type DType, Tensor } from '@ninodes/kernels';
import type { CheckpointSource, TensorEntry } from '@ninodes/memory';
import type { LinearOp, LinearProvider, LinearSpec } from '../linear-provider.js';
import { castF32 } from '../ops.js';
import { readSafetensorsFile } from './read-safetensors.js';

const DTYPES: Record<string, DType> = { F64: 'f64', F32: 'f32', F16: 'f16', BF16: 'bf16', I8: 'i8', U8: 'u8', I32: 'i32' };

export function openTestSource(path: string): CheckpointSource {
  const ck = readSafetensorsFile(path);
  const entries: TensorEntry[] = [...ck.tensors.entries()].map(([name, t]) => ({
    name,
    dtype: DTYPES[t.dtype] as DType,
    shape: t.shape,
    byteOffset: t.bytes.byteOffset,
    byteLength: t.bytes.byteLength,
    file: path,
  }));
  const byName = new Map(entries.map((e) => [e.name, e]));
  return {
    format: 'safetensors',
    path,
    metadata: ck.metadata,
    entries: () => entries,
    has: (name) => byName.has(name),
    entry(name) {
      const e = byName.get(name);
      if (!e) throw new Error(`TENSOR_NOT_FOUND ${name}`);
      return e;
    },
    tensor(name) {
      const e = this.entry(name);
      const raw = ck.tensors.get(name);
      if (!raw) throw new Error(`TENSOR_NOT_FOUND ${name}`);
      // aligned private copy
      const bytes = Uint8Array.from(raw.bytes);
      return new Tensor(e.dtype, e.shape, bytes.buffer);
    },
    close() {},
  };
}

/** x·Wᵀ + b with the weight widened to f32 and float64 accumulation. */
export function testLinearProvider(source: CheckpointSource): LinearProvider & { readonly calls: string[] } {
  const calls: string[] = [];
  return {
    calls,
    linear(spec: LinearSpec): LinearOp {
      let w: Tensor<'f32'> | undefined;
      let b: Tensor<'f32'> | undefined;
      const weight = (): Tensor<'f32'> => (w ??= castF32(source.tensor(`${spec.name}.weight`)));
      return {
        spec,
        format: 'f32',
        async materializedWeight() {
          return weight();
        },
        async forward(x) {
          calls.push(spec.name);
          const wd = weight().data;
          if (spec.bias) b ??= castF32(source.tensor(`${spec.name}.bias`));
          const bd = b?.data;
          const k = spec.inFeatures;
          const n = spec.outFeatures;
          const m = x.numel / k;
          const xd = x.data;
          const out = new Float32Array(m * n);
          for (let i = 0; i < m; i++) {
            for (let j = 0; j < n; j++) {
              let s = 0;
              for (let p = 0; p < k; p++) s += (xd[i * k + p] as number) * (wd[j * k + p] as number);
              out[i * n + j] = s + (bd ? (bd[j] as number) : 0);
            }
          }
          return Tensor.fromArray('f32', [m, n], out);
        },
      };
    },
  };
}
