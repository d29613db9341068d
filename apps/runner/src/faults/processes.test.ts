// Faults that need real processes: signals at random points, concurrent writers, a killed writer,
// a FIFO where a file should be, a link planted at a temporary name. Every child has a time limit;
// a child that reaches it counts as a hang and fails the test.
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { HOST_TAG } from '@ninodes/kernels';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkRunOutput, deadPid, leftovers, microCheckpoint, runCli, startCli } from './harness.js';

const dir = mkdtempSync(join(tmpdir(), 'ninodes-faults-'));
const ckpt = join(dir, 'micro.safetensors');
const small = ['--frames', '1', '--height', '8', '--width', '8', '--threads', '1'];

/** A reproducible sequence of delays (xorshift32), so a failure can be replayed. */
function delays(seed: number, n: number, loMs: number, hiMs: number): number[] {
  let x = seed >>> 0 || 1;
  return Array.from({ length: n }, () => {
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    return loMs + (x % (hiMs - loMs));
  });
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

beforeAll(async () => {
  await microCheckpoint(ckpt);
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('a FIFO where a file belongs is refused at once, never read', () => {
  it('inspect, run --model, run --latent and quantize end with NOT_A_REGULAR_FILE', async () => {
    const fifo = join(dir, 'pipe.safetensors');
    expect(spawnSync('mkfifo', [fifo]).status).toBe(0);
    for (const args of [
      ['inspect', fifo],
      ['run', '--model', fifo, ...small, '--out', join(dir, 'fifo-out')],
      ['run', '--model', ckpt, '--latent', fifo, ...small, '--out', join(dir, 'fifo-out')],
      ['quantize', fifo, join(dir, 'fifo-q.safetensors'), '--format', 'f8_e4m3fn'],
    ]) {
      const r = await runCli(args, { timeoutMs: 120_000 });
      expect(r.timedOut, `${args.join(' ')} hung on the FIFO`).toBe(false);
      expect(r.stderr).toContain('NOT_A_REGULAR_FILE');
      expect(r.status).toBe(1);
    }
    expect(existsSync(join(dir, 'fifo-out'))).toBe(false);
  });
});

describe('a lock file ninodes did not write', () => {
  it('a FIFO, a link to /dev/zero, a dangling link or garbage at --out\'s lock: LOCK_INVALID naming it, at once, never "pid 0"', async () => {
    const lock = join(dir, '.G1.ninodes-lock');
    const plant: Array<() => void> = [
      () => expect(spawnSync('mkfifo', [lock]).status).toBe(0),
      () => symlinkSync('/dev/zero', lock),
      () => symlinkSync(join(dir, 'no-such-owner'), lock),
      () => writeFileSync(lock, 'garbage\n'),
    ];
    for (const make of plant) {
      make();
      const r = await runCli(['run', '--model', ckpt, ...small, '--steps', '1', '--out', join(dir, 'G1')], { timeoutMs: 20_000 });
      expect(r.timedOut, `hung on ${r.stderr}`).toBe(false);
      expect(r.stderr).toContain('error LOCK_INVALID:');
      expect(r.stderr).toContain(lock);
      expect(r.stderr).not.toContain('pid 0');
      expect(r.status).toBe(1);
      rmSync(lock);
    }
    expect(existsSync(join(dir, 'G1'))).toBe(false);
  });
});

describe('a checkpoint rewritten in place during a resident run', () => {
  it('with its size and mtime put back (dd conv=notrunc, touch -r): FILE_MODIFIED and no output, never a latent of mixed weights', async () => {
    const victim = join(dir, 'inplace.safetensors');
    const stamp = join(dir, 'inplace.stamp');
    copyFileSync(ckpt, victim);
    expect(spawnSync('touch', ['-r', victim, stamp]).status).toBe(0);
    const out = join(dir, 'inplace-out');
    const child = startCli(['run', '--model', victim, ...small, '--steps', '300', '--out', out], { timeoutMs: 120_000 });
    await child.waitFor(/steps: 2\//);
    // Past the header, into the weights; then the old times back on the file.
    expect(spawnSync('dd', ['if=/dev/urandom', `of=${victim}`, 'bs=4096', 'seek=8', 'count=4', 'conv=notrunc', 'status=none']).status).toBe(0);
    expect(spawnSync('touch', ['-r', stamp, victim]).status).toBe(0);
    const end = await child.done;
    expect(end.timedOut).toBe(false);
    expect(child.stderr).toContain('error FILE_MODIFIED:');
    expect(end.status).toBe(1);
    expect(existsSync(out)).toBe(false);
  });
});

describe('interrupted at random points, nothing is left behind', () => {
  it('SIGINT and SIGTERM during preset generation, quantize and run', async () => {
    const cases: Array<{ name: string; args: (i: number) => string[]; cache?: boolean }> = [
      // Enough steps that a run outlasts the latest interrupt point even on an idle machine.
      { name: 'preset', args: (i) => ['run', '--preset', 'h3-tiny', ...small, '--steps', '40', '--out', join(dir, 'int', `preset-${i}`)], cache: true },
      { name: 'quantize', args: (i) => ['quantize', ckpt, join(dir, 'int', `q-${i}.safetensors`), '--format', 'int8_convrot'] },
      { name: 'run', args: (i) => ['run', '--model', ckpt, '--frames', '2', '--height', '16', '--width', '16', '--steps', '80', '--threads', '1', '--out', join(dir, 'int', `run-${i}`)] },
    ];
    mkdirSync(join(dir, 'int'), { recursive: true });
    const points = delays(20261201, 9, 150, 2500);
    let i = 0;
    let interrupted = 0;
    for (const c of cases) {
      for (let k = 0; k < 3; k++, i++) {
        const cache = join(dir, `cache-${i}`);
        const signal = k % 2 === 0 ? 'SIGINT' : 'SIGTERM';
        const child = startCli(c.args(i), { env: { NINODES_CACHE: cache } });
        await sleep(points[i]!);
        child.kill(signal);
        const end = await child.done;
        expect(end.timedOut, `${c.name} #${i} hung`).toBe(false);
        // Either it finished before the signal (0) or it died of that signal; never another failure.
        if (end.status !== 0) {
          expect(end.signal, `${c.name} #${i}: ${child.stderr}`).toBe(signal);
          interrupted++;
        }
        expect(leftovers(join(dir, 'int')), `${c.name} #${i} after ${points[i]} ms`).toEqual([]);
        expect(leftovers(cache), `${c.name} #${i} cache after ${points[i]} ms`).toEqual([]);
        // An output that exists is whole.
        const out = join(dir, 'int', `run-${i}`);
        if (c.name === 'run' && existsSync(out)) checkRunOutput(out);
      }
    }
    // The points are early enough that most runs really were interrupted.
    expect(interrupted).toBeGreaterThanOrEqual(5);
  });

  it('a writer killed outright (SIGKILL) leaves a lock and staging; the next run takes over and cleans up', async () => {
    const out = join(dir, 'killed');
    const child = startCli(['run', '--model', ckpt, '--frames', '2', '--height', '16', '--width', '16', '--steps', '20', '--threads', '1', '--out', out]);
    await child.waitFor(/steps: 1\//);
    child.kill('SIGKILL');
    await child.done;
    expect(leftovers(dir).length).toBeGreaterThan(0);
    // A stale temporary of another dead process beside --out goes too.
    const stale = join(dir, `.other.safetensors.ninodes-${HOST_TAG}-${deadPid()}-0123456789abcdef.tmp`);
    writeFileSync(stale, Buffer.alloc(1024));
    const next = await runCli(['run', '--model', ckpt, ...small, '--steps', '1', '--out', out]);
    expect(next.stderr).not.toContain('error');
    expect(next.status).toBe(0);
    checkRunOutput(out);
    expect(leftovers(dir)).toEqual([]);
    expect(existsSync(stale)).toBe(false);
  });
});

describe('concurrent use', () => {
  it('a second run into a busy --out gets OUT_DIR_BUSY; the first commits a whole output', async () => {
    const out = join(dir, 'busy');
    // Long enough that the first is still running while the second starts (a CLI start takes seconds under load).
    const first = startCli(['run', '--model', ckpt, '--frames', '2', '--height', '16', '--width', '16', '--steps', '120', '--threads', '1', '--out', out]);
    await first.waitFor(/steps: 1\//);
    const second = await runCli(['run', '--model', ckpt, ...small, '--steps', '1', '--out', out]);
    expect(second.stderr).toContain('OUT_DIR_BUSY');
    expect(second.status).toBe(1);
    const end = await first.done;
    expect(first.stderr).not.toContain('error');
    expect(end.status).toBe(0);
    checkRunOutput(out);
    expect(leftovers(dir)).toEqual([]);
  });

  it('two runs started together into one --out: one writes, the other is refused; the output is one run', async () => {
    const out = join(dir, 'together');
    const runs = [1, 2].map((seed) => startCli(['run', '--model', ckpt, '--frames', '2', '--height', '16', '--width', '16', '--steps', '4', '--threads', '1', '--seed', String(seed), '--out', out]));
    const ends = await Promise.all(runs.map((r) => r.done));
    const statuses = ends.map((e) => e.status).sort();
    // Exactly one writes; the other is refused while it runs (busy) or after (exists, no --force).
    expect(statuses).toEqual([0, 1]);
    const refused = runs[ends.findIndex((e) => e.status === 1)]!;
    expect(refused.stderr).toMatch(/OUT_DIR_BUSY|OUTPUT_EXISTS/);
    checkRunOutput(out);
    expect(leftovers(dir)).toEqual([]);
  });

  it('two processes on a fresh preset cache: both succeed, the preset is generated once', async () => {
    const cache = join(dir, 'cache-race');
    const runs = ['a', 'b'].map((n) => startCli(['run', '--preset', 'h3-tiny', ...small, '--steps', '1', '--out', join(dir, `race-${n}`)], { env: { NINODES_CACHE: cache } }));
    const ends = await Promise.all(runs.map((r) => r.done));
    for (const [k, e] of ends.entries()) {
      expect(runs[k]!.stderr).not.toContain('error');
      expect(e.status).toBe(0);
    }
    const written = runs.filter((r) => /generating h3-tiny.*written/.test(r.stderr)).length;
    expect(written).toBe(1);
    expect(readdirSync(cache).sort()).toEqual(['h3-tiny-seed145.safetensors', 'h3-tiny-seed145.safetensors.sha256']);
  });
});

describe('temporary names', () => {
  it('links planted at the old predictable names (<file>.partial-<pid>) are not followed', async () => {
    const cache = join(dir, 'cache-links');
    mkdirSync(cache, { recursive: true });
    const victim = join(dir, 'victim.txt');
    writeFileSync(victim, 'precious');
    const base = join(cache, 'h3-tiny-seed145.safetensors');
    // `exec` keeps the shell's pid, so $$ is the pid the CLI will have.
    const shell = `ln -s "${victim}" "${base}.sha256.partial-$$"; ln -s "${victim}" "${base}.partial-$$"; exec "$@"`;
    const r = await runCli(['run', '--preset', 'h3-tiny', ...small, '--steps', '1', '--out', join(dir, 'links-out')], { env: { NINODES_CACHE: cache }, shell });
    expect(readFileSync(victim, 'utf8')).toBe('precious');
    expect(r.stderr).not.toContain('error');
    expect(r.status).toBe(0);
  });
});
