// RAM this process may use: /proc/meminfo, capped by the cgroup memory limit (a container's RAM is
// its limit, not the host's MemTotal).
import { readCgroupMemory, type CgroupMemory } from './cgroup.js';
import { join, readText, resolveRoots, type ResolvedRoots, type SystemRoots } from './fs-read.js';
import { NoteLog } from './notes.js';
import { parseProcTable } from './process-memory.js';

export interface SystemMemory {
  /** MemTotal from /proc/meminfo. */
  memTotalBytes: number | null;
  /** MemAvailable from /proc/meminfo. */
  memAvailableBytes: number | null;
  cgroup: CgroupMemory | null;
  /** What this process may use in total: the cgroup limit when tighter than RAM, else MemTotal. */
  totalBytes: number | null;
  /** What it may still allocate: MemAvailable, capped by the cgroup's remaining headroom. */
  freeBytes: number | null;
}

export function readSystemMemory(roots: ResolvedRoots | SystemRoots = {}, log: NoteLog = new NoteLog()): SystemMemory {
  const resolved = resolveRoots(roots);
  const meminfoPath = join(resolved.procRoot, 'meminfo');
  const meminfoText = readText(meminfoPath);
  const meminfo = meminfoText === undefined ? new Map<string, number>() : parseProcTable(meminfoText);
  const memTotal = meminfo.get('MemTotal') ?? null;
  const memAvailable = meminfo.get('MemAvailable') ?? null;
  if (memTotal === null || memAvailable === null) {
    log.warn('cpu', `cannot read ${memTotal === null ? 'MemTotal' : 'MemAvailable'} from /proc/meminfo; RAM figures are unknown`, meminfoPath);
  }

  const cgroup = readCgroupMemory(resolved, log) ?? null;
  let total = memTotal;
  let free = memAvailable;
  if (cgroup !== null && (total === null || cgroup.limitBytes < total)) {
    total = cgroup.limitBytes;
    if (cgroup.usageBytes !== null) {
      const headroom = Math.max(0, cgroup.limitBytes - cgroup.usageBytes);
      free = free === null ? headroom : Math.min(free, headroom);
    }
  }
  return { memTotalBytes: memTotal, memAvailableBytes: memAvailable, cgroup, totalBytes: total, freeBytes: free };
}
