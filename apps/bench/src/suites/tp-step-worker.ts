/**
 * The `tp` suite's step worker: the source of a fresh Node process (resolving @ninodes/* from
 * apps/bench) that opens one H3 model, as one rank or as a tensor-parallel rank, on its own thread
 * count, and runs forwards on request. Thread counts are per process (the addon's pool), so every
 * side of the comparison is such a process and the bench only sends it requests.
 *
 * Protocol, one JSON object per line: the worker prints {ready} after loading and one untimed
 * forward (the first materializes the weights); then {run: n} -> {seconds, cpuSeconds} (n forwards,
 * timed inside, with the process's CPU time over them), {stats} -> {commSeconds, collectives, forwardSeconds} (since ready), {quit} -> exits.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { NinodesError } from '@ninodes/kernels';
import { BenchError } from '../error-codes.js';
import { benchRoot } from '../package-root.js';

export interface WorkerConfig {
  path: string;
  compute: 'f32' | 'bf16' | 'int8_convrot';
  threads: number;
  latent: { frames: number; height: number; width: number };
  sigma: number;
  seed: number;
  /** Absent: one rank, the whole model. */
  tp?: { rank: number; size: number; storeDir: string; prefix: string; timeoutMs: number };
}

// The rank is composed as `ninodes run` composes it (apps/runner/src/tp-rank.ts; bench cannot import
// the runner): the plan from the layout, the provider reading only this rank's slices, fp32 islands
// as stored, tp's parallel ops, the model built from this rank's heads and MLP slice, sequence
// parallel (each rank holds its own token rows between the blocks' linears).
const SOURCE = `
import { createInterface } from 'node:readline';
import { createCommunicator, setThreads } from '@ninodes/kernels';
import { gaussianNoise, islandAwareProvider, layoutOf, openH3Model } from '@ninodes/models';
import { attentionPrecisionFor, createLinearProvider, openCheckpoint } from '@ninodes/quant';
import { parallelLinearProvider, sequenceSplit, shardPlan } from '@ninodes/tp';
const cfg = JSON.parse(process.env.NINODES_BENCH_TP_WORKER);
setThreads(cfg.threads);
let comm;
let weights;
let opened;
if (cfg.tp === undefined) {
  opened = openH3Model(cfg.path, { compute: cfg.compute, capture: false });
} else {
  comm = await createCommunicator({ rank: cfg.tp.rank, size: cfg.tp.size, store: { kind: 'file', path: cfg.tp.storeDir }, prefix: cfg.tp.prefix, timeoutMs: cfg.tp.timeoutMs });
  weights = openCheckpoint(cfg.path);
  const layout = layoutOf(weights);
  const plan = shardPlan(layout, cfg.tp.size, { compute: cfg.compute, sequence: true });
  const main = createLinearProvider(weights, { compute: cfg.compute });
  const asStored = createLinearProvider(weights, { compute: 'auto', detection: main.detection });
  const islands = new Set(layout.groups.flatMap((g) => g.linears.filter((l) => l.fp32Island).map((l) => l.name)));
  const provider = parallelLinearProvider({ provider: islandAwareProvider(main, asStored, islands), plan, comm, sequence: true });
  // A given provider tells openH3Model nothing of the compute mode: attention as the one-rank run picks it.
  opened = openH3Model(cfg.path, { provider, shard: { rank: cfg.tp.rank, size: cfg.tp.size }, sequence: sequenceSplit(comm), config: layout.config, prefix: layout.prefix, capture: false, attentionPrecision: attentionPrecisionFor(cfg.compute) });
}
const model = opened.model;
const latent = gaussianNoise([1, model.config.latentChannels, cfg.latent.frames, cfg.latent.height, cfg.latent.width], cfg.seed);
const forward = async () => (await model.forward(latent, cfg.sigma)).dispose();
await forward();
const comm0 = comm === undefined ? { seconds: 0, collectives: 0 } : comm.stats();
let forwardSeconds = 0;
const say = (o) => process.stdout.write(JSON.stringify(o) + '\\n');
say({ ready: true });
for await (const line of createInterface({ input: process.stdin })) {
  const req = JSON.parse(line);
  if (req.run !== undefined) {
    const c0 = process.cpuUsage();
    const t0 = performance.now();
    for (let i = 0; i < req.run; i++) await forward();
    const seconds = (performance.now() - t0) / 1000;
    const cpu = process.cpuUsage(c0);
    forwardSeconds += seconds;
    say({ seconds, cpuSeconds: (cpu.user + cpu.system) / 1e6 });
  } else if (req.stats !== undefined) {
    const s = comm === undefined ? comm0 : comm.stats();
    say({ commSeconds: s.seconds - comm0.seconds, collectives: s.collectives - comm0.collectives, forwardSeconds });
  } else break;
}
latent.dispose();
opened.close();
weights?.close();
await comm?.close();
`;

export interface StepWorker {
  readonly pid: number;
  /** n forwards; resolves to their seconds, timed in the worker. */
  run(n: number): Promise<number>;
  stats(): Promise<{ commSeconds: number; collectives: number; forwardSeconds: number }>;
  /** The worker's peak resident set so far (VmHWM, read by this process from /proc). */
  peakResidentBytes(): number;
  /**
   * CPU seconds (user + system, every thread of the worker) per forward: the worker's own measure
   * around its timed forwards, so nothing it does between runs counts. A mean over every run (the
   * bench's calibration runs too), where step times are reported as medians.
   */
  cpuSecondsPerForward(): number;
  close(): Promise<void>;
}

/** Starts a worker and resolves once it has loaded and run its first forward. */
export async function startStepWorker(cfg: WorkerConfig, readyTimeoutMs = 600_000, cpus?: string): Promise<StepWorker> {
  const where = cfg.tp === undefined ? `one-rank worker (${cfg.threads} threads)` : `rank ${cfg.tp.rank} of ${cfg.tp.size}`;
  const { worker } = await startLineWorker(
    { command: process.execPath, args: ['--input-type=module', '--eval', SOURCE], env: { NINODES_BENCH_TP_WORKER: JSON.stringify(cfg), OMP_NUM_THREADS: String(cfg.threads) }, where, ...(cpus === undefined ? {} : { cpus }) },
    readyTimeoutMs,
  );
  return worker;
}

export interface LineWorkerSpec {
  command: string;
  args: string[];
  /** Added to this process's environment (OMP_WAIT_POLICY defaults to passive). */
  env: Record<string, string>;
  /** Names the worker in errors. */
  where: string;
  /** Pin the process to these CPUs ("0" or "0,1", through taskset, which execs the command: same pid). */
  cpus?: string;
}


/**
 * A child process speaking one JSON object per line: its first line (the ready line, returned
 * with the worker) comes after it has loaded; then {run: n} -> {seconds, cpuSeconds}, {stats} -> {...},
 * {quit} -> exit. The step workers here and the PyTorch + Gloo ranks (tools/torch-h3/h3_tp_gloo.py)
 * both speak it.
 */
export function startLineWorker(spec: LineWorkerSpec, readyTimeoutMs: number): Promise<{ worker: StepWorker; ready: Record<string, unknown> }> {
  const [command, args] = spec.cpus === undefined ? [spec.command, spec.args] : ['taskset', ['-c', spec.cpus, spec.command, ...spec.args]];
  const child: ChildProcess = spawn(command, args, {
    cwd: benchRoot(),
    env: { ...process.env, OMP_WAIT_POLICY: 'passive', ...spec.env },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  const where = spec.where;
  let stderr = '';
  let buffered = '';
  let forwards = 0;
  let cpuSeconds = 0;
  const waiting: Array<{ resolve: (o: Record<string, unknown>) => void; reject: (e: Error) => void }> = [];
  const failed = (why: string): NinodesError =>
    new BenchError('BENCH_CHILD_FAILED', `tp step worker, ${where}: ${why}: ${stderr.slice(-2000)}`, { value: child.pid, where: 'startLineWorker', hint: 'run the same split with `ninodes run --tp 2` to see the error' });
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  child.stdout!.on('data', (d: Buffer) => {
    buffered += d.toString();
    let nl: number;
    while ((nl = buffered.indexOf('\n')) >= 0) {
      const line = buffered.slice(0, nl);
      buffered = buffered.slice(nl + 1);
      waiting.shift()?.resolve(JSON.parse(line) as Record<string, unknown>);
    }
  });
  child.stdin!.on('error', () => undefined);
  const closed = new Promise<void>((resolve) =>
    child.on('close', (code, signal) => {
      for (const w of waiting.splice(0)) w.reject(failed(`exited (${signal ?? code})`));
      resolve();
    }),
  );
  const reply = (request: object | undefined, timeoutMs: number): Promise<Record<string, unknown>> =>
    new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        child.kill('SIGKILL');
        reject(failed(`no reply within ${timeoutMs} ms`));
      }, timeoutMs);
      waiting.push({
        resolve: (o) => (clearTimeout(timer), resolve(o)),
        reject: (e) => (clearTimeout(timer), reject(e)),
      });
      if (request !== undefined) child.stdin!.write(`${JSON.stringify(request)}\n`);
    });
  const worker: StepWorker = {
    pid: child.pid ?? -1,
    run: async (n) => {
      const timed = await reply({ run: n }, readyTimeoutMs);
      forwards += n;
      cpuSeconds += timed.cpuSeconds as number;
      return timed.seconds as number;
    },
    stats: async () => (await reply({ stats: true }, 60_000)) as { commSeconds: number; collectives: number; forwardSeconds: number },
    peakResidentBytes: () => Number(/^VmHWM:\s*(\d+)\s*kB/m.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'))?.[1]) * 1024,
    cpuSecondsPerForward: () => (forwards === 0 ? 0 : cpuSeconds / forwards),
    close: async () => {
      if (child.exitCode === null && child.signalCode === null) {
        child.stdin!.end(`${JSON.stringify({ quit: true })}\n`);
        const killer = setTimeout(() => child.kill('SIGKILL'), 30_000);
        await closed;
        clearTimeout(killer);
      }
    },
  };
  return reply(undefined, readyTimeoutMs).then(
    (ready) => ({ worker, ready }),
    async (e: unknown) => {
      child.kill('SIGKILL');
      await closed;
      throw e;
    },
  );
}
