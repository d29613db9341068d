// One reusable buffer for ops that run one at a time and each need a large temporary: tp's
// row-parallel int8 accumulators and quantized slices, quant's fp8 weight decoded per call.
import { Tensor } from '@ninodes/kernels';

/**
 * Views of one buffer, grown to the largest size asked for. Reusing it saves an allocation per
 * call, and with it the first-touch page faults of fresh memory (one every 4 KiB: a 50 MB fp8
 * decode into fresh memory took ~40x the decode into a reused buffer on a VM) and the garbage
 * collections the dropped buffers cost. A call that finds it in use (an overlapping forward) gets
 * fresh memory, so sharing never makes one op wait for another.
 */
export class SharedScratch<D extends 'i32' | 'i8' | 'f32'> {
  /** The largest buffer asked for so far; callers get [m, n] views of its start. */
  private backing: Tensor<D> | undefined;
  private busy = false;

  constructor(private readonly dtype: D) {}

  /** An [m, n] view of the shared buffer (or fresh memory while it is in use); give it back with release. */
  take(m: number, n: number): Tensor<D> {
    if (this.busy) return Tensor.zeros(this.dtype, [m, n]);
    this.busy = true;
    if (this.backing === undefined || this.backing.numel < m * n) this.backing = Tensor.zeros(this.dtype, [m * n]);
    return this.backing.view(this.dtype, [m, n]);
  }

  release(t: Tensor<D>): void {
    if (t.buffer === this.backing?.buffer) this.busy = false;
  }
}
