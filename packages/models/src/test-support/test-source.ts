// Test-only f32 LinearProvider (weights widened to f32, float64 accumulation): model tests run
// without @ninodes/quant's providers.
import { Tensor } from '@ninodes/kernels';
import type { CheckpointSource } from '@ninodes/memory';
import type { LinearOp, LinearProvider, LinearSpec } from '../linear-provider.js';
import { castF32 } from '../ops.js';

/**
 * x·Wᵀ + b with the weight widened to f32 and float64 accumulation. Its ops have forwardRows (output
 * rows [start, stop), the same sums); `rowCalls` records each as `name[start, stop)`.
 */
export function testLinearProvider(source: CheckpointSource): LinearProvider & { readonly calls: string[]; readonly rowCalls: string[] } {
  const calls: string[] = [];
  const rowCalls: string[] = [];
  return {
    calls,
    rowCalls,
    linear(spec: LinearSpec): LinearOp {
      let w: Tensor<'f32'> | undefined;
      let b: Tensor<'f32'> | undefined;
      const weight = (): Tensor<'f32'> => (w ??= castF32(source.tensor(`${spec.name}.weight`)));
      const run = (x: Tensor<'f32'>, start: number, stop: number): Tensor<'f32'> => {
        const wd = weight().data;
        if (spec.bias) b ??= castF32(source.tensor(`${spec.name}.bias`));
        const bd = b?.data;
        const k = spec.inFeatures;
        const n = stop - start;
        const m = x.numel / k;
        const xd = x.data;
        const out = new Float32Array(m * n);
        for (let i = 0; i < m; i++) {
          for (let j = 0; j < n; j++) {
            const r = start + j;
            let s = 0;
            for (let p = 0; p < k; p++) s += (xd[i * k + p] as number) * (wd[r * k + p] as number);
            out[i * n + j] = s + (bd ? (bd[r] as number) : 0);
          }
        }
        return Tensor.fromArray('f32', [m, n], out);
      };
      return {
        spec,
        format: 'f32',
        async materializedWeight() {
          return weight();
        },
        async forward(x) {
          calls.push(spec.name);
          return run(x, 0, spec.outFeatures);
        },
        async forwardRows(x, start, stop) {
          calls.push(spec.name);
          rowCalls.push(`${spec.name}[${start}, ${stop})`);
          return run(x, start, stop);
        },
      };
    },
  };
}
