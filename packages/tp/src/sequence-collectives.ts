// The collectives and int8 entry points sequence parallelism runs on, in one place.
//
// TEMPORARY STAND-INS (issue 15): kernels is gaining Communicator.reduceScatter / allgatherInto,
// int8LinearQuantized and quantizeRowsInt8's `scaleOut`. Until they land these functions give the
// same results from what kernels has today, at a cost: reduceScatter reduces every segment
// (allreduce), allgatherInto pads each segment to the longest and copies through an allgather,
// int8LinearQuantized returns the accumulators before its epilogue. Once the real calls exist each
// body becomes that call and this module goes.
import { type Communicator, Tensor, dequantizeInt8Accumulators, int8Matmul, quantizeRowsInt8 } from '@ninodes/kernels';

/**
 * In place: segment r (counts[r] consecutive elements) ends on rank r holding the sum over the
 * ranks, in allreduce's order (the bits allreduce gives those elements); other segments unspecified.
 */
export async function reduceScatter(comm: Communicator, data: Float32Array | Int32Array, counts: readonly number[]): Promise<void> {
  void counts; // STAND-IN: comm.reduceScatter(data, counts)
  await comm.allreduce(data, 'sum');
}

/** In place: this rank's segment is sent to every rank; afterwards segment r holds rank r's data on every rank. */
export async function allgatherInto(comm: Communicator, data: Float32Array | Int32Array | Int8Array, counts: readonly number[]): Promise<void> {
  // STAND-IN: comm.allgatherInto(data, counts). Each segment travels as the longest one's 32-bit words.
  const width = data.BYTES_PER_ELEMENT;
  const offsets = counts.map((_, r) => counts.slice(0, r).reduce((a, b) => a + b, 0));
  const words = Math.ceil((Math.max(...counts) * width) / 4);
  const mine = new Int32Array(words);
  const own = offsets[comm.rank] as number;
  new Uint8Array(mine.buffer).set(new Uint8Array(data.buffer, data.byteOffset + own * width, (counts[comm.rank] as number) * width));
  const all = new Uint8Array((await comm.allgather(mine)).buffer);
  const dst = new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  for (let r = 0; r < comm.size; r++) dst.set(all.subarray(r * words * 4, r * words * 4 + (counts[r] as number) * width), (offsets[r] as number) * width);
}

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
