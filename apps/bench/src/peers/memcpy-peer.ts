import type { Contender } from '../suite.js';

/**
 * Plain memcpy of `bytes`: Uint8Array.prototype.set between two distinct buffers, which V8 lowers to
 * memmove. Its time is the physical bound a memory-bound kernel moving the same bytes can approach.
 * `bytes` counts read + written, as `Work.bytes` does, so the copy moves bytes/2 each way.
 */
export function memcpyContender(bytes: number): Contender {
  const half = Math.max(1, Math.floor(bytes / 2));
  const src = new Uint8Array(half);
  const dst = new Uint8Array(half);
  // Touch every page so the first timed copy does not pay for page faults.
  src.fill(1);
  dst.fill(0);
  return { run: () => dst.set(src) };
}
