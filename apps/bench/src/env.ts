/**
 * The machine and software a result was measured on. Every result file carries it, because a number
 * without its CPU, thread count and library versions cannot be compared with anything.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import { dirname, join } from 'node:path';
import { buildInfo } from '@ninodes/kernels';
import { gnuTimeAvailable } from './peak-memory.js';
import type { PythonPeer } from './peers/python-peer.js';
import { which } from './peers/shell-peers.js';
import type { BenchEnv } from './results-schema.js';

const THREAD_VARS = ['OMP_NUM_THREADS', 'MKL_NUM_THREADS', 'OPENBLAS_NUM_THREADS', 'DNNL_MAX_CPU_ISA', 'UV_THREADPOOL_SIZE', 'NINODES_THREADS'];

function cpuFlags(): string[] {
  try {
    const text = readFileSync('/proc/cpuinfo', 'utf8');
    const m = /^flags\s*:\s*(.*)$/m.exec(text);
    return m ? (m[1] as string).trim().split(/\s+/) : [];
  } catch {
    return [];
  }
}

function gitCommit(): { commit: string | null; dirty: boolean | null } {
  const head = spawnSync('git', ['rev-parse', 'HEAD'], { encoding: 'utf8' });
  if (head.status !== 0) return { commit: null, dirty: null };
  const status = spawnSync('git', ['status', '--porcelain', '--untracked-files=no'], { encoding: 'utf8' });
  return { commit: head.stdout.trim(), dirty: status.status === 0 ? status.stdout.trim() !== '' : null };
}

/** Version of the installed @ninodes/kernels (which carries the addon), from its package.json on disk. */
function kernelsVersion(): string | null {
  try {
    let dir = dirname(createRequire(import.meta.url).resolve('@ninodes/kernels'));
    for (;;) {
      const file = join(dir, 'package.json');
      if (existsSync(file)) {
        const pkg = JSON.parse(readFileSync(file, 'utf8')) as { name?: string; version?: string };
        if (pkg.name === '@ninodes/kernels') return pkg.version ?? null;
      }
      const up = dirname(dir);
      if (up === dir) return null;
      dir = up;
    }
  } catch {
    return null;
  }
}

export async function captureEnv(python: PythonPeer): Promise<BenchEnv> {
  const cpus = os.cpus();
  let addon: BenchEnv['addon'];
  try {
    const b = buildInfo();
    addon = { ok: true, kernelsVersion: kernelsVersion(), compiler: b.compiler, onednn: b.onednn, onednnCpuRuntime: b.onednnCpuRuntime, gloo: b.gloo, simd: b.simd, threads: b.threads, napiVersion: b.napiVersion, buildType: b.buildType, modules: b.modules };
  } catch (e) {
    addon = { ok: false, error: e instanceof Error ? e.message : String(e) };
  }
  const probe = await python.probe();
  const pyReason = probe.reason ?? 'python3 not available';
  const lib = (name: string) =>
    probe.python === null
      ? { available: false, reason: pyReason }
      : probe.libs[name]
        ? { available: true, version: probe.libs[name] as string }
        : { available: false, reason: `python module ${name} not importable` };
  const tool = (name: string) => {
    const path = which(name);
    return path ? { available: true, version: path } : { available: false, reason: `${name} not on PATH` };
  };
  const threadEnv: Record<string, string> = {};
  for (const v of THREAD_VARS) if (process.env[v] !== undefined) threadEnv[v] = process.env[v] as string;
  return {
    capturedAt: new Date().toISOString(),
    hostname: os.hostname(),
    platform: `${os.platform()} ${os.release()} ${os.arch()}`,
    cpu: {
      model: cpus[0]?.model ?? 'unknown',
      logicalCores: cpus.length,
      availableParallelism: os.availableParallelism(),
      flags: cpuFlags(),
    },
    memory: { totalBytes: os.totalmem(), freeBytesAtStart: os.freemem() },
    threads: { env: threadEnv, addonThreads: addon.ok ? addon.threads : null, torchThreads: probe.torchThreads },
    versions: { node: process.version, v8: process.versions.v8, python: probe.python },
    addon,
    git: gitCommit(),
    peers: {
      torch: lib('torch'),
      safetensors: lib('safetensors'),
      numpy: lib('numpy'),
      cat: tool('cat'),
      dd: tool('dd'),
      memcpy: { available: true, version: 'Uint8Array.prototype.set' },
    },
    peakMemoryMethod: gnuTimeAvailable() ? 'gnu-time' : existsSync('/proc/self/status') ? 'proc-vmhwm' : null,
  };
}
