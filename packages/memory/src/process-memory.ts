import { readFileSync } from 'node:fs';

/** Resident memory of this process, split by what backs it. */
export interface ProcessMemory {
  /** All resident bytes (RSS). */
  readonly rss: number;
  /** Anonymous resident bytes: heap, JS, native allocations — what the process really owns. */
  readonly anonymous: number;
  /** File-backed (and shared-memory) resident bytes: mapped checkpoints served by the page cache. */
  readonly fileBacked: number;
  /** Proportional share of the file-backed pages (Pss_File), when the kernel reports it. */
  readonly pssFile: number | undefined;
  readonly swap: number;
}

/** Parses `/proc/<pid>/smaps_rollup` (`Key:   123 kB` lines) into bytes by key. */
export function parseKbTable(text: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    const m = /^([A-Za-z_]+):\s+(\d+)\s*kB/.exec(line);
    if (m !== null) out.set(m[1] as string, Number(m[2]) * 1024);
  }
  return out;
}

export function processMemoryFrom(smapsRollup: string): ProcessMemory {
  const t = parseKbTable(smapsRollup);
  const rss = t.get('Rss') ?? 0;
  const anonymous = t.get('Anonymous') ?? 0;
  return { rss, anonymous, fileBacked: rss - anonymous, pssFile: t.get('Pss_File'), swap: t.get('Swap') ?? 0 };
}

/** This process's resident memory from /proc/self/smaps_rollup (Linux). */
export function processMemory(): ProcessMemory {
  return processMemoryFrom(readFileSync('/proc/self/smaps_rollup', 'utf8'));
}

/** Resident memory from the kernel's per-process counters: cheap enough to sample often. */
export interface ResidentMemory {
  readonly rss: number;
  readonly anonymous: number;
  /** RssFile + RssShmem. */
  readonly fileBacked: number;
  readonly swap: number;
}

/** Parses `/proc/<pid>/status` (`RssAnon:   123 kB` lines). */
export function residentMemoryFrom(status: string): ResidentMemory {
  const t = parseKbTable(status);
  const anonymous = t.get('RssAnon') ?? 0;
  const fileBacked = (t.get('RssFile') ?? 0) + (t.get('RssShmem') ?? 0);
  return { rss: anonymous + fileBacked, anonymous, fileBacked, swap: t.get('VmSwap') ?? 0 };
}

/**
 * This process's resident memory from /proc/self/status. Reading it costs the same whatever the
 * process maps, unlike smaps_rollup, which walks every mapping's pages (with gigabytes of mapped
 * weights, sampling that every 100 ms took ~5% of a core). The counters are the kernel's running
 * totals, which may lag by a few pages per thread; `processMemory` is the exact (and slow) reading.
 */
export function residentMemory(): ResidentMemory {
  return residentMemoryFrom(readFileSync('/proc/self/status', 'utf8'));
}

/** System-wide memory from /proc/meminfo. */
export interface SystemMemory {
  readonly total: number;
  readonly available: number;
}

export function systemMemory(): SystemMemory {
  const t = parseKbTable(readFileSync('/proc/meminfo', 'utf8'));
  return { total: t.get('MemTotal') ?? 0, available: t.get('MemAvailable') ?? 0 };
}
