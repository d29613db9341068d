import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { enumerateDevices } from './enumerate.js';
import { absentHip, absentNvml, absentVulkan, recordedNvml } from './gpu-sources.js';
import { MemorySampler, deviceUsageReader, readProcessRss } from './memory-sampler.js';
import { machine } from './test-machines.js';

function statusRssBytes(): number {
  // Independent read: the kernel's own accounting in /proc/self/statm (pages), not VmRSS.
  return Number(readFileSync('/proc/self/statm', 'utf8').split(' ')[1]) * 4096;
}

describe('readProcessRss', () => {
  it('agrees with /proc/self/statm on this machine', () => {
    const a = readProcessRss();
    const b = statusRssBytes();
    expect(Math.abs(a - b)).toBeLessThan(16 * 2 ** 20);
  });

  it('reads VmRSS from a recorded status file', () => {
    expect(readProcessRss({ procRoot: machine('w7900x2-gfx1100').procRoot })).toBe(52816 * 1024);
  });

  it('falls back to statm pages when status has no VmRSS', () => {
    const dir = mkdtempSync(join(tmpdir(), 'ninodes-rss-'));
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
    cpSync(join(machine('w7900x2-gfx1100').procRoot, 'self', 'statm'), join(dir, 'self', 'statm'), { recursive: true });
    writeFileSync(join(dir, 'self', 'status'), 'Name:\tnode\n');
    expect(readProcessRss({ procRoot: dir })).toBe(13204 * 4096);
  });
});

describe('MemorySampler', () => {
  it('reports peak and mean of injected series, over the whole run and a window', () => {
    const rss = [100, 300, 200, 600, 100];
    let i = 0;
    const s = new MemorySampler({ readRss: () => rss[i++ % rss.length] as number, devices: () => ({ 'hip:0': (i - 1) * 10, 'hip:1': null }) });
    for (let k = 0; k < rss.length; k += 1) s.sample();
    const r = s.report();
    expect(r.samples).toBe(5);
    expect(r.rss).toEqual({ peak: 600, mean: (100 + 300 + 200 + 600 + 100) / 5, last: 100, samples: 5 });
    expect(r.devices['hip:0']).toEqual({ peak: 40, mean: 20, last: 40, samples: 5 });
    expect(r.devices['hip:1']).toBeNull();
    // A window of 0 ms from the last sample keeps only samples taken at the same instant or later.
    const w = s.report(0);
    expect(w.samples).toBeGreaterThanOrEqual(1);
    expect(w.rss?.last).toBe(100);
  });

  it('samples on its timer, stops cleanly (no further samples) and never keeps the process alive', async () => {
    let calls = 0;
    const s = new MemorySampler({ intervalMs: 10, readRss: () => (calls += 1) });
    s.start();
    expect(s.running).toBe(true);
    await new Promise((r) => setTimeout(r, 80));
    const report = s.stop();
    expect(s.running).toBe(false);
    expect(report.samples).toBeGreaterThanOrEqual(3);
    expect(report.rss?.peak).toBe(calls);
    const after = calls;
    await new Promise((r) => setTimeout(r, 40));
    expect(calls).toBe(after);
    expect(s.stop().samples).toBe(report.samples);
  });

  it('has an unref-ed timer', () => {
    const s = new MemorySampler({ intervalMs: 1000 }).start();
    const timer = (s as unknown as { timer: NodeJS.Timeout }).timer;
    expect(timer.hasRef()).toBe(false);
    s.stop();
  });

  it('defaults to 0.5 s and rejects nonsense intervals', () => {
    expect(new MemorySampler().intervalMs).toBe(500);
    expect(() => new MemorySampler({ intervalMs: 0 })).toThrow(RangeError);
  });

  it('splits each sample into anonymous and file-backed bytes from status, and reports their peaks', () => {
    const dir = mkdtempSync(join(tmpdir(), 'ninodes-sampler-'));
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
    mkdirSync(join(dir, 'self'));
    const status = (anonKb: number, fileKb: number, shmemKb: number): void =>
      writeFileSync(join(dir, 'self', 'status'), `Name:\tnode\nVmRSS:\t${anonKb + fileKb + shmemKb} kB\nRssAnon:\t${anonKb} kB\nRssFile:\t${fileKb} kB\nRssShmem:\t${shmemKb} kB\n`);
    const s = new MemorySampler({ procRoot: dir });
    status(100, 50, 2);
    const first = s.sample();
    expect(first).toMatchObject({ rssBytes: 152 * 1024, anonBytes: 100 * 1024, fileBytes: 52 * 1024 });
    status(300, 10, 0);
    s.sample();
    status(200, 8000, 0);
    s.sample();
    const r = s.report();
    // Peaks of each series on its own: anonymous from the 2nd sample, file-backed from the 3rd.
    expect(r.anonymous?.peak).toBe(300 * 1024);
    expect(r.fileBacked?.peak).toBe(8000 * 1024);
    expect(r.rss?.peak).toBe(8200 * 1024);
    rmSync(dir, { recursive: true, force: true });
  });

  it('has no split when RSS comes from readRss', () => {
    const s = new MemorySampler({ readRss: () => 5 });
    expect(s.sample()).toMatchObject({ rssBytes: 5, anonBytes: null, fileBytes: null });
    expect(s.report()).toMatchObject({ anonymous: null, fileBacked: null });
  });

  it('keeps at most maxSamples', () => {
    const s = new MemorySampler({ readRss: () => 1, maxSamples: 3 });
    for (let k = 0; k < 10; k += 1) s.sample();
    expect(s.history().length).toBe(3);
  });

  it("keeps the whole run's peak when the sample holding it was dropped", () => {
    const values = [9, 1, 2, 3, 4];
    let i = 0;
    const s = new MemorySampler({ readRss: () => values[i++] as number, maxSamples: 2, devices: () => ({ 'cuda:0': i === 1 ? 70 : 5 }) });
    for (let k = 0; k < values.length; k += 1) s.sample();
    const r = s.report();
    expect(r.rss).toEqual({ peak: 9, mean: 3.5, last: 4, samples: 2 });
    expect(r.devices['cuda:0']?.peak).toBe(70);
    // A window judges only the samples in it.
    expect(s.report(1e9).rss?.peak).toBe(4);
  });
});

describe('deviceUsageReader', () => {
  it('re-reads AMD used VRAM from sysfs on every call', () => {
    const dir = mkdtempSync(join(tmpdir(), 'ninodes-usage-'));
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
    cpSync(machine('w7900x2-gfx1100').dir, dir, { recursive: true });
    const e = enumerateDevices({ procRoot: join(dir, 'proc'), sysRoot: join(dir, 'sys'), nvml: absentNvml(), hip: absentHip(), vulkan: absentVulkan(), includeDisk: false });
    const read = deviceUsageReader(e, absentNvml());
    expect(read()).toEqual({ 'hip:0': 1316737024, 'hip:1': 29253632 });
    writeFileSync(join(dir, 'sys/class/drm/card2/device/mem_info_vram_used'), '4294967296\n');
    expect(read()['hip:1']).toBe(4294967296);
  });

  it('counts GTT for unified-memory APUs and reads NVIDIA usage from NVML', () => {
    const apu = enumerateDevices({ ...machine('strix-halo-gfx1151'), nvml: absentNvml(), hip: absentHip(), vulkan: absentVulkan(), includeDisk: false });
    expect(deviceUsageReader(apu)()).toEqual({ 'hip:0': 161742848 + 5127438336 });
    const m = machine('rtx4090x2-container');
    const nvml = recordedNvml(`${m.dir}/nvml.json`);
    const nv = enumerateDevices({ ...m, nvml, hip: absentHip(), vulkan: absentVulkan(), includeDisk: false });
    expect(deviceUsageReader(nv, nvml)()).toEqual({ 'cuda:0': 494993408, 'cuda:1': 17618173952 });
  });
});
