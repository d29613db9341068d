import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { defaultCacheDir, hostBandwidth, machineKey, measureHostMemcpy, type MeasureOptions } from './bandwidth.js';

describe('measureHostMemcpy', () => {
  it('returns a positive finite rate for the bytes it was asked to copy', () => {
    const m = measureHostMemcpy({ bytes: 8 * 2 ** 20 + 4096 * 3 + 17, iterations: 3 });
    expect(m.bytes).toBe(8 * 2 ** 20 + 4096 * 3 + 17);
    expect(m.iterations).toBe(3);
    expect(Number.isFinite(m.gbPerSecond) && m.gbPerSecond > 0).toBe(true);
  });

  it('rejects sizes and counts that cannot be measured', () => {
    expect(() => measureHostMemcpy({ bytes: 100 })).toThrow(RangeError);
    expect(() => measureHostMemcpy({ bytes: 8192, iterations: 0 })).toThrow(RangeError);
  });
});

describe('hostBandwidth cache', () => {
  function counting(rate: number): { measure: (o: MeasureOptions) => { gbPerSecond: number; bytes: number; iterations: number }; calls: () => number } {
    let n = 0;
    return { measure: (o) => ((n += 1), { gbPerSecond: rate, bytes: o.bytes ?? 1, iterations: 1 }), calls: () => n };
  }

  it('measures once per machine key and then reads the cache file', () => {
    const dir = mkdtempSync(join(tmpdir(), 'ninodes-bw-'));
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
    const m = counting(12.5);
    const first = hostBandwidth({ cpuModel: 'Test CPU', memTotalBytes: 2 ** 34, cacheDir: dir, measure: m.measure, bytes: 4096 });
    expect(first).toMatchObject({ gbPerSecond: 12.5, cached: false, cacheFile: join(dir, 'bandwidth.json') });
    const second = hostBandwidth({ cpuModel: 'Test CPU', memTotalBytes: 2 ** 34, cacheDir: dir, measure: m.measure });
    expect(second).toMatchObject({ gbPerSecond: 12.5, cached: true, key: first.key });
    expect(m.calls()).toBe(1);
    // Another machine (different RAM) is measured separately; both stay in the file.
    const other = hostBandwidth({ cpuModel: 'Test CPU', memTotalBytes: 2 ** 35, cacheDir: dir, measure: counting(20).measure });
    expect(other).toMatchObject({ gbPerSecond: 20, cached: false });
    const file = JSON.parse(readFileSync(join(dir, 'bandwidth.json'), 'utf8')) as { entries: Record<string, { hostMemcpyGBs: number }> };
    expect(file.entries[machineKey('Test CPU', 2 ** 34)]?.hostMemcpyGBs).toBe(12.5);
    expect(file.entries[machineKey('Test CPU', 2 ** 35)]?.hostMemcpyGBs).toBe(20);
    expect(readdirSync(dir).filter((f) => f.endsWith('.tmp'))).toEqual([]);
  });

  it('refresh re-measures; a corrupt cache is replaced, not trusted', () => {
    const dir = mkdtempSync(join(tmpdir(), 'ninodes-bw-'));
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
    writeFileSync(join(dir, 'bandwidth.json'), '{"version":1,"entries":{"x":{"hostMemcpyGBs":-3}}}');
    const m = counting(7);
    expect(hostBandwidth({ cpuModel: 'C', memTotalBytes: 1, cacheDir: dir, measure: m.measure }).cached).toBe(false);
    expect(hostBandwidth({ cpuModel: 'C', memTotalBytes: 1, cacheDir: dir, measure: m.measure, refresh: true }).cached).toBe(false);
    expect(m.calls()).toBe(2);
  });

  it('an unwritable cache dir still returns the measurement and says why it was not cached', () => {
    const dir = mkdtempSync(join(tmpdir(), 'ninodes-bw-'));
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
    writeFileSync(join(dir, 'not-a-dir'), 'x');
    const r = hostBandwidth({ cpuModel: 'C', memTotalBytes: 1, cacheDir: join(dir, 'not-a-dir'), measure: counting(3).measure });
    expect(r).toMatchObject({ gbPerSecond: 3, cached: false, cacheFile: null, cacheError: expect.stringMatching(/cannot write/) });
  });

  it('cacheDir null disables the cache', () => {
    const m = counting(1);
    const r = hostBandwidth({ cpuModel: 'C', memTotalBytes: 1, cacheDir: null, measure: m.measure });
    expect(r.cacheFile).toBeNull();
    hostBandwidth({ cpuModel: 'C', memTotalBytes: 1, cacheDir: null, measure: m.measure });
    expect(m.calls()).toBe(2);
  });

  it('machine keys differ by CPU model and RAM and are stable', () => {
    expect(machineKey('A', 1)).toBe(machineKey('A', 1));
    expect(machineKey('A', 1)).not.toBe(machineKey('B', 1));
    expect(machineKey('A', 1)).not.toBe(machineKey('A', 2));
  });
});

describe('defaultCacheDir', () => {
  it('NINODES_CACHE moves the whole cache (bandwidth.json with it), then XDG_CACHE_HOME, then ~/.cache', () => {
    expect(defaultCacheDir({ NINODES_CACHE: '/srv/nc', XDG_CACHE_HOME: '/x' })).toBe('/srv/nc');
    expect(defaultCacheDir({ XDG_CACHE_HOME: '/x' })).toBe('/x/ninodes');
    // A relative XDG_CACHE_HOME is invalid by the XDG spec and ignored.
    expect(defaultCacheDir({ XDG_CACHE_HOME: 'rel' }).endsWith('/.cache/ninodes')).toBe(true);
  });
});
