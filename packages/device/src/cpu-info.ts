import { readCgroupMemory, type CgroupMemory } from './cgroup.js';
import { join, readText, type ResolvedRoots } from './fs-read.js';
import type { NoteLog } from './notes.js';

/** The SIMD flags ninodes cares about, in /proc/cpuinfo spelling. */
export const SIMD_FLAGS = [
  'sse4_2',
  'avx',
  'avx2',
  'fma',
  'f16c',
  'avx_vnni',
  'avx512f',
  'avx512bw',
  'avx512dq',
  'avx512vl',
  'avx512_vnni',
  'avx512_bf16',
  'avx512_fp16',
  'amx_tile',
  'amx_int8',
  'amx_bf16',
  'asimd',
  'asimdhp',
  'sve',
] as const;
export type SimdFlag = (typeof SIMD_FLAGS)[number];

export interface CpuInfo {
  model: string;
  /** Logical CPUs listed in /proc/cpuinfo (what the OS schedules on). */
  logicalCores: number | null;
  /** Distinct (physical id, core id) pairs; null where cpuinfo does not say (ARM, some VMs). */
  physicalCores: number | null;
  simd: SimdFlag[];
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

/** Parses /proc/meminfo into bytes per key (`MemTotal: 16 kB` -> 16384). */
export function parseMeminfo(text: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    const m = /^([A-Za-z0-9_()]+):\s+(\d+)(?:\s+(kB))?\s*$/.exec(line);
    if (m === null) continue;
    const value = Number(m[2]) * (m[3] === 'kB' ? 1024 : 1);
    if (Number.isSafeInteger(value)) out.set(m[1] as string, value);
  }
  return out;
}

export function readCpuInfo(roots: ResolvedRoots, log: NoteLog): CpuInfo {
  const cpuinfoPath = join(roots.procRoot, 'cpuinfo');
  const cpuinfo = readText(cpuinfoPath);
  let model = 'unknown';
  let logical: number | null = null;
  let physical: number | null = null;
  let simd: SimdFlag[] = [];
  if (cpuinfo === undefined) {
    log.warn('cpu', 'cannot read /proc/cpuinfo; CPU model, cores and SIMD flags are unknown', cpuinfoPath);
  } else {
    const blocks = cpuinfo.split(/\n\s*\n/).filter((b) => /^processor\s*:/m.test(b));
    const field = (block: string, key: string): string | undefined => {
      const m = new RegExp(`^${key}\\s*:\\s*(.*)$`, 'm').exec(block);
      return m?.[1]?.trim();
    };
    if (blocks.length > 0) logical = blocks.length;
    const first = blocks[0] ?? '';
    model = field(first, 'model name') ?? field(first, 'Model') ?? field(cpuinfo, 'model name') ?? 'unknown';
    const cores = new Set<string>();
    for (const b of blocks) {
      const pid = field(b, 'physical id');
      const cid = field(b, 'core id');
      if (pid !== undefined && cid !== undefined) cores.add(`${pid}/${cid}`);
    }
    physical = cores.size > 0 ? cores.size : null;
    const flags = new Set((field(first, 'flags') ?? field(first, 'Features') ?? '').split(/\s+/));
    simd = SIMD_FLAGS.filter((f) => flags.has(f));
    if (logical === null) log.warn('cpu', 'no processor entries in /proc/cpuinfo; core count unknown', cpuinfoPath);
  }

  const meminfoPath = join(roots.procRoot, 'meminfo');
  const meminfoText = readText(meminfoPath);
  const meminfo = meminfoText === undefined ? new Map<string, number>() : parseMeminfo(meminfoText);
  const memTotal = meminfo.get('MemTotal') ?? null;
  const memAvailable = meminfo.get('MemAvailable') ?? null;
  if (memTotal === null || memAvailable === null) {
    log.warn('cpu', `cannot read ${memTotal === null ? 'MemTotal' : 'MemAvailable'} from /proc/meminfo; RAM figures are unknown`, meminfoPath);
  }

  const cgroup = readCgroupMemory(roots, log) ?? null;
  let total = memTotal;
  let free = memAvailable;
  if (cgroup !== null && (total === null || cgroup.limitBytes < total)) {
    total = cgroup.limitBytes;
    if (cgroup.usageBytes !== null) {
      const headroom = Math.max(0, cgroup.limitBytes - cgroup.usageBytes);
      free = free === null ? headroom : Math.min(free, headroom);
    }
  }
  return { model, logicalCores: logical, physicalCores: physical, simd, memTotalBytes: memTotal, memAvailableBytes: memAvailable, cgroup, totalBytes: total, freeBytes: free };
}

/**
 * The CPU architecture profile name for a set of SIMD flags, the tiers the native kernels pick:
 * AVX2+FMA+F16C, then AVX-512 F/BW/DQ/VL, then AMX-INT8 tiles on top of AVX-512.
 */
export function cpuArch(simd: readonly string[]): 'cpu-amx' | 'cpu-avx512' | 'cpu-avx2' | 'cpu-scalar' {
  const has = (...flags: string[]): boolean => flags.every((f) => simd.includes(f));
  if (!has('avx2', 'fma', 'f16c')) return 'cpu-scalar';
  if (!has('avx512f', 'avx512bw', 'avx512dq', 'avx512vl')) return 'cpu-avx2';
  return has('amx_tile', 'amx_int8') ? 'cpu-amx' : 'cpu-avx512';
}
