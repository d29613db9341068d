import { join, readText, parseUnsigned, resolveRoots, type SystemRoots } from './fs-read.js';
import { readAmdUsage } from './amd-sysfs.js';
import type { Enumeration } from './enumerate.js';
import type { NvmlSource } from './gpu-sources.js';
import { nativeNvml } from './gpu-sources.js';
import { parseProcTable } from './process-memory.js';

/** One reading: process RSS and used bytes per device id (null when that read failed). */
export interface MemorySample {
  /** Milliseconds since the sampler started. */
  tMs: number;
  rssBytes: number;
  devices: Record<string, number | null>;
}

export interface SeriesStats {
  peak: number;
  mean: number;
  last: number;
  samples: number;
}

export interface MemoryReport {
  /** Window covered, ms, from the first to the last sample inside it. */
  windowMs: number;
  samples: number;
  rss: SeriesStats | null;
  devices: Record<string, SeriesStats | null>;
}

/** Reads this process's resident set size from /proc/self/status (VmRSS), else statm, else Node. */
export function readProcessRss(roots: SystemRoots = {}): number {
  const { procRoot } = resolveRoots(roots);
  const status = readText(join(procRoot, 'self', 'status'));
  const vmRss = status === undefined ? undefined : parseProcTable(status).get('VmRSS');
  if (vmRss !== undefined) return vmRss;
  const statm = readText(join(procRoot, 'self', 'statm'));
  const pages = parseUnsigned(statm?.trim().split(/\s+/)[1]);
  if (pages !== undefined) return pages * 4096;
  return process.memoryUsage.rss();
}

/** Returns used bytes per device id; built once from an enumeration, called every interval. */
export type DeviceUsageReader = () => Record<string, number | null>;

/** Per-GPU used memory, re-read from sysfs (AMD) and NVML (NVIDIA) on every call. */
export function deviceUsageReader(enumeration: Enumeration, nvml: NvmlSource = nativeNvml): DeviceUsageReader {
  const amd = enumeration.devices.filter((d) => d.kind === 'hip' && d.amd !== undefined);
  const cuda = enumeration.devices.filter((d) => d.kind === 'cuda');
  return () => {
    const out: Record<string, number | null> = {};
    for (const d of amd) {
      const u = readAmdUsage((d.amd as NonNullable<typeof d.amd>).devicePath);
      out[d.id] = d.unifiedMemory ? (u.vramUsedBytes !== null && u.gttUsedBytes !== null ? u.vramUsedBytes + u.gttUsedBytes : null) : u.vramUsedBytes;
    }
    if (cuda.length > 0) {
      let answer;
      try {
        answer = nvml.probe();
      } catch {
        answer = undefined;
      }
      for (const d of cuda) {
        const rec = answer?.available ? answer.devices.find((x) => x.index === d.nvidia?.nvmlIndex) : undefined;
        out[d.id] = rec?.usedBytes ?? null;
      }
    }
    return out;
  };
}

export interface MemorySamplerOptions extends SystemRoots {
  /** Sampling interval in ms (default 500). */
  intervalMs?: number;
  /** Device usage source; default none (RSS only). */
  devices?: DeviceUsageReader;
  /** Samples kept (oldest dropped first); default 100 000, about 14 h at 0.5 s. */
  maxSamples?: number;
  /** Reads RSS; default readProcessRss with the given roots. */
  readRss?: () => number;
}

function stats(values: number[]): SeriesStats | null {
  if (values.length === 0) return null;
  let peak = -Infinity;
  let sum = 0;
  for (const v of values) {
    if (v > peak) peak = v;
    sum += v;
  }
  return { peak, mean: sum / values.length, last: values[values.length - 1] as number, samples: values.length };
}

/**
 * Samples process RSS and per-device used memory on a timer. The timer is unref'd, so a running
 * sampler never keeps the process alive; `stop()` clears it, takes a final sample and returns the
 * report over the whole run.
 */
export class MemorySampler {
  readonly intervalMs: number;
  private readonly readDevices: DeviceUsageReader | undefined;
  private readonly readRss: () => number;
  private readonly maxSamples: number;
  private readonly samples: MemorySample[] = [];
  private timer: ReturnType<typeof setInterval> | undefined;
  private startedAt = 0;

  constructor(options: MemorySamplerOptions = {}) {
    const interval = options.intervalMs ?? 500;
    if (!Number.isFinite(interval) || interval < 1) throw new RangeError(`intervalMs must be >= 1, got ${interval}`);
    this.intervalMs = interval;
    this.readDevices = options.devices;
    this.maxSamples = options.maxSamples ?? 100_000;
    const roots = { ...(options.procRoot === undefined ? {} : { procRoot: options.procRoot }) };
    this.readRss = options.readRss ?? (() => readProcessRss(roots));
  }

  get running(): boolean {
    return this.timer !== undefined;
  }

  /** Starts sampling (one sample immediately). Starting a running sampler is a no-op. */
  start(): this {
    if (this.timer !== undefined) return this;
    this.samples.length = 0;
    this.startedAt = performance.now();
    this.sample();
    this.timer = setInterval(() => this.sample(), this.intervalMs);
    this.timer.unref();
    return this;
  }

  /** Takes one sample now (also usable without start(), e.g. at step boundaries). */
  sample(): MemorySample {
    const s: MemorySample = { tMs: performance.now() - this.startedAt, rssBytes: this.readRss(), devices: this.readDevices?.() ?? {} };
    this.samples.push(s);
    if (this.samples.length > this.maxSamples) this.samples.shift();
    return s;
  }

  /** Peak and mean over the last `windowMs` (default: everything sampled). */
  report(windowMs?: number): MemoryReport {
    const last = this.samples[this.samples.length - 1];
    const from = windowMs === undefined || last === undefined ? -Infinity : last.tMs - windowMs;
    const inWindow = this.samples.filter((s) => s.tMs >= from);
    const ids = new Set<string>();
    for (const s of inWindow) for (const id of Object.keys(s.devices)) ids.add(id);
    const devices: Record<string, SeriesStats | null> = {};
    for (const id of [...ids].sort()) {
      devices[id] = stats(inWindow.map((s) => s.devices[id]).filter((v): v is number => typeof v === 'number'));
    }
    const first = inWindow[0];
    return {
      windowMs: first === undefined || last === undefined ? 0 : last.tMs - first.tMs,
      samples: inWindow.length,
      rss: stats(inWindow.map((s) => s.rssBytes)),
      devices,
    };
  }

  /** Stops the timer, takes a final sample and reports over the whole run. Safe to call twice. */
  stop(): MemoryReport {
    if (this.timer !== undefined) {
      clearInterval(this.timer);
      this.timer = undefined;
      this.sample();
    }
    return this.report();
  }

  /** A copy of the samples kept so far. */
  history(): MemorySample[] {
    return this.samples.map((s) => ({ ...s, devices: { ...s.devices } }));
  }
}
