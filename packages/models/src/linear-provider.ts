// The linear-op seam lives in @ninodes/quant; the model only needs its types.
export type { LinearOp, LinearProvider, LinearSpec } from '@ninodes/quant';
