import { type HadamardOrder, checkHadamardGroup, matrixDims, optionsOf, requireDType, requireShape } from './arg-checks.js';
import { KernelsError } from './error-codes.js';
import type { Tensor } from './tensor.js';

export interface HadamardOptions {
  /** Chunk of the last dimension each transform covers (default 256). */
  group?: number;
  /** 'regular' (ComfyUI's H4 Kronecker powers, default) or 'sylvester' (natural-order Walsh). */
  order?: HadamardOrder;
  /** Both orders are symmetric and orthonormal, so the inverse is the same transform. */
  inverse?: boolean;
  /** Write into this f32 tensor of x's shape (may be x itself: in place) instead of a new one. */
  out?: Tensor;
}

export interface ResolvedHadamard {
  rows: number;
  cols: number;
  group: number;
  order: HadamardOrder;
}

export function resolveHadamard(x: Tensor, options?: HadamardOptions, where = 'hadamard'): ResolvedHadamard {
  requireDType(x, ['f32'], `${where} input`);
  const opts = optionsOf(options, `${where} options`);
  const order = opts.order ?? 'regular';
  if (order !== 'regular' && order !== 'sylvester') {
    throw new KernelsError('INVALID_ARGUMENT', `${where}: order must be 'regular' or 'sylvester'`, { value: order, where: `${where} opts.order` });
  }
  const group = opts.group ?? 256;
  const [rows, cols] = matrixDims(x, where, true);
  checkHadamardGroup(cols, group, order, where);
  if (opts.out !== undefined) {
    requireDType(opts.out, ['f32'], `${where} opts.out`);
    requireShape(opts.out, x.shape, `${where} opts.out`);
    if (opts.out.buffer === x.buffer && opts.out.byteOffset !== x.byteOffset && opts.out.byteOffset < x.byteOffset + x.byteLength && x.byteOffset < opts.out.byteOffset + opts.out.byteLength) {
      throw new KernelsError('INVALID_ARGUMENT', `${where}: opts.out partially overlaps the input`, { where: `${where} opts.out`, hint: 'pass x itself (in place) or disjoint memory' });
    }
  }
  return { rows, cols, group, order };
}
