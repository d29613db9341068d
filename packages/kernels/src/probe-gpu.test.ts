import { existsSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { hipProbe, nvmlProbe } from './probe-gpu.js';

// Independent check of what the dynamic loader can find: the library files in the usual places.
function libraryPresent(names: string[]): boolean {
  const dirs = ['/usr/lib/x86_64-linux-gnu', '/usr/lib64', '/usr/lib', '/opt/rocm/lib', '/usr/local/cuda/lib64'];
  return dirs.some((d) => names.some((n) => existsSync(`${d}/${n}`)));
}

describe('native GPU probes', () => {
  it('nvmlProbe answers without throwing and agrees with the presence of libnvidia-ml', () => {
    const result = nvmlProbe();
    if (!libraryPresent(['libnvidia-ml.so.1'])) {
      expect(result.available).toBe(false);
      if (!result.available) expect(result.reason).toMatch(/libnvidia-ml/);
    } else if (result.available) {
      for (const d of result.devices) {
        if (d.totalBytes !== undefined && d.usedBytes !== undefined && d.freeBytes !== undefined) {
          expect(d.usedBytes + d.freeBytes).toBeLessThanOrEqual(d.totalBytes);
        }
      }
    }
  });

  it('hipProbe answers without throwing and agrees with the presence of libamdhip64', () => {
    const result = hipProbe();
    if (!libraryPresent(['libamdhip64.so', 'libamdhip64.so.6', 'libamdhip64.so.7'])) {
      expect(result.available).toBe(false);
      if (!result.available) expect(result.reason).toMatch(/libamdhip64/);
    }
  });

  it('is stable across calls (NVML/HIP are loaded once per process)', () => {
    expect(nvmlProbe().available).toBe(nvmlProbe().available);
    expect(hipProbe().available).toBe(hipProbe().available);
  });
});
