import { describe, expect, it } from 'vitest';
import { HostBufferPool } from './host-buffer-pool.js';

describe('HostBufferPool', () => {
  it('reuses buffers of the same size across layers', () => {
    const pool = new HostBufferPool({ capBytes: 1000 });
    const a = pool.acquire(300);
    a.release();
    const b = pool.acquire(300);
    expect(b.buffer).toBe(a.buffer);
    const c = pool.acquire(300);
    expect(c.buffer).not.toBe(b.buffer);
    expect(pool.stats()).toMatchObject({ reuses: 1, allocations: 2, pooledBytes: 600, inUseBytes: 600 });
  });

  it('grows up to its cap, drops idle buffers of other sizes, then serves unpooled buffers', () => {
    const pool = new HostBufferPool({ capBytes: 1000 });
    const a = pool.acquire(600);
    a.release();
    const b = pool.acquire(500); // needs a's idle 600 bytes dropped
    expect(pool.stats()).toMatchObject({ pooledBytes: 500, allocations: 2 });
    const c = pool.acquire(600); // b is in use: over the cap
    expect(c.pooled).toBe(false);
    c.release();
    b.release();
    expect(pool.stats()).toMatchObject({ unpooled: 1, pooledBytes: 500, inUseBytes: 0, peakPooledBytes: 600 });
    expect(pool.trim()).toBe(500);
    expect(pool.stats().pooledBytes).toBe(0);
  });
});
