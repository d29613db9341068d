// quant's SequenceSplit over a communicator: what a model run with sequence parallelism is given.
import type { Communicator, Tensor } from '@ninodes/kernels';
import { type RowRange, type SequenceSplit, sequenceCounts, sequenceRows } from '@ninodes/quant';
import { TpError } from './error-codes.js';

/**
 * This rank's share of the token rows (quant's sequenceRows over the communicator's rank and size)
 * and the gather of an [S, W] matrix's rows (one allgather). Pass it to the model and
 * `sequence: true` to parallelLinearProvider over the same communicator.
 */
export function sequenceSplit(comm: Communicator): SequenceSplit {
  const { rank, size } = comm;
  return {
    rank,
    size,
    rows: (tokens: number): RowRange => sequenceRows(tokens, rank, size),
    async gatherRows(x: Tensor<'f32'>): Promise<void> {
      if (x.dtype !== 'f32' || x.rank !== 2) {
        throw new TpError('SHAPE_MISMATCH', `gatherRows takes an f32 [S, W] matrix, got ${x.dtype} [${x.shape.join(', ')}]`, { value: x.shape, where: 'sequenceSplit.gatherRows' });
      }
      if (size > 1) await comm.allgatherInto(x.data, sequenceCounts(x.shape[0] as number, size, x.shape[1] as number));
    },
  };
}
