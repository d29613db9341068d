// The `model` line of `ninodes run`: per weight format, how many linears the file stores in it and
// what they compute in, so that "auto" (each layer as stored) and a forced --quant both say what
// actually runs — a quantized file that silently computed in f32 is what this line exists to show.
import type { LinearOp } from '@ninodes/models';
import type { FormatDetection } from '@ninodes/quant';

/** `10 int8_convrot as stored, 6 f32 (from bf16)`: run formats, each with the stored formats behind it. */
export function describeLinearFormats(ops: readonly LinearOp[], detection: FormatDetection): string {
  const groups = new Map<string, Map<string, number>>();
  for (const op of ops) {
    const stored = detection.layers.get(op.spec.name)?.format ?? 'unknown';
    const byStored = groups.get(op.format) ?? new Map<string, number>();
    byStored.set(stored, (byStored.get(stored) ?? 0) + 1);
    groups.set(op.format, byStored);
  }
  return [...groups]
    .map(([run, byStored]) =>
      [...byStored].map(([stored, n]) => `${n} ${run}${stored === run ? ' as stored' : ` (from ${stored})`}`).join(', '),
    )
    .join(', ');
}
