// Shared by the fault tests: the built CLI in a child process with a hard time limit, leftovers
// of ours in a directory, a pid that is surely dead, and tmpfs mounts where the machine allows them.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, readdirSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { openSafetensors } from '@ninodes/memory';
import { H3_DEFAULTS, writeSyntheticH3Checkpoint } from '@ninodes/models';

const HANG_MS = Number(process.env.NINODES_TEST_HANG_MS ?? 900_000); // the shared hang guard (vitest.shared.ts)

export const CLI = fileURLToPath(new URL('../../dist/cli.js', import.meta.url));

/** A 2-layer H3 small enough that a run takes about a second. */
export const MICRO = { ...H3_DEFAULTS, layers: 2, hidden: 256, heads: 4, headDim: 64, ffn: 512, tDim: 256, timeHidden: 256, ropeLen: 8 };

export async function microCheckpoint(path: string): Promise<string> {
  if (!existsSync(path)) await writeSyntheticH3Checkpoint(path, { config: MICRO, seed: 7 });
  return path;
}

export interface CliChild {
  readonly pid: number;
  stderr: string;
  stdout: string;
  /** Resolves when the child ends (or is killed at the time limit: `timedOut`). */
  readonly done: Promise<{ status: number | null; signal: NodeJS.Signals | null; timedOut: boolean }>;
  /** Resolves once stderr matches `re` (rejects if the child ends first). */
  waitFor(re: RegExp): Promise<void>;
  kill(signal: NodeJS.Signals): void;
}

export function startCli(args: readonly string[], options: { env?: NodeJS.ProcessEnv; timeoutMs?: number; shell?: string } = {}): CliChild {
  const env = { ...process.env, ...options.env };
  const child = options.shell
    ? spawn('sh', ['-c', options.shell, 'sh', process.execPath, CLI, ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] })
    : spawn(process.execPath, [CLI, ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  const waiters: Array<{ re: RegExp; resolve: () => void; reject: (e: Error) => void }> = [];
  const self: CliChild = {
    pid: child.pid!,
    stderr: '',
    stdout: '',
    done: new Promise((resolve) => {
      let timedOut = false;
      const timer = setTimeout(() => {
        timedOut = true;
        child.kill('SIGKILL');
      }, options.timeoutMs ?? HANG_MS);
      child.on('exit', (status, signal) => {
        clearTimeout(timer);
        for (const w of waiters.splice(0)) w.reject(new Error(`child ended (${signal ?? status}) before ${w.re}: ${self.stderr}`));
        resolve({ status, signal, timedOut });
      });
    }),
    waitFor(re) {
      if (re.test(self.stderr)) return Promise.resolve();
      return new Promise((resolve, reject) => waiters.push({ re, resolve, reject }));
    },
    kill(signal) {
      child.kill(signal);
    },
  };
  child.stdout!.on('data', (d) => {
    self.stdout += String(d);
  });
  child.stderr!.on('data', (d) => {
    self.stderr += String(d);
    for (const w of [...waiters]) {
      if (w.re.test(self.stderr)) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve();
      }
    }
  });
  return self;
}

export async function runCli(args: readonly string[], options: { env?: NodeJS.ProcessEnv; timeoutMs?: number; shell?: string } = {}) {
  const c = startCli(args, options);
  const end = await c.done;
  return { ...end, stdout: c.stdout, stderr: c.stderr };
}

/** Names in `dir` that ninodes must never leave behind: temporaries, staging, locks, partial files. */
export function leftovers(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir).filter((n) => /\.ninodes-|staging|partial|\.tmp$|\.lock$|takeover/.test(n));
}

/** A pid no process has now: a child that already exited. */
export function deadPid(): number {
  return Number(spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' }).stdout);
}

/** A run's --out is whole: exactly its three files, and the report's hash is the latent's. */
export function checkRunOutput(out: string): { latentSha256: string } {
  const names = readdirSync(out).sort();
  if (names.join() !== 'latent.safetensors,preview.png,report.json') throw new Error(`${out} holds ${names.join(', ')}`);
  const report = JSON.parse(readFileSync(join(out, 'report.json'), 'utf8')) as { output: { latentSha256: string } };
  const source = openSafetensors(join(out, 'latent.safetensors'));
  try {
    const got = createHash('sha256').update(source.tensor('latent').bytes()).digest('hex');
    if (got !== report.output.latentSha256) throw new Error(`${out}: report.json hash ${report.output.latentSha256} is not the latent's ${got}`);
    return { latentSha256: got };
  } finally {
    source.close();
  }
}

/** Digest of every file in `dir` (name and bytes), to prove an output was left untouched. */
export function dirDigest(dir: string): string {
  const h = createHash('sha256');
  for (const n of readdirSync(dir).sort()) h.update(n).update(readFileSync(join(dir, n)));
  return h.digest('hex');
}

/** Mounts a tmpfs at `dir` (root only); false, with the reason in `why`, where the machine does not allow it. */
export function mountTmpfs(dir: string, options: string): { ok: boolean; why: string } {
  mkdirSync(dir, { recursive: true });
  if (process.getuid?.() !== 0) return { ok: false, why: 'mounting a tmpfs needs root' };
  const r = spawnSync('mount', ['-t', 'tmpfs', '-o', options, 'tmpfs', dir], { encoding: 'utf8' });
  return r.status === 0 ? { ok: true, why: '' } : { ok: false, why: `mount -t tmpfs failed: ${(r.stderr || r.error?.message || '').trim()}` };
}

export function unmount(dir: string): void {
  spawnSync('umount', ['-l', dir]);
}

/** Whether `chattr +i` works here (root on ext4, xfs, btrfs; not tmpfs or overlay on every kernel). */
export function canChattr(probe: string): boolean {
  if (process.getuid?.() !== 0) return false;
  const r = spawnSync('chattr', ['+i', probe]);
  if (r.status !== 0) return false;
  spawnSync('chattr', ['-i', probe]);
  return true;
}
