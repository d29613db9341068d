// The one place the model touches numeric ops: @ninodes/kernels' native ops (fp32 in, fp32 out).
import { type Tensor, cast } from '@ninodes/kernels';

export { add, attention, gatedResidual, modulate, qkNormRope, rmsNorm, rmsNormModulate, silu, swiglu } from '@ninodes/kernels';

/** Any float tensor to f32 (f32 passes through as the same view). */
export function castF32(x: Tensor): Tensor<'f32'> {
  return x.dtype === 'f32' ? (x as Tensor<'f32'>) : cast(x, 'f32');
}
