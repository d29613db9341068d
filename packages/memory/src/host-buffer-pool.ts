// Reusable host staging buffers: the layers of a transformer come in a handful of sizes, so a
// buffer freed by one layer is handed to the next layer of the same size instead of allocating
// again. The pool grows on demand up to a cap; beyond it, requests get an unpooled buffer that is
// simply dropped on release.
import { MemoryError } from './error-codes.js';

export interface PooledBuffer {
  readonly buffer: ArrayBuffer;
  readonly bytes: number;
  /** False when the pool was at its cap: the buffer is not kept on release. */
  readonly pooled: boolean;
  /** Returns the buffer to the pool (contents are not cleared). Idempotent. */
  release(): void;
}

export interface HostBufferPoolStats {
  reuses: number;
  allocations: number;
  /** Requests served outside the pool because it was at its cap. */
  unpooled: number;
  /** Bytes of every buffer the pool owns (idle and in use). */
  pooledBytes: number;
  inUseBytes: number;
  peakPooledBytes: number;
}

export class HostBufferPool {
  readonly capBytes: number;
  // Idle buffers by size, oldest idle first in insertion order.
  private readonly idle = new Map<number, ArrayBuffer[]>();
  private readonly s: HostBufferPoolStats = { reuses: 0, allocations: 0, unpooled: 0, pooledBytes: 0, inUseBytes: 0, peakPooledBytes: 0 };

  constructor(options: { capBytes: number }) {
    if (!Number.isSafeInteger(options.capBytes) || options.capBytes < 0) {
      throw new MemoryError('INVALID_ARGUMENT', `host pool cap must be a non-negative integer, got ${options.capBytes}`, { value: options.capBytes });
    }
    this.capBytes = options.capBytes;
  }

  acquire(bytes: number): PooledBuffer {
    if (!Number.isSafeInteger(bytes) || bytes < 0) {
      throw new MemoryError('INVALID_ARGUMENT', `cannot allocate ${bytes} bytes`, { value: bytes });
    }
    const free = this.idle.get(bytes);
    const reused = free?.pop();
    if (free !== undefined && free.length === 0) this.idle.delete(bytes);
    if (reused !== undefined) {
      this.s.reuses++;
      this.s.inUseBytes += bytes;
      return this.handle(reused, true);
    }
    if (this.s.pooledBytes + bytes > this.capBytes) this.dropIdle(this.s.pooledBytes + bytes - this.capBytes);
    if (this.s.pooledBytes + bytes > this.capBytes) {
      this.s.unpooled++;
      return this.handle(new ArrayBuffer(bytes), false);
    }
    this.s.allocations++;
    this.s.pooledBytes += bytes;
    this.s.inUseBytes += bytes;
    this.s.peakPooledBytes = Math.max(this.s.peakPooledBytes, this.s.pooledBytes);
    return this.handle(new ArrayBuffer(bytes), true);
  }

  /** Drops every idle buffer (their memory goes back to the GC); returns the bytes dropped. */
  trim(): number {
    return this.dropIdle(Number.POSITIVE_INFINITY);
  }

  stats(): HostBufferPoolStats {
    return { ...this.s };
  }

  private dropIdle(wanted: number): number {
    let dropped = 0;
    for (const [size, list] of this.idle) {
      while (list.length > 0 && dropped < wanted) {
        list.shift();
        dropped += size;
        this.s.pooledBytes -= size;
      }
      if (list.length === 0) this.idle.delete(size);
      if (dropped >= wanted) break;
    }
    return dropped;
  }

  private handle(buffer: ArrayBuffer, pooled: boolean): PooledBuffer {
    let released = false;
    const bytes = buffer.byteLength;
    return {
      buffer,
      bytes,
      pooled,
      release: () => {
        if (released || !pooled) {
          released = true;
          return;
        }
        released = true;
        this.s.inUseBytes -= bytes;
        const list = this.idle.get(bytes) ?? [];
        list.push(buffer);
        this.idle.set(bytes, list);
      },
    };
  }
}
