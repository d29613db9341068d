/**
 * Whole-process peak memory of a separate child, measured by the OS: GNU time's "Maximum resident
 * set size" (wait4 rusage, exact) when /usr/bin/time exists, else the child's VmHWM from
 * /proc/<pid>/status sampled until it exits (a high-water mark, so sampling can only miss the last
 * few milliseconds of growth). Never measured from inside the process being measured.
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { readFile, rm } from 'node:fs/promises';
import { parseProcTable } from '@ninodes/device';
import { BenchError } from './error-codes.js';
import { benchRoot } from './package-root.js';

export type PeakMethod = 'gnu-time' | 'proc-vmhwm';

export interface PeakMemoryResult {
  peakBytes: number;
  method: PeakMethod;
  wallSeconds: number;
  stdout: string;
}

export interface PeakMemoryOptions {
  /** Force a method; default: gnu-time when /usr/bin/time exists, else proc-vmhwm. */
  method?: PeakMethod;
  env?: NodeJS.ProcessEnv;
  cwd?: string;
}

export type PeakMemory = (command: string, args: readonly string[], options?: PeakMemoryOptions) => Promise<PeakMemoryResult>;

/**
 * Peak memory of a fresh Node process running `source` as an ES module. It resolves imports from
 * apps/bench, so it can `import { ... } from '@ninodes/models'` and do one model step: the
 * whole-process peak of exactly that work, with nothing of the bench process in it.
 */
export function measureScriptPeakMemory(source: string, options: Omit<PeakMemoryOptions, 'cwd'> = {}): Promise<PeakMemoryResult> {
  return measurePeakMemory(process.execPath, ['--input-type=module', '--eval', source], { ...options, cwd: benchRoot() });
}

const GNU_TIME = '/usr/bin/time';

export function gnuTimeAvailable(): boolean {
  return existsSync(GNU_TIME);
}

/** Parses `Maximum resident set size (kbytes): N` from `/usr/bin/time -v` output, in bytes. */
export function parseGnuTimeMaxRss(text: string): number | undefined {
  const m = /Maximum resident set size \(kbytes\):\s*(\d+)/.exec(text);
  return m ? Number(m[1]) * 1024 : undefined;
}

/** `VmHWM` (the child's high-water mark) from /proc/<pid>/status, in bytes, by device's procfs parser. */
export function parseVmHwm(text: string): number | undefined {
  return parseProcTable(text).get('VmHWM');
}

export const measurePeakMemory: PeakMemory = async (command, args, options = {}) => {
  const method: PeakMethod = options.method ?? (gnuTimeAvailable() ? 'gnu-time' : 'proc-vmhwm');
  if (method === 'gnu-time' && !gnuTimeAvailable()) {
    throw new BenchError('BENCH_PEAK_METHOD_UNAVAILABLE', 'GNU time is not installed', {
      value: GNU_TIME,
      where: 'measurePeakMemory',
      hint: 'apt-get install time (scripts/setup.sh lists it), or use method "proc-vmhwm"',
    });
  }
  const where = `${command} ${args.join(' ')}`;
  const t0 = process.hrtime.bigint();
  // GNU time writes its report to a file (-o) so the child's own stderr cannot be confused with it.
  const reportFile = method === 'gnu-time' ? `${tmpdir()}/ninodes-bench-time-${process.pid}-${Math.random().toString(36).slice(2)}.txt` : '';
  const child =
    method === 'gnu-time'
      ? spawn(GNU_TIME, ['-v', '-o', reportFile, command, ...args], { env: options.env ?? process.env, cwd: options.cwd, stdio: ['ignore', 'pipe', 'pipe'] })
      : spawn(command, [...args], { env: options.env ?? process.env, cwd: options.cwd, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  let hwm = 0;
  let sampling = method === 'proc-vmhwm';
  const sampler = (async () => {
    while (sampling && child.pid !== undefined) {
      try {
        const v = parseVmHwm(await readFile(`/proc/${child.pid}/status`, 'utf8'));
        if (v !== undefined && v > hwm) hwm = v;
      } catch {
        // The process is gone (or a zombie without a status): the last sample stands.
      }
      await new Promise((r) => setTimeout(r, 5));
    }
  })();
  const code = await new Promise<number | null>((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (c) => resolve(c));
  }).catch((error: unknown) => {
    sampling = false;
    throw new BenchError('BENCH_CHILD_FAILED', `could not start ${command}`, { value: command, where, cause: error });
  });
  sampling = false;
  await sampler;
  const wallSeconds = Number(process.hrtime.bigint() - t0) / 1e9;
  let peakBytes: number | undefined = hwm;
  if (method === 'gnu-time') {
    const report = await readFile(reportFile, 'utf8').catch(() => '');
    await rm(reportFile, { force: true });
    peakBytes = parseGnuTimeMaxRss(report);
  }
  if (code !== 0) {
    throw new BenchError('BENCH_CHILD_FAILED', `child exited with code ${String(code)}`, {
      value: code,
      where,
      hint: stderr.trim().split('\n').slice(-5).join('\n'),
    });
  }
  if (peakBytes === undefined || peakBytes <= 0) {
    throw new BenchError('BENCH_PEAK_UNMEASURED', 'the OS reported no peak memory for the child', { where, value: method });
  }
  return { peakBytes, method, wallSeconds, stdout };
};
