// The int8 entry points sequence parallelism runs on, in one place.
//
// TEMPORARY STAND-INS (issue 15): kernels is gaining int8LinearQuantized and quantizeRowsInt8's
// `scaleOut`. Until they land these functions give the same bits from what kernels has today, at a
// cost: int8LinearQuantized runs the GEMM into fresh accumulators and the epilogue as a second
// pass (int8Linear fuses it), quantizeRowsInto copies the scales. Once the real calls exist the
// callers call them and this module goes.
import { type Tensor, dequantizeInt8Accumulators, int8Matmul, quantizeRowsInt8 } from '@ninodes/kernels';

/**
 * int8Linear's GEMM and epilogue on rows quantized already (qx [M, K] i8, xScale [M, 1]): the bytes
 * int8Linear gives for the f32 rows they were quantized from.
 */
export async function int8LinearQuantized(
  qx: Tensor<'i8'>,
  xScale: Tensor<'f32'>,
  qw: Tensor<'i8'>,
  wScale: Tensor<'f32'>,
  options: { bias?: Tensor<'f32'>; out?: Tensor<'f32'> },
): Promise<Tensor<'f32'>> {
  // STAND-IN: kernels' int8LinearQuantized(qx, xScale, qw, wScale, options).
  const acc = await int8Matmul(qx, qw);
  try {
    return await dequantizeInt8Accumulators(acc, xScale, wScale, options.bias, options.out);
  } finally {
    acc.dispose();
  }
}

/** quantizeRowsInt8 (rotation included) of x into `qOut` [M, K] and its row scales into `scaleOut` [M, 1]. */
export function quantizeRowsInto(x: Tensor<'f32'>, options: { convrot: number | false; qOut: Tensor<'i8'>; scaleOut: Tensor<'f32'> }): void {
  // STAND-IN: quantizeRowsInt8(x, { convrot, qOut, scaleOut }).
  const { scale } = quantizeRowsInt8(x, { convrot: options.convrot, qOut: options.qOut });
  options.scaleOut.data.set(scale.data);
  scale.dispose();
}
