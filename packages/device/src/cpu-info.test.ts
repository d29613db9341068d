import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { totalmem } from 'node:os';
import { describe, expect, it } from 'vitest';
import { cpuArch, readCpuInfo } from './cpu-info.js';
import { parseProcTable } from './process-memory.js';
import { resolveRoots } from './fs-read.js';
import { NoteLog } from './notes.js';
import { machine } from './test-machines.js';

describe('readCpuInfo on recorded machines', () => {
  it('Threadripper PRO 7965WX box: model, 48 threads / 24 cores, AVX-512, 251.5 GiB RAM, no cgroup limit', () => {
    const log = new NoteLog();
    const cpu = readCpuInfo(resolveRoots(machine('w7900x2-gfx1100')), log);
    expect(cpu.model).toBe('AMD Ryzen Threadripper PRO 7965WX 24-Cores');
    expect(cpu.logicalCores).toBe(48);
    expect(cpu.physicalCores).toBe(24);
    expect(cpu.simd).toEqual(expect.arrayContaining(['avx2', 'fma', 'f16c', 'avx512f', 'avx512_bf16', 'avx512_vnni']));
    expect(cpu.simd).not.toContain('amx_tile');
    expect(cpu.memTotalBytes).toBe(263772604 * 1024);
    expect(cpu.memAvailableBytes).toBe(250121836 * 1024);
    expect(cpu.cgroup).toBeNull();
    expect(cpu.totalBytes).toBe(cpu.memTotalBytes);
    expect(log.notes.filter((n) => n.level === 'warn')).toEqual([]);
    // Zen 4: AVX-512 F/BW/DQ/VL, no AMX.
    expect(cpuArch(cpu.simd)).toBe('cpu-avx512');
  });

  it('container on an RTX 4090 host: the cgroup v2 limit (64 GiB), not the host RAM, is the total', () => {
    const cpu = readCpuInfo(resolveRoots(machine('rtx4090x2-container')), new NoteLog());
    expect(cpu.memTotalBytes).toBe(263585380 * 1024);
    expect(cpu.cgroup).toMatchObject({ version: 2, limitBytes: 64 * 2 ** 30, usageBytes: 20 * 2 ** 30 });
    expect(cpu.totalBytes).toBe(64 * 2 ** 30);
    // Free is what the cgroup still allows (44 GiB), tighter than the host's MemAvailable.
    expect(cpu.freeBytes).toBe(44 * 2 ** 30);
    expect(cpu.simd).toEqual(expect.arrayContaining(['amx_tile', 'amx_int8', 'amx_bf16', 'avx512_fp16']));
  });

  it('cgroup v1: the tightest limit on the path to the root applies (parent slice 16 GiB < service 32 GiB)', () => {
    const cpu = readCpuInfo(resolveRoots(machine('cgroup-v1-nested')), new NoteLog());
    expect(cpu.cgroup).toMatchObject({ version: 1, limitBytes: 16 * 2 ** 30, usageBytes: 12 * 2 ** 30 });
    expect(cpu.cgroup?.path).toMatch(/memory\/system\.slice$/);
    expect(cpu.totalBytes).toBe(16 * 2 ** 30);
    expect(cpu.freeBytes).toBe(4 * 2 ** 30);
  });

  it('malformed tree: unknown fields and warnings, no exception', () => {
    const log = new NoteLog();
    const cpu = readCpuInfo(resolveRoots(machine('malformed')), log);
    expect(cpu).toMatchObject({ model: 'unknown', logicalCores: null, memTotalBytes: null, totalBytes: null, cgroup: null });
    const warnings = log.notes.filter((n) => n.level === 'warn').map((n) => n.message);
    expect(warnings.some((m) => /processor entries/.test(m))).toBe(true);
    expect(warnings.some((m) => /MemTotal/.test(m))).toBe(true);
    expect(warnings.some((m) => /unparsable memory limit 'banana'/.test(m))).toBe(true);
  });

  it('a missing procfs is a warning, not an exception', () => {
    const log = new NoteLog();
    const cpu = readCpuInfo({ procRoot: '/nonexistent/proc', sysRoot: '/nonexistent/sys' }, log);
    expect(cpu.totalBytes).toBeNull();
    expect(log.notes.some((n) => n.level === 'warn')).toBe(true);
  });
});

describe('readCpuInfo on this machine', () => {
  it('agrees with free -b and os.totalmem()', () => {
    const cpu = readCpuInfo(resolveRoots(), new NoteLog());
    expect(cpu.memTotalBytes).toBe(totalmem());
    const free = execFileSync('free', ['-b'], { encoding: 'utf8' });
    const mem = /^Mem:\s+(\d+)\s+\d+\s+\d+\s+\d+\s+\d+\s+(\d+)/m.exec(free);
    expect(mem).not.toBeNull();
    expect(cpu.memTotalBytes).toBe(Number(mem?.[1]));
    // Available moves between the two reads; 256 MiB covers other jobs on a shared machine.
    expect(Math.abs((cpu.memAvailableBytes ?? 0) - Number(mem?.[2]))).toBeLessThan(256 * 2 ** 20);
    expect(cpu.totalBytes).toBeLessThanOrEqual(cpu.memTotalBytes ?? 0);
    const logical = (readFileSync('/proc/cpuinfo', 'utf8').match(/^processor\s*:/gm) ?? []).length;
    expect(cpu.logicalCores).toBe(logical);
    const nproc = Number(execFileSync('nproc', ['--all'], { encoding: 'utf8' }).trim());
    expect(cpu.logicalCores).toBe(nproc);
  });
});

describe('cpuArch', () => {
  it('names the tier the native kernels pick: scalar, avx2, avx512 (F/BW/DQ/VL), amx (tiles on top)', () => {
    const avx2 = ['sse4_2', 'avx', 'avx2', 'fma', 'f16c'];
    const avx512 = [...avx2, 'avx512f', 'avx512bw', 'avx512dq', 'avx512vl'];
    expect(cpuArch(['sse4_2', 'avx'])).toBe('cpu-scalar');
    expect(cpuArch(['avx2', 'fma'])).toBe('cpu-scalar'); // no F16C
    expect(cpuArch(avx2)).toBe('cpu-avx2');
    expect(cpuArch([...avx2, 'avx512f', 'avx512bw'])).toBe('cpu-avx2'); // no DQ/VL
    expect(cpuArch(avx512)).toBe('cpu-avx512');
    expect(cpuArch([...avx512, 'amx_tile'])).toBe('cpu-avx512'); // tiles without the int8 ops
    expect(cpuArch([...avx512, 'amx_tile', 'amx_int8'])).toBe('cpu-amx');
  });
});

describe('parseProcTable', () => {
  it('converts kB to bytes and keeps unitless counters as they are', () => {
    const m = parseProcTable('MemTotal:       16 kB\nHugePages_Total:       3\nbad line\nX: 1 MB\n');
    expect(m.get('MemTotal')).toBe(16384);
    expect(m.get('HugePages_Total')).toBe(3);
    expect(m.has('X')).toBe(false);
  });
});
