import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { MemoryPressureMonitor, effectiveMemory, shrinkCacheOnPressure } from './memory-pressure.js';

const GiB = 2 ** 30;

/** A container's procfs/sysfs: an idle 256 GiB host, a cgroup v2 limit of `limit` with `current` charged. */
function containerTree(limit: string, current: number): { procRoot: string; sysRoot: string; dir: string } {
  const dir = mkdtempSync(join(tmpdir(), 'ninodes-pressure-'));
  const procRoot = join(dir, 'proc');
  const sysRoot = join(dir, 'sys');
  mkdirSync(join(procRoot, 'self'), { recursive: true });
  mkdirSync(join(sysRoot, 'fs', 'cgroup'), { recursive: true });
  writeFileSync(join(procRoot, 'meminfo'), `MemTotal:       ${256 * 1024 * 1024} kB\nMemFree:        ${200 * 1024 * 1024} kB\nMemAvailable:   ${240 * 1024 * 1024} kB\n`);
  writeFileSync(join(procRoot, 'self', 'cgroup'), '0::/\n');
  writeFileSync(join(procRoot, 'self', 'mountinfo'), '617 616 0:29 / /sys/fs/cgroup ro,nosuid,nodev,noexec,relatime - cgroup2 cgroup rw,nsdelegate\n');
  writeFileSync(join(sysRoot, 'fs', 'cgroup', 'memory.max'), `${limit}\n`);
  writeFileSync(join(sysRoot, 'fs', 'cgroup', 'memory.current'), `${current}\n`);
  return { procRoot, sysRoot, dir };
}
import { WeightCache } from './weight-cache.js';

describe('MemoryPressureMonitor', () => {
  it('enters at 85% used, stays until below 80%, and asks for the bytes above 80%', () => {
    const total = 1000;
    let available = 500;
    const asked: number[] = [];
    const m = new MemoryPressureMonitor({ read: () => ({ total, available }), onPressure: (b) => asked.push(b) });
    const at = (used: number): boolean => {
      available = total - used;
      return m.check().underPressure;
    };
    expect([at(500), at(849), at(850), at(830), at(801), at(800), at(799), at(840)]).toEqual([false, false, true, true, true, true, false, false]);
    expect(asked).toEqual([50, 30, 1, 0]);
  });

  it('rejects unusable thresholds', () => {
    expect(() => new MemoryPressureMonitor({ thresholdPercent: 120, onPressure: () => {} })).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
    expect(() => new MemoryPressureMonitor({ thresholdPercent: 50, hysteresisPercent: 50, onPressure: () => {} })).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
  });

  it('shrinks the cache through shrinkCacheOnPressure', () => {
    const cache = new WeightCache<number>({ budgets: { cpu: 1000 } });
    cache.registerModel('m', [0, 1, 2, 3].map((i) => ({ key: `w${i}`, bytes: 200 })));
    for (let i = 0; i < 4; i++) cache.acquire('cpu', 'm', `w${i}`, () => i).release();
    const shrink = shrinkCacheOnPressure(cache);
    const m = new MemoryPressureMonitor({ read: () => ({ total: 10_000, available: 1000 }), onPressure: (b) => shrink(Math.min(b, 300)) });
    m.check();
    // 300 bytes asked: two 200-byte weights go (the cache frees whole weights).
    expect(cache.stats('cpu').residentBytes).toBe(400);
  });

  it('in a container, judges the cgroup limit, not the idle host RAM', () => {
    // Host: 16 GiB of 256 used (6%). Cgroup: 56 GiB of a 64 GiB limit charged (87.5%).
    const tree = containerTree(String(64 * GiB), 56 * GiB);
    try {
      expect(effectiveMemory(tree)).toEqual({ total: 64 * GiB, available: 8 * GiB });
      const asked: number[] = [];
      const m = new MemoryPressureMonitor({ roots: tree, onPressure: (b) => asked.push(b) });
      const r = m.check();
      expect(r.underPressure).toBe(true);
      expect(r.usedPercent).toBeCloseTo(87.5, 10);
      // Back below 80% of the limit: 56 GiB - 0.8 * 64 GiB.
      expect(asked).toEqual([Math.ceil(56 * GiB - 0.8 * 64 * GiB)]);
    } finally {
      rmSync(tree.dir, { recursive: true, force: true });
    }
  });

  it('without a cgroup limit, judges the host RAM', () => {
    const tree = containerTree('max', 56 * GiB);
    try {
      expect(effectiveMemory(tree)).toEqual({ total: 256 * GiB, available: 240 * GiB });
      expect(new MemoryPressureMonitor({ roots: tree, onPressure: () => {} }).check().underPressure).toBe(false);
    } finally {
      rmSync(tree.dir, { recursive: true, force: true });
    }
  });

  it('refuses to start when memory cannot be read, instead of never triggering', () => {
    const m = new MemoryPressureMonitor({ roots: { procRoot: '/nonexistent-proc', sysRoot: '/nonexistent-sys' }, onPressure: () => {} });
    expect(() => m.start()).toThrow(expect.objectContaining({ code: 'PRESSURE_UNREADABLE' }));
    m.stop();
  });
});
