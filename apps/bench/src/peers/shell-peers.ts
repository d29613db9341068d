/**
 * Raw read bandwidth through the system's own tools. Each run spawns the tool, so a sample includes
 * process start (about a millisecond); suites should read files big enough for that to be noise.
 */
import { spawn, spawnSync } from 'node:child_process';
import { open } from 'node:fs/promises';
import { BenchError } from '../error-codes.js';
import type { Contender } from '../suite.js';

/** Path of an executable on PATH, or undefined. */
export function which(command: string): string | undefined {
  const r = spawnSync('sh', ['-c', `command -v ${command}`], { encoding: 'utf8' });
  const path = r.stdout.trim();
  return r.status === 0 && path !== '' ? path : undefined;
}

function timedSpawn(command: string, args: readonly string[]): Promise<number> {
  return new Promise((resolve, reject) => {
    const t0 = process.hrtime.bigint();
    const child = spawn(command, [...args], { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => {
      const s = Number(process.hrtime.bigint() - t0) / 1e9;
      if (code === 0) resolve(s);
      else reject(new BenchError('BENCH_PEER_FAILED', `${command} exited with ${String(code)}`, { value: args, where: command, hint: stderr.trim() }));
    });
  });
}

async function repeat(runs: number, once: () => Promise<number>): Promise<number> {
  let total = 0;
  for (let i = 0; i < runs; i++) total += await once();
  return total;
}

/** `cat file` with stdout to /dev/null. */
export function catContender(file: string): Contender {
  const cat = which('cat');
  if (!cat) return { missing: 'cat not on PATH' };
  // Through sh so stdout is /dev/null itself; piping it into node would measure the pipe instead.
  return { time: (runs) => repeat(runs, () => timedSpawn('sh', ['-c', 'exec "$0" "$1" > /dev/null', cat, file])) };
}

/** `dd if=file of=/dev/null bs=blockSize`. */
export function ddContender(file: string, blockSize = '16M'): Contender {
  const dd = which('dd');
  if (!dd) return { missing: 'dd not on PATH' };
  return { time: (runs) => repeat(runs, () => timedSpawn(dd, [`if=${file}`, 'of=/dev/null', `bs=${blockSize}`, 'status=none'])) };
}

/**
 * Evicts `file` from the page cache (GNU dd `iflag=nocache count=0` = posix_fadvise DONTNEED over the
 * whole file, after writing back its dirty pages), so the next read comes from the disk: cold-read benchmarks without root. Files on
 * tmpfs cannot be evicted; callers that need cold reads should keep test files on a real disk.
 */
export async function dropFileCache(file: string): Promise<void> {
  const dd = which('dd');
  if (!dd) throw new BenchError('BENCH_CACHE_DROP_FAILED', 'dd is not on PATH', { value: file, where: 'dropFileCache', hint: 'install coreutils' });
  try {
    // Dirty pages cannot be dropped: write them back first (fdatasync works on a read-only fd).
    const fh = await open(file, 'r');
    try {
      await fh.datasync();
    } finally {
      await fh.close();
    }
    await timedSpawn(dd, [`if=${file}`, 'iflag=nocache', 'count=0', 'status=none']);
  } catch (e) {
    throw new BenchError('BENCH_CACHE_DROP_FAILED', `could not drop ${file} from the page cache`, { value: file, where: 'dropFileCache', cause: e });
  }
}
