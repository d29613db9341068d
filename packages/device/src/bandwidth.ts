import { createHash } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { writeFileAtomicallySync } from '@ninodes/kernels';
import { z } from 'zod';
import { readText } from './fs-read.js';

export interface MemcpyMeasurement {
  /** Median of the timed copies, GB/s (1e9 bytes per second, bytes copied counted once). */
  gbPerSecond: number;
  bytes: number;
  iterations: number;
}

export interface MeasureOptions {
  /** Size of each buffer (default 256 MiB: well above last-level caches, so this is DRAM). */
  bytes?: number;
  /** Timed copies after one warm-up (default 5). */
  iterations?: number;
}

/**
 * Host memcpy bandwidth. Buffer#copy is a single memmove in V8, so this measures what the C
 * library's memcpy achieves on one thread for large, page-touched buffers.
 */
export function measureHostMemcpy(options: MeasureOptions = {}): MemcpyMeasurement {
  const bytes = options.bytes ?? 256 * 1024 * 1024;
  const iterations = options.iterations ?? 5;
  if (!Number.isSafeInteger(bytes) || bytes < 4096) throw new RangeError(`bytes must be an integer >= 4096, got ${bytes}`);
  if (!Number.isSafeInteger(iterations) || iterations < 1) throw new RangeError(`iterations must be a positive integer, got ${iterations}`);
  const src = Buffer.allocUnsafeSlow(bytes);
  const dst = Buffer.allocUnsafeSlow(bytes);
  // Touch every page first so page faults are not timed, and give the source a pattern to verify.
  for (let i = 0; i < bytes; i += 4096) src[i] = (i >>> 12) & 0xff;
  dst.fill(0);
  src.copy(dst);
  const times: number[] = [];
  for (let i = 0; i < iterations; i += 1) {
    const t0 = process.hrtime.bigint();
    src.copy(dst);
    times.push(Number(process.hrtime.bigint() - t0) / 1e9);
  }
  times.sort((a, b) => a - b);
  const median = times[Math.floor(times.length / 2)] as number;
  // A copy that did not happen would make a meaningless number: check before reporting.
  if (!dst.equals(src)) throw new Error('memcpy probe: destination differs from source');
  return { gbPerSecond: bytes / Math.max(median, 1e-9) / 1e9, bytes, iterations };
}

/** Key of the machine a measurement belongs to: CPU model and RAM size. */
export function machineKey(cpuModel: string, memTotalBytes: number | null): string {
  return createHash('sha256').update(`${cpuModel}\n${memTotalBytes ?? 'unknown'}`).digest('hex').slice(0, 16);
}

/**
 * The per-user cache of ninodes (measurements, generated checkpoints): `$NINODES_CACHE`, else
 * `$XDG_CACHE_HOME/ninodes`, else `~/.cache/ninodes`. The one place this rule lives.
 */
export function defaultCacheDir(env: NodeJS.ProcessEnv = process.env): string {
  if (env.NINODES_CACHE) return env.NINODES_CACHE;
  const xdg = env.XDG_CACHE_HOME;
  return join(xdg !== undefined && xdg.startsWith('/') ? xdg : join(homedir(), '.cache'), 'ninodes');
}

const cacheSchema = z.strictObject({
  version: z.literal(1),
  entries: z.record(
    z.string(),
    z.strictObject({ cpuModel: z.string(), memTotalBytes: z.number().nullable(), hostMemcpyGBs: z.number().positive(), bytes: z.number().int().positive(), measuredAt: z.string() }),
  ),
});
type BandwidthCache = z.infer<typeof cacheSchema>;

export interface HostBandwidth {
  gbPerSecond: number;
  cached: boolean;
  measuredAt: string;
  key: string;
  /** The cache file read or written; null when caching was disabled or the write failed. */
  cacheFile: string | null;
  /** Why the measurement could not be cached (the value is still valid), else null. */
  cacheError: string | null;
}

export interface HostBandwidthOptions extends MeasureOptions {
  cpuModel: string;
  memTotalBytes: number | null;
  /** Default defaultCacheDir(); null disables the cache. */
  cacheDir?: string | null;
  /** Measure even when a cached value exists (and replace it). */
  refresh?: boolean;
  /** The measurement (tests inject one to count calls). */
  measure?: (options: MeasureOptions) => MemcpyMeasurement;
}

function readCache(file: string): BandwidthCache {
  const text = readText(file);
  if (text === undefined) return { version: 1, entries: {} };
  try {
    const parsed = cacheSchema.safeParse(JSON.parse(text));
    // A corrupt or foreign cache is rebuilt rather than trusted: it only holds measurements.
    return parsed.success ? parsed.data : { version: 1, entries: {} };
  } catch {
    return { version: 1, entries: {} };
  }
}

/** Host memcpy GB/s for this machine, measured once and then read from the per-user cache. */
export function hostBandwidth(options: HostBandwidthOptions): HostBandwidth {
  const key = machineKey(options.cpuModel, options.memTotalBytes);
  const dir = options.cacheDir === undefined ? defaultCacheDir() : options.cacheDir;
  const file = dir === null ? null : join(dir, 'bandwidth.json');
  const cache = file === null ? { version: 1 as const, entries: {} } : readCache(file);
  const hit = cache.entries[key];
  if (hit !== undefined && options.refresh !== true) {
    return { gbPerSecond: hit.hostMemcpyGBs, cached: true, measuredAt: hit.measuredAt, key, cacheFile: file, cacheError: null };
  }
  const measureOptions: MeasureOptions = {};
  if (options.bytes !== undefined) measureOptions.bytes = options.bytes;
  if (options.iterations !== undefined) measureOptions.iterations = options.iterations;
  const m = (options.measure ?? measureHostMemcpy)(measureOptions);
  const measuredAt = new Date().toISOString();
  cache.entries[key] = { cpuModel: options.cpuModel, memTotalBytes: options.memTotalBytes, hostMemcpyGBs: m.gbPerSecond, bytes: m.bytes, measuredAt };
  let written: string | null = null;
  let cacheError: string | null = null;
  if (file !== null && dir !== null) {
    // Atomic (a crash never leaves a half-written cache); a cache that cannot be written is reported, not fatal.
    try {
      mkdirSync(dir, { recursive: true });
      writeFileAtomicallySync(file, (write) => write(`${JSON.stringify(cache, null, 2)}\n`));
      written = file;
    } catch (error) {
      cacheError = `cannot write ${file}: ${(error as Error).message}`;
    }
  }
  return { gbPerSecond: m.gbPerSecond, cached: false, measuredAt, key, cacheFile: written, cacheError };
}
