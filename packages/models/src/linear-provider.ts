// The linear-op seam of @ninodes/quant (LINEAR_API), restated structurally so the model compiles
// before quant lands; any quant LinearProvider satisfies it as is.
import type { Tensor } from '@ninodes/kernels';

export interface LinearSpec {
  readonly name: string;
  readonly inFeatures: number;
  readonly outFeatures: number;
  readonly bias: boolean;
}

export interface LinearOp {
  readonly spec: LinearSpec;
  readonly format: string;
  forward(x: Tensor<'f32'>): Promise<Tensor<'f32'>>;
  materializedWeight(): Promise<Tensor<'f32'>>;
}

export interface LinearProvider {
  linear(spec: LinearSpec): LinearOp;
}
