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
  /** Anonymous resident bytes (RssAnon: what the process owns); null where status lacks it or RSS came from `readRss`. */
  anonBytes: number | null;
  /** File-backed resident bytes (RssFile + RssShmem: mapped weights in the page cache); null like anonBytes. */
  fileBytes: number | null;
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
  /** Of the anonymous / file-backed split (null when no sample had it). */
  anonymous: SeriesStats | null;
  fileBacked: SeriesStats | null;
  devices: Record<string, SeriesStats | null>;
}

/** RSS with its anonymous / file-backed split, from one read of /proc/self/status. */
interface Residency {
  rss: number;
  anon: number | null;
  file: number | null;
}

function readResidency(roots: SystemRoots): Residency {
  const { procRoot } = resolveRoots(roots);
  const status = readText(join(procRoot, 'self', 'status'));
  const t = status === undefined ? new Map<string, number>() : parseProcTable(status);
  const anon = t.get('RssAnon');
  const split = anon === undefined ? { anon: null, file: null } : { anon, file: (t.get('RssFile') ?? 0) + (t.get('RssShmem') ?? 0) };
  const vmRss = t.get('VmRSS');
  if (vmRss !== undefined) return { rss: vmRss, ...split };
  const statm = readText(join(procRoot, 'self', 'statm'));
  const pages = parseUnsigned(statm?.trim().split(/\s+/)[1]);
  if (pages !== undefined) return { rss: pages * 4096, ...split };
  return { rss: process.memoryUsage.rss(), ...split };
}

/** Reads this process's resident set size from /proc/self/status (VmRSS), else statm, else Node. */
export function readProcessRss(roots: SystemRoots = {}): number {
  return readResidency(roots).rss;
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
  /** Reads RSS (then anonBytes / fileBytes are null); default /proc/self/status under the given roots, with the split. */
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
  private readonly readResident: () => Residency;
  private readonly maxSamples: number;
  private readonly samples: MemorySample[] = [];
  /** Peaks since start() by series ('rss', 'anon', 'file', 'device:<id>'): kept when old samples are dropped. */
  private readonly runPeaks = new Map<string, number>();
  private timer: ReturnType<typeof setInterval> | undefined;
  private startedAt = 0;

  constructor(options: MemorySamplerOptions = {}) {
    const interval = options.intervalMs ?? 500;
    if (!Number.isFinite(interval) || interval < 1) throw new RangeError(`intervalMs must be >= 1, got ${interval}`);
    this.intervalMs = interval;
    this.readDevices = options.devices;
    this.maxSamples = options.maxSamples ?? 100_000;
    const roots = { ...(options.procRoot === undefined ? {} : { procRoot: options.procRoot }) };
    const readRss = options.readRss;
    this.readResident = readRss === undefined ? () => readResidency(roots) : () => ({ rss: readRss(), anon: null, file: null });
  }

  get running(): boolean {
    return this.timer !== undefined;
  }

  /** Starts sampling (one sample immediately). Starting a running sampler is a no-op. */
  start(): this {
    if (this.timer !== undefined) return this;
    this.samples.length = 0;
    this.runPeaks.clear();
    this.startedAt = performance.now();
    this.sample();
    this.timer = setInterval(() => this.sample(), this.intervalMs);
    this.timer.unref();
    return this;
  }

  /** Takes one sample now (also usable without start(), e.g. at step boundaries). */
  sample(): MemorySample {
    const r = this.readResident();
    const s: MemorySample = { tMs: performance.now() - this.startedAt, rssBytes: r.rss, anonBytes: r.anon, fileBytes: r.file, devices: this.readDevices?.() ?? {} };
    this.samples.push(s);
    if (this.samples.length > this.maxSamples) this.samples.shift();
    const keep = (key: string, v: number | null): void => {
      if (v !== null && !(v <= (this.runPeaks.get(key) ?? -Infinity))) this.runPeaks.set(key, v);
    };
    keep('rss', s.rssBytes);
    keep('anon', s.anonBytes);
    keep('file', s.fileBytes);
    for (const [id, v] of Object.entries(s.devices)) keep(`device:${id}`, v);
    return s;
  }

  /**
   * Peak and mean over the last `windowMs`. Without a window: the whole run — peaks over every sample
   * since start(), even those dropped by maxSamples; mean and last over the samples kept.
   */
  report(windowMs?: number): MemoryReport {
    const last = this.samples[this.samples.length - 1];
    const from = windowMs === undefined || last === undefined ? -Infinity : last.tMs - windowMs;
    const inWindow = this.samples.filter((s) => s.tMs >= from);
    const ids = new Set<string>();
    for (const s of inWindow) for (const id of Object.keys(s.devices)) ids.add(id);
    const devices: Record<string, SeriesStats | null> = {};
    const whole = windowMs === undefined;
    const series = (key: string, values: number[]): SeriesStats | null => {
      const st = stats(values);
      const peak = this.runPeaks.get(key);
      return st !== null && whole && peak !== undefined ? { ...st, peak: Math.max(st.peak, peak) } : st;
    };
    for (const id of [...ids].sort()) {
      devices[id] = series(`device:${id}`, inWindow.map((s) => s.devices[id]).filter((v): v is number => typeof v === 'number'));
    }
    const first = inWindow[0];
    return {
      windowMs: first === undefined || last === undefined ? 0 : last.tMs - first.tMs,
      samples: inWindow.length,
      rss: series('rss', inWindow.map((s) => s.rssBytes)),
      anonymous: series('anon', inWindow.map((s) => s.anonBytes).filter((v): v is number => v !== null)),
      fileBacked: series('file', inWindow.map((s) => s.fileBytes).filter((v): v is number => v !== null)),
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
