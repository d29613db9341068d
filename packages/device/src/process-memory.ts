// This process's resident memory from procfs, the one place /proc memory tables are parsed
// (`Key:   123 kB` lines: meminfo, status, smaps_rollup).
import { readSmallFile } from '@ninodes/kernels';
import { MAX_TABLE_BYTES, join, resolveRoots, type SystemRoots } from './fs-read.js';

/** Parses a procfs `Key:   123 kB` table (meminfo, status, smaps_rollup) into bytes per key; a value without `kB` is a count. */
export function parseProcTable(text: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    const m = /^([A-Za-z0-9_()]+):\s+(\d+)(?:\s+(kB))?\s*$/.exec(line);
    if (m === null) continue;
    const value = Number(m[2]) * (m[3] === 'kB' ? 1024 : 1);
    if (Number.isSafeInteger(value)) out.set(m[1] as string, value);
  }
  return out;
}

/** A procfs file of this process (`<procRoot>/self/<name>`); throws the fs error when absent (not Linux). */
function readSelf(name: string, roots: SystemRoots): string {
  return readSmallFile(join(resolveRoots(roots).procRoot, 'self', name), { maxBytes: MAX_TABLE_BYTES }).data.toString('utf8');
}

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

/** Parses `/proc/<pid>/smaps_rollup`. */
export function processMemoryFrom(smapsRollup: string): ProcessMemory {
  const t = parseProcTable(smapsRollup);
  const rss = t.get('Rss') ?? 0;
  const anonymous = t.get('Anonymous') ?? 0;
  return { rss, anonymous, fileBacked: rss - anonymous, pssFile: t.get('Pss_File'), swap: t.get('Swap') ?? 0 };
}

/** This process's resident memory from /proc/self/smaps_rollup (Linux): exact, but walks every mapping. */
export function processMemory(roots: SystemRoots = {}): ProcessMemory {
  return processMemoryFrom(readSelf('smaps_rollup', roots));
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
  const t = parseProcTable(status);
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
export function residentMemory(roots: SystemRoots = {}): ResidentMemory {
  return residentMemoryFrom(readSelf('status', roots));
}
