/**
 * Client of `peers/python_peer.py`: one long-lived Python process per bench run, so a peer's import
 * cost is paid once and each round's run is a single line round trip. The peer times its own runs
 * (perf_counter around the call), so the pipe latency is not in its samples.
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { BenchError } from '../error-codes.js';
import { z } from 'zod';
import { benchRoot } from '../package-root.js';
import type { Contender } from '../suite.js';

const ReplySchema = z.object({
  ok: z.boolean(),
  error: z.string().optional(),
  missing: z.string().optional(),
  seconds: z.number().optional(),
  libs: z.record(z.string(), z.string().nullable()).optional(),
  python: z.string().optional(),
  torchThreads: z.number().nullable().optional(),
});
type Reply = z.infer<typeof ReplySchema>;

export interface PythonProbe {
  /** null when python3 itself could not be started. */
  python: string | null;
  /** Library name -> version, or null when not importable. */
  libs: Record<string, string | null>;
  torchThreads: number | null;
  /** Why python is unusable, when it is. */
  reason?: string;
}

export class PythonPeer {
  private child: ChildProcessWithoutNullStreams | undefined;
  private pending: Array<{ resolve: (r: Reply) => void; reject: (e: Error) => void }> = [];
  private startError: Error | undefined;
  private nextId = 0;
  private stderr = '';
  private queue: Promise<unknown> = Promise.resolve();

  constructor(private readonly python = process.env.NINODES_BENCH_PYTHON ?? 'python3') {}

  private start(): ChildProcessWithoutNullStreams {
    if (this.child) return this.child;
    // The peer runs beside us on the same cores. With OpenMP's default active wait, torch's idle
    // threads keep spinning after each job and take a core from whichever side is timed next, so an
    // A/B round that follows torch is slowed by torch itself. Passive waiting (unless the user set a
    // policy) keeps the comparison about the ops; torch's own figures move little.
    const env = { ...process.env, OMP_WAIT_POLICY: process.env.OMP_WAIT_POLICY ?? 'passive' };
    const child = spawn(this.python, ['-u', join(benchRoot(), 'peers', 'python_peer.py')], { stdio: ['pipe', 'pipe', 'pipe'], env });
    child.on('error', (e) => {
      this.startError = e;
      for (const p of this.pending.splice(0)) p.reject(e);
    });
    child.on('exit', (code) => {
      const e = new Error(`python peer exited (${String(code)}): ${this.stderr.trim().slice(-500)}`);
      this.startError ??= e;
      for (const p of this.pending.splice(0)) p.reject(e);
    });
    child.stderr.on('data', (d: Buffer) => (this.stderr = (this.stderr + d.toString()).slice(-4000)));
    // A write to a peer that already died fails with EPIPE; the exit handler reports why it died.
    child.stdin.on('error', () => undefined);
    createInterface({ input: child.stdout }).on('line', (line) => {
      const p = this.pending.shift();
      if (!p) return;
      try {
        p.resolve(ReplySchema.parse(JSON.parse(line)));
      } catch (e) {
        p.reject(new Error(`python peer replied with a malformed line: ${line.slice(0, 200)} (${String(e)})`));
      }
    });
    this.child = child;
    return child;
  }

  /** Sends one request; requests are serialised so replies match in order. */
  request(msg: Record<string, unknown>): Promise<Reply> {
    const next = this.queue.then(
      () =>
        new Promise<Reply>((resolve, reject) => {
          if (this.startError) return reject(this.startError);
          const child = this.start();
          this.pending.push({ resolve, reject });
          child.stdin.write(JSON.stringify(msg) + '\n');
        }),
    );
    this.queue = next.catch(() => undefined);
    return next;
  }

  async probe(): Promise<PythonProbe> {
    try {
      const r = await this.request({ op: 'probe' });
      return { python: r.python ?? null, libs: r.libs ?? {}, torchThreads: r.torchThreads ?? null };
    } catch (e) {
      return { python: null, libs: {}, torchThreads: null, reason: e instanceof Error ? e.message : String(e) };
    }
  }

  /** A contender for one job kind; `{ missing }` when python or the library is absent. */
  async job(kind: string, params: Record<string, unknown>): Promise<Contender> {
    const id = `j${this.nextId++}`;
    let r: Reply;
    try {
      r = await this.request({ op: 'setup', id, kind, params });
    } catch (e) {
      // No python at all is a missing peer; a python that starts and then dies is a broken one.
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return { missing: `${this.python} not found` };
      throw new BenchError('BENCH_PEER_FAILED', `python peer failed: ${e instanceof Error ? e.message : String(e)}`, { value: kind, where: 'peers/python_peer.py', cause: e });
    }
    if (r.missing !== undefined) return { missing: r.missing };
    if (!r.ok) throw new BenchError('BENCH_PEER_FAILED', `python peer could not set up ${kind}: ${r.error ?? '?'}`, { value: params, where: kind });
    return {
      time: async (runs) => {
        const run = await this.request({ op: 'run', id, reps: runs });
        if (!run.ok || run.seconds === undefined) throw new BenchError('BENCH_PEER_FAILED', `python peer run of ${kind} failed: ${run.error ?? '?'}`, { value: params, where: kind });
        return run.seconds;
      },
      dispose: async () => {
        await this.request({ op: 'free', id }).catch(() => undefined);
      },
    };
  }

  async close(): Promise<void> {
    const child = this.child;
    if (!child || child.exitCode !== null) return;
    await new Promise<void>((resolve) => {
      child.once('exit', () => resolve());
      child.stdin.end();
    });
  }
}
