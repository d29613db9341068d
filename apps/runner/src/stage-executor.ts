import { enumerateDevices } from '@ninodes/device';
import { type StagedSource, type StepStats, StreamingExecutor, computeAccount, computeLoadAccount, estimateActivationBytes, formatAllocationBytes, opGroupLoader, planPlacement } from '@ninodes/distorch';
import type { LinearOp } from '@ninodes/models';
import { type ComputeMode, type ModelLayout, isPreparedLinearOp } from '@ninodes/quant';
import { RunnerError } from './error-codes.js';

export interface StageExecutor {
  readonly executor: StreamingExecutor<void>;
  /** The allocation the plan settled on ("cpu,…;disk,*"). */
  readonly allocation: string;
  stats(): StepStats[];
  close(): Promise<void>;
}

/**
 * Streams one stage of a generation (text encoder, DiT, video VAE) under `budgetBytes`, whatever its
 * layout: the groups that fit the budget less the reserve (activations of `tokens` rows, staging of
 * a streamed group) stay resident on the CPU, the others are read from the mapped file around each
 * use through the model's group hooks (distorch's planner, op loader and executor).
 */
export function stageExecutor(layout: ModelLayout, ops: readonly LinearOp[], staged: StagedSource, options: { budgetBytes: number; compute: ComputeMode; tokens: number; prefetch?: number }): StageExecutor {
  const prefetch = options.prefetch ?? 1;
  const plan = (cpuBytes: number) =>
    planPlacement({
      layout,
      allocation: `cpu,${formatAllocationBytes(cpuBytes)};disk,*`,
      devices: enumerateDevices({ includeDisk: false }).devices,
      compute: 'cpu',
      account: computeAccount(options.compute),
      loadAccount: computeLoadAccount(options.compute),
      activationBytes: estimateActivationBytes(layout, options.tokens),
      prefetch,
    });
  const first = plan(options.budgetBytes);
  const placement = plan(Math.max(0, options.budgetBytes - first.reserve.activationBytes - first.reserve.stagingBytes));
  const ready = ops.filter(isPreparedLinearOp);
  if (ready.length !== ops.length) throw new RunnerError('INTERNAL', `the ${layout.architecture} stage's linear ops cannot be prepared ahead of use`, { where: '--budget' });
  const loader = opGroupLoader(layout, ready, staged, { staged });
  const executor = new StreamingExecutor({ layout, placement, loader, budgetBytes: options.budgetBytes, prefetch });
  return {
    executor,
    allocation: placement.allocation,
    stats: () => executor.stats(),
    close: async () => {
      await executor.close();
      await loader.close();
    },
  };
}
