import { describe, expect, it } from 'vitest';
import { MemoryPressureMonitor, shrinkCacheOnPressure } from './memory-pressure.js';
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
    expect(() => new MemoryPressureMonitor({ thresholdPercent: 120, onPressure: () => {} })).toThrow(expect.objectContaining({ code: 'PRESSURE_INVALID_THRESHOLD' }));
    expect(() => new MemoryPressureMonitor({ thresholdPercent: 50, hysteresisPercent: 50, onPressure: () => {} })).toThrow(expect.objectContaining({ code: 'PRESSURE_INVALID_THRESHOLD' }));
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
});
