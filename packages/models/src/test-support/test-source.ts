// Test-only f32 LinearProvider (weights widened to f32, float64 accumulation): model tests run
// without @ninodes/quant's providers.
import { Tensor } from '@ninodes/kernels';
import type { CheckpointSource } from '@ninodes/memory';
import type { LinearOp, LinearProvider, LinearSpec } from '../linear-provider.js';
import { castF32 } from '../ops.js';

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
