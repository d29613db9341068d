// The one place the model touches numeric ops: @ninodes/kernels' native ops (fp32 in, fp32 out).
import { type Tensor, add, cast, mul } from '@ninodes/kernels';

export { add, attention, modulate, ropeSplitHalf, rmsNorm, silu, swiglu } from '@ninodes/kernels';

/** Any float tensor to f32 (f32 passes through as the same view). */
export function castF32(x: Tensor): Tensor<'f32'> {
  return x.dtype === 'f32' ? (x as Tensor<'f32'>) : cast(x, 'f32');
}

/** x + out·gate, gate [D] broadcast over the rows of out [S, D] (kernels' addcmul wants a and b alike). */
export function gatedResidual(x: Tensor<'f32'>, out: Tensor<'f32'>, gate: Tensor<'f32'>): Tensor<'f32'> {
  return add(x, mul(out, gate));
}
