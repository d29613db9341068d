import { Tensor } from '@ninodes/kernels';

/**
 * Named f32 activation buffers a model reuses from step to step (issue 16: no allocation in the
 * steady state). The first step sizes them; later steps of the same shapes get the same tensors, so
 * they create no new memory for V8 to collect. A buffer's contents are whatever its last user left:
 * one forward at a time may use a workspace (H3VideoModel hands it only to the forward in flight).
 */
export class Workspace {
  private readonly buffers = new Map<string, Tensor<'f32'>>();

  /** The buffer named `key` of exactly `shape` (a fresh one replaces it when the shape changed). */
  f32(key: string, shape: readonly number[]): Tensor<'f32'> {
    const t = this.buffers.get(key);
    if (t !== undefined && t.shape.length === shape.length && t.shape.every((d, i) => d === shape[i])) return t;
    const fresh = Tensor.zeros('f32', shape);
    this.buffers.set(key, fresh);
    return fresh;
  }

  /** Bytes the buffers hold. */
  get bytes(): number {
    let n = 0;
    for (const t of this.buffers.values()) n += t.byteLength;
    return n;
  }

  /** Drops every buffer (the GC frees them once no caller holds one). */
  clear(): void {
    this.buffers.clear();
  }
}
