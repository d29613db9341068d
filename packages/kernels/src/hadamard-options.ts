import { type HadamardOrder, checkHadamardGroup, matrixDims, requireDType } from './arg-checks.js';
import { NinodesError } from './errors.js';
import type { Tensor } from './tensor.js';

export interface HadamardOptions {
  /** Chunk of the last dimension each transform covers (default 256). */
  group?: number;
  /** 'regular' (ComfyUI's H4 Kronecker powers, default) or 'sylvester' (natural-order Walsh). */
  order?: HadamardOrder;
  /** Both orders are symmetric and orthonormal, so the inverse is the same transform. */
  inverse?: boolean;
}

export interface ResolvedHadamard {
  rows: number;
  cols: number;
  group: number;
  order: HadamardOrder;
}

export function resolveHadamard(x: Tensor, opts: HadamardOptions = {}, where = 'hadamard'): ResolvedHadamard {
  requireDType(x, ['f32'], `${where} input`);
  const order = opts.order ?? 'regular';
  if (order !== 'regular' && order !== 'sylvester') {
    throw new NinodesError('INVALID_ARGUMENT', `${where}: order must be 'regular' or 'sylvester'`, { value: order, where: `${where} opts.order` });
  }
  const group = opts.group ?? 256;
  const [rows, cols] = matrixDims(x, where, true);
  checkHadamardGroup(cols, group, order, where);
  return { rows, cols, group, order };
}
