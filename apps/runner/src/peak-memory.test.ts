import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { samplePeakMemory } from './peak-memory.js';

const MiB = 2 ** 20;
/** Independent read of RssAnon (kB) straight from the kernel, not through the sampler. */
const rssAnon = (): number => Number(/^RssAnon:\s+(\d+) kB/m.exec(readFileSync('/proc/self/status', 'utf8'))?.[1]) * 1024;

describe('samplePeakMemory', () => {
  it('reports the anonymous peak of memory touched and freed between samples', () => {
    const m = samplePeakMemory(60_000);
    let buf: Buffer | undefined = Buffer.alloc(96 * MiB, 1);
    const during = rssAnon();
    m.sample();
    buf = undefined;
    const peak = m.stop();
    expect(buf).toBeUndefined();
    expect(peak.samples).toBe(3); // start, the explicit sample, stop
    expect(peak.peakAnonBytes).toBeGreaterThan(during - 8 * MiB);
    expect(peak.peakAnonBytes).toBeGreaterThan(96 * MiB);
    expect(peak.peakFileBytes).toBeGreaterThan(0); // node's own mapped binary and libraries
  });
});
