import { brandInstances } from './brand.js';
import { KernelsError } from './error-codes.js';
import { checkBias, linearDims } from './linear-checks.js';
import { callNative, callNativeAsync } from './native-addon.js';
import { allocateNative } from './native-memory.js';
import { Tensor } from './tensor.js';
import { matrixDims, outputF32, requireDType } from './arg-checks.js';

/**
 * Multiply precision. 'f32': bf16 weights are widened exactly and multiplied in f32 (any CPU).
 * 'bf16': the input is rounded to bf16 (nearest even) and multiplied with bf16 weights on the CPU's
 * bf16 units, accumulating in f32 — PyTorch's bf16 mode; needs `buildInfo().bf16Units`, else
 * BACKEND_UNAVAILABLE (never a silent switch).
 */
export type LinearPrecision = 'f32' | 'bf16';

export interface LinearOptions {
  precision?: LinearPrecision;
  /** Where y goes ([..., N] f32, see outputF32); default a fresh tensor. */
  out?: Tensor<'f32'>;
}

/**
 * A bf16 weight [N, K] packed once into the blocked layout oneDNN's bf16 matmul multiplies from
 * (`packLinearWeight`). `linear(x, packed, bias, { precision: 'bf16' })` then skips the per-call
 * reorder of the plain weight and gives the same output bits. Its storage is native memory (counted
 * in `nativeBytes()`): `dispose()` frees it at once, else the GC does.
 */
export class PackedLinearWeight {
  static {
    // Crosses the ESM/CJS line like Tensor (a weight packed by one build, multiplied by the other).
    brandInstances(this, 'packed-linear-weight');
  }

  /** [N, K] of the plain weight. */
  readonly shape: readonly [number, number];
  /** The packed bytes (oneDNN's blocks, padded: `byteLength` can exceed 2·N·K on sizes off its blocks). */
  readonly storage: Tensor<'u8'>;

  constructor(shape: readonly [number, number], storage: Tensor<'u8'>) {
    this.shape = shape;
    this.storage = storage;
  }

  get byteLength(): number {
    return this.storage.byteLength;
  }

  get disposed(): boolean {
    return this.storage.disposed;
  }

  dispose(): void {
    this.storage.dispose();
  }
}

/** Bytes `packLinearWeight` allocates for a bf16 [N, K] weight (needs `buildInfo().bf16Units`). */
export function packedLinearBytes(n: number, k: number): number {
  return callNative('packedLinearBytes', (a) => a.linearPackedBytes(k, n));
}

/**
 * Rows at or below which the bf16 linear runs its own dot products on the plain [N, K] rows (the
 * adaLN and timestep linears: one row per sample) rather than oneDNN's matmul; a packed weight is
 * unpacked per call there, so it pays off only for weights that multiply more rows than this.
 */
export const BF16_FEW_ROWS = 4;

function livePacked(w: PackedLinearWeight, where: string): void {
  if (w.disposed) throw new KernelsError('TENSOR_DISPOSED', `${where}: the packed weight was disposed`, { where, hint: 'pack the weight again' });
}

/**
 * `w` bf16 [N, K] packed for `linear(..., { precision: 'bf16' })` (off the JS thread). N and K must
 * be at least 1; BACKEND_UNAVAILABLE without bf16 units.
 */
export async function packLinearWeight(w: Tensor): Promise<PackedLinearWeight> {
  requireDType(w, ['bf16'], 'packLinearWeight');
  const [n, k] = matrixDims(w, 'packLinearWeight');
  if (n === 0 || k === 0) {
    throw new KernelsError('INVALID_SHAPE', `packLinearWeight: a [${n}, ${k}] weight has nothing to pack`, { value: w.shape, where: 'packLinearWeight', hint: 'N and K must be at least 1' });
  }
  const storage = allocateNative('u8', [packedLinearBytes(n, k)]);
  try {
    await callNativeAsync('packLinearWeight', (a) => a.packLinearBf16(w.bytes(), storage.bytes(), k, n, false));
  } catch (error) {
    storage.dispose();
    throw error;
  }
  return new PackedLinearWeight([n, k], storage);
}

/** The plain bf16 [N, K] weight back from a packed one (fresh native memory, the original bits). */
export async function unpackLinearWeight(w: PackedLinearWeight): Promise<Tensor<'bf16'>> {
  livePacked(w, 'unpackLinearWeight');
  const [n, k] = w.shape;
  const out = allocateNative('bf16', [n, k]);
  try {
    await callNativeAsync('unpackLinearWeight', (a) => a.packLinearBf16(out.bytes(), w.storage.bytes(), k, n, true));
  } catch (error) {
    out.dispose();
    throw error;
  }
  return out;
}

/**
 * y = x·wᵀ + bias through oneDNN's matmul. x [..., K] f32, w [N, K] f32 or bf16, bias [N] ->
 * [..., N] f32. Runs off the JS thread. A `PackedLinearWeight` runs with `precision: 'bf16'` only.
 */
export async function linear(x: Tensor, w: Tensor | PackedLinearWeight, bias?: Tensor, options: LinearOptions = {}): Promise<Tensor<'f32'>> {
  const precision = options.precision ?? 'f32';
  if (w instanceof PackedLinearWeight) return linearPacked(x, w, bias, precision, options.out);
  const d = linearDims(x, w, 'linear', ['f32', 'bf16']);
  checkBias(bias, d.n, 'linear');
  const y = outputF32(options.out, d.outShape, 'linear', [x, w, bias]);
  await callNativeAsync('linear', (n) => n.linear(x.bytes(), w.bytes(), w.dtype === 'bf16', bias?.bytes() ?? null, y.bytes(), d.m, d.k, d.n, precision));
  return y;
}

async function linearPacked(x: Tensor, w: PackedLinearWeight, bias: Tensor | undefined, precision: LinearPrecision, out: Tensor<'f32'> | undefined): Promise<Tensor<'f32'>> {
  if (precision !== 'bf16') {
    throw new KernelsError('INVALID_ARGUMENT', `linear: a packed weight multiplies in bf16, not '${precision}'`, { value: precision, where: 'linear', hint: "pass { precision: 'bf16' }, or the plain weight" });
  }
  livePacked(w, 'linear');
  requireDType(x, ['f32'], 'linear input');
  const [m, k] = matrixDims(x, 'linear input', true);
  const [n, wk] = w.shape;
  if (wk !== k) {
    throw new KernelsError('SHAPE_MISMATCH', `linear: input has K = ${k} but the packed weight [${n}, ${wk}] has K = ${wk}`, { value: { x: x.shape, w: w.shape }, where: 'linear', hint: 'weights are [N, K] (PyTorch layout), inputs [..., K]' });
  }
  checkBias(bias, n, 'linear');
  const y = outputF32(out, [...x.shape.slice(0, -1), n], 'linear', [x, w.storage, bias]);
  await callNativeAsync('linear', (a) => a.linearPackedBf16(x.bytes(), w.storage.bytes(), bias?.bytes() ?? null, y.bytes(), m, k, n));
  return y;
}
