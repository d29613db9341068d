// One rank of a tensor-parallel run, composed: the communicator, the plan read off the checkpoint's
// layout, quant's provider (reading only this rank's slices) wrapped by tp's parallel ops, and the
// H3 model built from this rank's heads and MLP slice, with sequence parallelism (between the
// blocks' linears each rank holds its own token rows only).
import { type Communicator, type LinearPrecision, createCommunicator } from '@ninodes/kernels';
import { type OpenedH3Model, islandAwareProvider, layoutOf, openH3Model } from '@ninodes/models';
import { type ComputeMode, type LinearProvider, attentionPrecisionFor, createLinearProvider, openCheckpoint } from '@ninodes/quant';
import { type ShardPlan, parallelLinearProvider, sequenceSplit, shardPlan } from '@ninodes/tp';
import type { TpRankEnv } from './tp-env.js';

export interface TpRankModel {
  readonly comm: Communicator;
  readonly plan: ShardPlan;
  readonly opened: OpenedH3Model;
  /** Closes the model's files and the communicator's sockets. */
  close(): Promise<void>;
}

/** `attention`: what attention computes in (default as openH3Model picks it for `compute`). */
export async function openTpRank(modelPath: string, compute: ComputeMode, env: TpRankEnv, attention?: LinearPrecision): Promise<TpRankModel> {
  const comm = await createCommunicator({
    rank: env.rank,
    size: env.size,
    store: env.store,
    prefix: env.prefix,
    timeoutMs: env.timeoutMs,
    ...(env.iface === undefined ? {} : { iface: env.iface }),
    ...(env.hostname === undefined ? {} : { hostname: env.hostname }),
  });
  // The weights come through this mapping (only this rank's slices are read from it); the model
  // opens its own for norms and buffers.
  const weights = openCheckpoint(modelPath);
  try {
    const layout = layoutOf(weights);
    const plan = shardPlan(layout, env.size, { compute, sequence: true });
    const main = createLinearProvider(weights, { compute });
    let base: LinearProvider = main;
    if (compute !== 'auto') {
      // fp32 islands (patch embedding, time embedder, output head) run as stored, as in openH3Model.
      const asStored = createLinearProvider(weights, { compute: 'auto', detection: main.detection });
      const islands = new Set(layout.groups.flatMap((g) => g.linears.filter((l) => l.fp32Island).map((l) => l.name)));
      base = islandAwareProvider(main, asStored, islands);
    }
    const provider = parallelLinearProvider({ provider: base, plan, comm, sequence: true });
    // A given provider tells openH3Model nothing of the compute mode: the attention precision is passed.
    const attentionPrecision = attention ?? attentionPrecisionFor(compute);
    const opened = openH3Model(modelPath, { provider, shard: { rank: env.rank, size: env.size }, sequence: sequenceSplit(comm), config: layout.config, prefix: layout.prefix, attentionPrecision });
    return {
      comm,
      plan,
      opened,
      async close() {
        opened.close();
        weights.close();
        await comm.close();
      },
    };
  } catch (error) {
    weights.close();
    await comm.close();
    throw error;
  }
}
