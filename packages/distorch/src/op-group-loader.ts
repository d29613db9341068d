import { DistorchError } from './error-codes.js';
import type { CheckpointSource } from '@ninodes/memory';
import type { LayoutGroup, ModelLayout } from '@ninodes/quant';
import type { GroupLoader } from './streaming-executor.js';

/**
 * What the loader needs of a linear op (quant's QuantLinearOp has it): a way to prepare its weight
 * without running it (`int8Weight()` prepares the weight in the op's run format and returns the
 * int8 operands, or undefined for other formats, without copying), the bytes it then holds, and
 * `release()` to drop them (the next forward would prepare them again from the file).
 */
export interface PreparableOp {
  readonly spec: { readonly name: string };
  int8Weight(): Promise<unknown>;
  heldBytes(): number;
  release(): void;
}

/**
 * Loads a group by preparing its linear ops (reading their weights from the mapped checkpoint and
 * converting them to the run format) and releases it by dropping what the ops hold. The weights
 * stay inside the ops, so the model's forward uses them as it would without streaming: the output
 * is the same bytes. Ops without their own cache only (a shared weight cache holds nothing in the op).
 */
export function opGroupLoader(layout: ModelLayout, ops: Iterable<PreparableOp>, source?: CheckpointSource): GroupLoader<void> {
  const byName = new Map<string, PreparableOp>();
  for (const op of ops) byName.set(op.spec.name, op);
  const opsOf = new Map<string, PreparableOp[]>();
  for (const g of layout.groups) {
    opsOf.set(
      g.name,
      g.linears.map((l) => {
        const op = byName.get(l.name);
        if (op === undefined) {
          throw new DistorchError('EXECUTOR_INVALID', `the model has no op for linear '${l.name}' of group '${g.name}'`, { value: l.name, where: 'opGroupLoader', hint: 'build the layout from the checkpoint the model was opened on' });
        }
        return op;
      }),
    );
  }
  return {
    async load(group: LayoutGroup) {
      const list = opsOf.get(group.name) ?? [];
      const results = await Promise.allSettled(list.map((op) => op.int8Weight()));
      const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
      if (failed !== undefined) {
        for (const op of list) op.release();
        throw failed.reason;
      }
      let released = false;
      return {
        value: undefined,
        bytes: list.reduce((a, op) => a + op.heldBytes(), 0),
        release: () => {
          if (released) return;
          released = true;
          for (const op of list) op.release();
        },
      };
    },
    advise(group: LayoutGroup, advice: 'willneed' | 'dontneed'): void {
      if (source?.advise === undefined) return;
      for (const t of group.tensors) source.advise(t.name, advice);
    },
  };
}
