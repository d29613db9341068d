// Where a tensor-parallel rank's step goes: CPU seconds per step (user + system of every thread,
// process.cpuUsage) of each linear family (column, row, adaLN, the rest by name) with the wall time
// of its collectives taken out, the model's own op families (wall), collectives (Communicator.stats),
// garbage collection (perf_hooks) and each thread's CPU (/proc/self/task). A dev tool for short runs
// on a shared machine (CPU time says more than wall time there); the bench's `tp` suite is the
// measurement of record.
//
//   node apps/bench/scripts/tp-rank-profile.mjs <checkpoint> [--tp N] [--compute f32|bf16|int8_convrot]
//     [--threads T] [--steps S] [--size HxW] [--frames F] [--plain] [--pin]
//
// Without --tp (or --tp 1): one rank. With --tp N: N rank processes meeting in a temporary FileStore,
// one JSON line each, sequence parallel as `ninodes run --tp` runs them (--plain: every rank holds
// every row); --pin puts rank r on core r (taskset, as --tp-pin with one thread per rank).
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { PerformanceObserver, performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    tp: { type: 'string', default: '1' },
    compute: { type: 'string', default: 'f32' },
    threads: { type: 'string', default: '1' },
    steps: { type: 'string', default: '2' },
    size: { type: 'string', default: '32x32' },
    frames: { type: 'string', default: '1' },
    plain: { type: 'boolean', default: false },
    pin: { type: 'boolean', default: false },
  },
});
const [path] = positionals;
if (path === undefined) throw new Error('usage: tp-rank-profile.mjs <checkpoint> [--tp N] [--compute f32|bf16|int8_convrot] [--threads T] [--steps S] [--size HxW] [--frames F] [--plain] [--pin]');
const size = Number(values.tp);
const job = process.env.NINODES_TP_PROFILE_RANK;

if (size > 1 && job === undefined) {
  // The launcher: one child per rank, each printing its JSON line.
  const store = mkdtempSync(join(tmpdir(), 'ninodes-tp-profile-'));
  try {
    await Promise.all(
      Array.from({ length: size }, (_, rank) =>
        new Promise((resolve, reject) => {
          const argv = [process.execPath, fileURLToPath(import.meta.url), ...process.argv.slice(2)];
          const [command, ...args] = values.pin ? ['taskset', '-c', String(rank), ...argv] : argv;
          const child = spawn(command, args, {
            env: { ...process.env, OMP_NUM_THREADS: values.threads, NINODES_TP_PROFILE_RANK: JSON.stringify({ rank, store }) },
            stdio: ['ignore', 'inherit', 'inherit'],
          });
          child.on('exit', (code, signal) => (code === 0 ? resolve() : reject(new Error(`rank ${rank} exited with ${signal ?? code}`))));
        }),
      ),
    );
  } finally {
    rmSync(store, { recursive: true, force: true });
  }
} else {
  await profileRank(job === undefined ? { rank: 0, store: undefined } : JSON.parse(job));
}

async function profileRank({ rank, store }) {
  const { createCommunicator, setThreads } = await import('@ninodes/kernels');
  const { createOpProfiler, gaussianNoise, islandAwareProvider, layoutOf, openH3Model } = await import('@ninodes/models');
  const { createLinearProvider, openCheckpoint } = await import('@ninodes/quant');
  const { parallelLinearProvider, sequenceSplit, shardPlan } = await import('@ninodes/tp');
  const compute = values.compute;
  const steps = Number(values.steps);
  setThreads(Number(values.threads));
  const families = {};
  const add = (key, wall, cpu) => {
    const f = (families[key] ??= { wall: 0, cpu: 0, calls: 0 });
    f.wall += wall;
    f.cpu += cpu;
    f.calls += 1;
  };
  let comm;
  const familyOf = (name) => (/adaln/.test(name) ? 'adaln' : /qkv|fc1/.test(name) ? 'column' : /out_proj|fc2/.test(name) ? 'row' : `other:${name.replace(/blocks\.\d+\./, '')}`);
  // Times forward/forwardRows of an op; every other member passes through.
  const timedOp = (op) =>
    new Proxy(op, {
      get(target, prop) {
        const v = Reflect.get(target, prop);
        if ((prop === 'forward' || prop === 'forwardRows') && typeof v === 'function') {
          return async (...args) => {
            const c0 = process.cpuUsage();
            const w0 = performance.now();
            const s0 = comm?.stats().seconds ?? 0;
            const y = await v.apply(target, args);
            const cpu = process.cpuUsage(c0);
            const inComm = (comm?.stats().seconds ?? 0) - s0;
            add(familyOf(op.spec.name), (performance.now() - w0) / 1000 - inComm, (cpu.user + cpu.system) / 1e6);
            if (inComm > 0) add(`collectives in ${familyOf(op.spec.name)}`, inComm, 0);
            return y;
          };
        }
        return typeof v === 'function' ? v.bind(target) : v;
      },
    });
  const weights = openCheckpoint(path);
  const layout = layoutOf(weights);
  const main = createLinearProvider(weights, { compute });
  const asStored = createLinearProvider(weights, { compute: 'auto', detection: main.detection });
  const islands = new Set(layout.groups.flatMap((g) => g.linears.filter((l) => l.fp32Island).map((l) => l.name)));
  let base = islandAwareProvider(main, asStored, islands);
  let shard;
  let sequence;
  if (size > 1) {
    comm = await createCommunicator({ rank, size, store: { kind: 'file', path: store }, prefix: 'tp-profile', timeoutMs: 600_000 });
    base = parallelLinearProvider({ provider: base, plan: shardPlan(layout, size, { compute, sequence: !values.plain }), comm, sequence: !values.plain });
    shard = { rank, size };
    if (!values.plain) sequence = sequenceSplit(comm);
  }
  const provider = { linear: (spec) => timedOp(base.linear(spec)) };
  const opened = openH3Model(path, { provider, ...(shard ? { shard } : {}), ...(sequence ? { sequence } : {}), config: layout.config, prefix: layout.prefix, capture: false });
  const model = opened.model;
  const [h, w] = values.size.split('x').map(Number);
  const latent = gaussianNoise([1, model.config.latentChannels, Number(values.frames), h, w], 145);
  const forward = async () => (await model.forward(latent, 0.9)).dispose();
  await forward(); // materializes the weights
  const threadCpu = () =>
    Object.fromEntries(
      readdirSync('/proc/self/task').map((tid) => {
        const stat = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
        const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
        return [tid, (Number(f[11]) + Number(f[12])) / 100];
      }),
    );
  let gcSeconds = 0;
  let gcs = 0;
  new PerformanceObserver((list) => {
    for (const e of list.getEntries()) {
      gcSeconds += e.duration / 1000;
      gcs += 1;
    }
  }).observe({ entryTypes: ['gc'] });
  const ops = createOpProfiler();
  model.setProfiler(ops);
  for (const k of Object.keys(families)) delete families[k];
  const t0 = threadCpu();
  const c0 = process.cpuUsage();
  const w0 = performance.now();
  const s0 = comm?.stats() ?? { seconds: 0, bytes: 0, collectives: 0 };
  for (let i = 0; i < steps; i++) await forward();
  const wall = (performance.now() - w0) / 1000;
  const cpu = process.cpuUsage(c0);
  const t1 = threadCpu();
  const s1 = comm?.stats() ?? s0;
  const per = (x) => Number((x / steps).toFixed(4));
  console.log(
    JSON.stringify({
      rank,
      size,
      sequence: sequence !== undefined,
      compute,
      threads: Number(values.threads),
      wallPerStep: per(wall),
      cpuPerStep: per((cpu.user + cpu.system) / 1e6),
      gc: { secondsPerStep: per(gcSeconds), perStep: gcs / steps },
      collectives: { secondsPerStep: per(s1.seconds - s0.seconds), perStep: (s1.collectives - s0.collectives) / steps, mbPerStep: per((s1.bytes - s0.bytes) / 1e6) },
      linears: Object.fromEntries(Object.entries(families).sort().map(([k, v]) => [k, { wall: per(v.wall), cpu: per(v.cpu), calls: v.calls / steps }])),
      opFamiliesWall: Object.fromEntries(Object.entries(ops.seconds).map(([k, v]) => [k, per(v)])),
      threadCpuPerStep: Object.fromEntries(Object.entries(t1).map(([k, v]) => [k, per(v - (t0[k] ?? 0))]).filter(([, v]) => v > 0)),
    }),
  );
  latent.dispose();
  opened.close();
  weights.close();
  await comm?.close();
}
