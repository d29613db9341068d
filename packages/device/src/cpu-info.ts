import { join, readText, type ResolvedRoots } from './fs-read.js';
import type { NoteLog } from './notes.js';
import { type SystemMemory, readSystemMemory } from './system-memory.js';

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

export interface CpuInfo extends SystemMemory {
  model: string;
  /** Logical CPUs listed in /proc/cpuinfo (what the OS schedules on). */
  logicalCores: number | null;
  /** Distinct (physical id, core id) pairs; null where cpuinfo does not say (ARM, some VMs). */
  physicalCores: number | null;
  simd: SimdFlag[];
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

  return { model, logicalCores: logical, physicalCores: physical, simd, ...readSystemMemory(roots, log) };
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
