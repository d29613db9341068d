import { NinodesError } from '@ninodes/kernels';
import { QuantError } from './error-codes.js';
import type { LinearShard } from './linear-op.js';
import { checkShardRank } from './parallel-shard.js';

/**
 * What a rank reads of a [N, K] weight: output-row segments (column-parallel, in the order the local
 * op's rows take them) or one input-column range (row-parallel). Absent fields mean "all".
 */
export interface LayerSlice {
  readonly rows?: readonly (readonly [number, number])[];
  readonly columns?: readonly [number, number];
}

export interface ShardGeometry {
  readonly slice: LayerSlice | undefined;
  /** Local output rows and input columns. */
  readonly n: number;
  readonly k: number;
}

function notDivisible(name: string, what: string, value: unknown, size: number): NinodesError {
  return new QuantError('SHARD_NOT_DIVISIBLE', `layer '${name}': ${what} does not split evenly over ${size} ranks`, { value, where: name, hint: 'choose a tensor-parallel size that divides the heads and widths' });
}

/** The slice a shard of layer `name` ([N, K] in the file) reads, with coded errors for shards that do not fit it. */
export function shardGeometry(name: string, n: number, k: number, shard: LinearShard | undefined): ShardGeometry {
  if (shard === undefined || shard.role === 'replicated') return { slice: undefined, n, k };
  const { rank, size } = shard;
  checkShardRank(rank, size, name);
  if (shard.role === 'row') {
    if (k % size !== 0) throw notDivisible(name, `K = ${k}`, k, size);
    const len = k / size;
    return { slice: { columns: [rank * len, (rank + 1) * len] }, n, k: len };
  }
  const fused = shard.fused;
  switch (fused.kind) {
    case 'qkv': {
      const inner = fused.heads * fused.headDim;
      if (n !== 3 * inner) {
        throw new QuantError('SHAPE_MISMATCH', `layer '${name}' has ${n} rows, a qkv layer of ${fused.heads}×${fused.headDim} heads has ${3 * inner}`, { value: n, where: name });
      }
      if (fused.heads % size !== 0) throw notDivisible(name, `${fused.heads} heads`, fused.heads, size);
      const len = (fused.heads / size) * fused.headDim;
      return { slice: { rows: [0, 1, 2].map((j) => [j * inner + rank * len, j * inner + (rank + 1) * len] as const) }, n: 3 * len, k };
    }
    case 'halves':
    case 'parts': {
      const parts = fused.kind === 'halves' ? 2 : fused.parts;
      if (!Number.isSafeInteger(parts) || parts < 1) {
        throw new QuantError('INVALID_SHARD', `layer '${name}': ${String(parts)} parts is not a positive integer`, { value: parts, where: name });
      }
      if (n % (parts * size) !== 0) throw notDivisible(name, `each of ${parts} parts of ${n} rows`, n, size);
      const part = n / parts;
      const len = part / size;
      return { slice: { rows: Array.from({ length: parts }, (_, j) => [j * part + rank * len, j * part + (rank + 1) * len] as const) }, n: parts * len, k };
    }
    case 'none': {
      if (n % size !== 0) throw notDivisible(name, `N = ${n}`, n, size);
      const len = n / size;
      return { slice: { rows: [[rank * len, (rank + 1) * len]] }, n: len, k };
    }
  }
}
