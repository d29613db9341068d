/**
 * Suite `offload` (issue 14):
 * - `step`: one forward of a synthetic H3 preset (bf16 compute) with 0-100 % of its bytes placed on
 *   `disk` and streamed by the executor (bf16 weights run as stored: used from the mapping, read
 *   ahead with advise('willneed'), prefetch 1), against the all-resident model in the same rounds;
 *   page cache warm, or cold (before each of our steps the resident model's mapping lets go of its
 *   pages and the file's pages are dropped with posix_fadvise(DONTNEED), in this process: a child
 *   (dd) forked right before a step costs the step thousands of copy-on-write faults; the resident
 *   model's steps, the bound's compute time, do not drop, and its pages are populated again, untimed,
 *   before each). Metrics per step: bytes streamed, bytes populated, seconds of loading hidden behind
 *   compute and exposed, overlap, seconds waited and blocked, bytes the step read from disk and its
 *   major faults (/proc/self/io, getrusage), the file's sequential read rate (cold), and the peak
 *   resident bytes of a child doing two forwards, over its baseline, against the budget.
 * - `h3_full_step` (full mode only): the real-shape sparse h3-full (~64 GB bf16) at 1 frame 16×16
 *   with an 8 GB budget: one forward on a machine smaller than the model.
 * - `plan_h3_full`: the planner on the real-shape h3-full layout (50 blocks, read with layoutOf from a
 *   sparse checkpoint), for several allocations on the recorded W7900 pair and the 2×RTX 4090 box.
 */
import { open } from 'node:fs/promises';
import { join } from 'node:path';
import { StagedSource, StreamingExecutor, type StepStats, computeAccount, computeDeviceBytes, estimateActivationBytes, formatAllocationBytes, latentTokens, machineDevices, opGroupLoader, planPlacement } from '@ninodes/distorch';
import { readFileSync } from 'node:fs';
import { type Tensor, adviseFile } from '@ninodes/kernels';
import { type H3PresetName, type H3VideoModel, ensureSyntheticCheckpoint, flowSigmas, gaussianNoise, layoutOf, openH3Model, writeSyntheticH3Checkpoint } from '@ninodes/models';
import { isPreparedLinearOp, openCheckpoint } from '@ninodes/quant';
import type { BenchCase, Metric, Suite } from '../suite.js';
import { benchRoot } from '../package-root.js';
import { median } from '../stats.js';
import { benchCacheDir } from './quant.js';
import { BenchError } from '../error-codes.js';

const SIGMA = flowSigmas(8, 12)[1] as number;
const SEED = 145;

type Dims = { frames: number; height: number; width: number };

/** The allocation that puts `offloaded` % of the model's bytes on disk (ratio mode; 0 and 100 included). */
function allocationFor(offloaded: number): string {
  return `cpu,${100 - offloaded}%;disk,${offloaded}%`;
}

/**
 * The model with an executor streaming its disk groups, as `ninodes run --alloc` composes it: weights
 * staged through a StagedSource, the budget what the plan puts on the cpu (or `budgetBytes`).
 */
function streamedModel(path: string, allocation: string, dims: Dims, budgetBytes?: number): { model: H3VideoModel; executor: StreamingExecutor<void>; budget: number; activationBytes: number; close: () => Promise<void> } {
  let staged: StagedSource | undefined;
  const opened = openH3Model(path, { compute: 'bf16', capture: false, wrapSource: (s) => (staged = new StagedSource(s)) });
  if (staged === undefined) throw new BenchError('INTERNAL', 'openH3Model did not wrap the source', { where: 'offload bench' });
  const layout = layoutOf(opened.source);
  const activationBytes = estimateActivationBytes(layout, latentTokens(dims));
  const plan = (a: string) => planPlacement({ layout, allocation: a, devices: [{ id: 'cpu', totalBytes: null }], compute: 'cpu', account: computeAccount('bf16'), activationBytes, prefetch: 1 });
  let placement = plan(allocation);
  // A byte budget holds everything: the weights kept on the cpu get it less the reserve (as run --budget).
  if (budgetBytes !== undefined) placement = plan(`cpu,${formatAllocationBytes(Math.max(0, budgetBytes - placement.reserve.activationBytes - placement.reserve.stagingBytes))};disk,*`);
  const ops = opened.model.allLinears().filter(isPreparedLinearOp);
  const loader = opGroupLoader(layout, ops, opened.source, { staged });
  const budget = budgetBytes ?? computeDeviceBytes(placement);
  const executor = new StreamingExecutor({ layout, placement, loader, budgetBytes: budget, prefetch: 1 });
  opened.model.setHooks(executor);
  return {
    model: opened.model,
    executor,
    budget,
    activationBytes,
    close: async () => {
      await executor.close();
      await loader.close();
      opened.close();
    },
  };
}

async function forwardOnce(model: H3VideoModel, latent: Tensor<'f32'>): Promise<void> {
  (await model.forward(latent, SIGMA)).dispose();
}

/** A child doing two forwards under the executor; prints the budget and the executor's stats. */
function childScript(path: string, offloaded: number, dims: Dims): string {
  return [
    `import { StagedSource, StreamingExecutor, computeAccount, computeDeviceBytes, estimateActivationBytes, formatAllocationBytes, latentTokens, opGroupLoader, planPlacement } from '@ninodes/distorch';`,
    `import { gaussianNoise, layoutOf, openH3Model } from '@ninodes/models';`,
    `let staged;`,
    `const opened = openH3Model(${JSON.stringify(path)}, { compute: 'bf16', capture: false, wrapSource: (s) => (staged = new StagedSource(s)) });`,
    `const layout = layoutOf(opened.source);`,
    `const dims = ${JSON.stringify(dims)};`,
    `const placement = planPlacement({ layout, allocation: ${JSON.stringify(allocationFor(offloaded))}, devices: [{ id: 'cpu', totalBytes: null }], compute: 'cpu', account: computeAccount('bf16'), activationBytes: estimateActivationBytes(layout, latentTokens(dims)), prefetch: 1 });`,
    `const ops = opened.model.allLinears();`,
    `const loader = opGroupLoader(layout, ops, opened.source, { staged });`,
    `const budget = computeDeviceBytes(placement);`,
    `const executor = new StreamingExecutor({ layout, placement, loader, budgetBytes: budget, prefetch: 1 });`,
    `opened.model.setHooks(executor);`,
    `const latent = gaussianNoise([1, opened.model.config.latentChannels, dims.frames, dims.height, dims.width], ${SEED});`,
    `for (let i = 0; i < 2; i++) (await opened.model.forward(latent, ${SIGMA})).dispose();`,
    `const stats = executor.stats();`,
    `await executor.close();`,
    `await loader.close();`,
    `opened.close();`,
    `console.log(JSON.stringify({ budget, stats }));`,
  ].join('\n');
}

/** The file's sequential read rate, cold: its pages dropped, then read front to back in 8 MiB reads. */
async function sequentialReadRate(path: string, drop: (file: string) => Promise<void>): Promise<number> {
  await drop(path);
  const fh = await open(path, 'r');
  try {
    const chunk = Buffer.allocUnsafe(8 * 2 ** 20);
    let total = 0;
    const t0 = performance.now();
    for (;;) {
      const { bytesRead } = await fh.read(chunk, 0, chunk.length, total);
      if (bytesRead === 0) break;
      total += bytesRead;
    }
    return total / ((performance.now() - t0) / 1000);
  } finally {
    await fh.close();
    await drop(path);
  }
}

/** Bytes this process has had read from storage (/proc/self/io read_bytes, every thread) and its major faults. */
function diskReads(): { bytes: number; majorFaults: number } {
  const bytes = Number(/^read_bytes:\s*(\d+)/m.exec(readFileSync('/proc/self/io', 'utf8'))?.[1] ?? NaN);
  return { bytes, majorFaults: process.resourceUsage().majorPageFault };
}

/** Mean of a step statistic over the passes after the first (which also loads the resident groups). */
function passMean(all: readonly StepStats[], f: (s: StepStats) => number): number {
  const passes = all.slice(1, -1).length > 0 ? all.slice(1, -1) : all.slice(1);
  return passes.length === 0 ? 0 : passes.reduce((a, s) => a + f(s), 0) / passes.length;
}

/** Untimed rounds before the step's timed ones; their times are left out of the metrics as well. */
const STEP_WARMUP = 1;

const step: BenchCase = {
  name: 'step',
  description: 'one H3 forward (bf16) with a share of its bytes on disk, streamed with prefetch 1, against all-resident in the same rounds; page cache warm or dropped before each step',
  params: {
    full: ['warm', 'cold'].flatMap((cache) => [0, 25, 50, 75, 100].map((offloaded) => ({ model: 'h3-small', offloaded, cache, frames: 1, height: 16, width: 16 }))),
    quick: [
      { model: 'h3-tiny', offloaded: 0, cache: 'warm', frames: 1, height: 16, width: 16 },
      { model: 'h3-tiny', offloaded: 50, cache: 'warm', frames: 1, height: 16, width: 16 },
      { model: 'h3-tiny', offloaded: 0, cache: 'cold', frames: 1, height: 16, width: 16 },
      { model: 'h3-tiny', offloaded: 50, cache: 'cold', frames: 1, height: 16, width: 16 },
    ],
  },
  targets: [
    { source: 'issue 14', description: 'warm, 50 % offloaded: within 1.15x of all-resident', on: { ratio: 'resident' }, op: '<=', value: 1.15, when: { offloaded: 50, cache: 'warm' } },
    { source: 'issue 14', description: 'cold: within 1.1x of max(compute time, bytes streamed / sequential read rate)', on: { metric: 'cold_bound_ratio' }, op: '<=', value: 1.1, when: { cache: 'cold' } },
    { source: 'issue 14', description: 'peak resident (over the process baseline) within the budget + 10 %', on: { metric: 'peak_over_budget' }, op: '<=', value: 1.1, when: { cache: 'warm' } },
  ],
  budget: { warmup: STEP_WARMUP, minRuns: 3, maxRuns: 8 },
  setup: async (p, ctx) => {
    const path = (await ensureSyntheticCheckpoint({ dir: join(benchCacheDir(), 'models'), preset: p.model as H3PresetName })).path;
    const cold = p.cache === 'cold';
    const dims = { frames: p.frames as number, height: p.height as number, width: p.width as number };
    // The resident model first, its pages touched: its RSS is then part of the executor's baseline.
    const resident = openH3Model(path, { compute: 'bf16', capture: false });
    const latent = gaussianNoise([1, resident.model.config.latentChannels, dims.frames, dims.height, dims.width], SEED);
    await forwardOnce(resident.model, latent);
    const ours = streamedModel(path, allocationFor(p.offloaded as number), dims);

    // Forward times alone (the page-cache drop is not part of a step), for the cold bound.
    const times = { ours: [] as number[], resident: [] as number[] };
    // posix_fadvise(DONTNEED) keeps pages that any mapping still maps: the resident model (same
    // file, same process) maps every page, so before our cold step its mapping lets go of them
    // (madvise DONTNEED; it faults them back on its next use) and the drop really empties the cache.
    const releaseResident = (): void => {
      for (const e of resident.source.entries()) resident.source.advise?.(e.name, 'dontneed');
    };
    // The drop runs in this process: forking dd from a process holding ~1 GB right before the step
    // made the step pay ~4k copy-on-write faults (measured at 0 % offloaded: 0 bytes read from
    // disk, the whole file still cached, 3.6-4.3k minor faults against 0.1-1k without the fork).
    const drop = (file: string): void => {
      releaseResident();
      adviseFile(file, 'dontneed');
    };
    // After a drop the resident model's mapping is empty: populate it again, untimed, so its steps
    // (the bound's compute time) are compute alone, not re-faulting 1 GB from the page cache.
    const repopulateResident = async (): Promise<void> => {
      await Promise.all(resident.source.entries().map((e) => resident.source.populate?.(e.name)));
    };
    const rate = cold ? await sequentialReadRate(path, async (file) => drop(file)) : undefined;
    const reads = { bytes: [] as number[], majorFaults: [] as number[] };
    const timed = (model: H3VideoModel, into: number[], mode: 'drop' | 'repopulate' | 'none') => async (): Promise<void> => {
      if (mode === 'drop') drop(path);
      if (mode === 'repopulate') await repopulateResident();
      const r0 = diskReads();
      const t0 = performance.now();
      await forwardOnce(model, latent);
      into.push((performance.now() - t0) / 1000);
      if (into === times.ours) {
        const r1 = diskReads();
        reads.bytes.push(r1.bytes - r0.bytes);
        reads.majorFaults.push(r1.majorFaults - r0.majorFaults);
      }
    };
    return {
      // Cold: our step starts from an empty page cache (what ours keeps mapped stays: the resident
      // groups); the resident model's steps do not drop (their median is the compute time of the
      // bound) and find its pages mapped again.
      run: timed(ours.model, times.ours, cold ? 'drop' : 'none'),
      against: { resident: { kind: 'baseline', contender: { run: timed(resident.model, times.resident, cold ? 'repopulate' : 'none') } } },
      metrics: async () => {
        const all = ours.executor.stats();
        const streamed = passMean(all, (s) => s.bytesStreamed);
        // The warmup rounds go through run() too: the first of ours loads every resident group.
        const timedOnly = (xs: readonly number[]): number[] => xs.slice(STEP_WARMUP);
        const m: Record<string, Metric> = {
          bytes_streamed: { value: streamed, unit: 'bytes' },
          wait_seconds: { value: passMean(all, (s) => s.waitSeconds), unit: 's', better: 'lower' },
          blocking_seconds: { value: passMean(all, (s) => s.blockingSeconds), unit: 's', better: 'lower' },
          bytes_populated: { value: passMean(all, (s) => s.bytesPopulated), unit: 'bytes' },
          load_seconds: { value: passMean(all, (s) => s.loadSeconds), unit: 's' },
          hidden_seconds: { value: passMean(all, (s) => s.hiddenSeconds), unit: 's', better: 'higher' },
          exposed_seconds: { value: passMean(all, (s) => s.exposedSeconds), unit: 's', better: 'lower' },
          overlap: { value: passMean(all, (s) => s.overlap), unit: 'fraction', better: 'higher' },
          disk_read_bytes: { value: median(timedOnly(reads.bytes)), unit: 'bytes' },
          major_faults: { value: median(timedOnly(reads.majorFaults)), unit: 'count', better: 'lower' },
          budget: { value: ours.budget, unit: 'bytes' },
        };
        if (rate !== undefined) {
          // A cold step that streams but reads nothing from disk was not cold: another process maps
          // the file (the bench cache is shared), so the drop could not evict its pages.
          if (streamed > 0 && median(timedOnly(reads.bytes)) === 0) {
            throw new BenchError('BENCH_CACHE_DROP_FAILED', `the cold steps streamed ${streamed} bytes but read none from disk: ${path} stayed in the page cache`, {
              value: path,
              where: 'offload step (cold)',
              hint: 'another process maps the checkpoint; point NINODES_BENCH_CACHE at a directory of your own',
            });
          }
          const compute = median(timedOnly(times.resident));
          m.read_rate = { value: rate, unit: 'bytes/s' };
          m.cold_bound_ratio = { value: median(timedOnly(times.ours)) / Math.max(compute, streamed / rate), unit: 'ratio', better: 'lower' };
        } else {
          // Peak resident of a child doing exactly this (two forwards), as the OS measures it.
          const child = await ctx.peakMemoryOfScript(childScript(path, p.offloaded as number, dims));
          const doc = JSON.parse(child.stdout.trim().split('\n').at(-1) as string) as { budget: number; stats: StepStats[] };
          const baseline = doc.stats[0]?.baselineBytes ?? 0;
          m.peak_rss = { value: child.peakBytes, unit: 'bytes', better: 'lower' };
          m.peak_over_budget = { value: (child.peakBytes - baseline) / doc.budget, unit: 'ratio', better: 'lower' };
          m.peak_measured_over_budget = { value: Math.max(...doc.stats.map((s) => s.peakMeasuredBytes)) / doc.budget, unit: 'ratio', better: 'lower' };
          m.peak_accounted_over_budget = { value: Math.max(...doc.stats.map((s) => s.peakHeldBytes)) / doc.budget, unit: 'ratio', better: 'lower' };
        }
        return m;
      },
      dispose: async () => {
        latent.dispose();
        await ours.close();
        resident.close();
      },
    };
  },
};

const GiB = 2 ** 30;

const h3FullStep: BenchCase = {
  name: 'h3_full_step',
  description: 'one forward of the real-shape sparse h3-full (~64 GB bf16) at 1 frame 16x16 under an 8 GB budget: a model larger than the machine (full mode only; minutes)',
  params: { full: [{ model: 'h3-full', budget_gb: 8, frames: 1, height: 16, width: 16 }], quick: [] },
  targets: [{ source: 'issue 14', description: 'peak resident over the baseline within the budget + activations + 10 %', on: { metric: 'peak_over_budget' }, op: '<=', value: 1.1 }],
  budget: { warmup: 0, minRuns: 1, maxRuns: 1, seconds: 0 },
  setup: async (p, ctx) => {
    // The sparse file costs no disk (holes); it lives in the scratch directory, removed afterwards.
    const path = join(ctx.tmpDir, 'h3-full.safetensors');
    await writeSyntheticH3Checkpoint(path, { preset: 'h3-full', sparse: true });
    const dims = { frames: p.frames as number, height: p.height as number, width: p.width as number };
    const budget = (p.budget_gb as number) * GiB;
    const ours = streamedModel(path, 'cpu,*', dims, budget);
    const latent = gaussianNoise([1, ours.model.config.latentChannels, dims.frames, dims.height, dims.width], SEED);
    const activations = ours.activationBytes;
    return {
      run: () => forwardOnce(ours.model, latent),
      metrics: () => {
        const all = ours.executor.stats();
        const peak = Math.max(...all.map((s) => s.peakResidentBytes));
        const baseline = all[0]?.baselineBytes ?? 0;
        return {
          peak_rss: { value: peak, unit: 'bytes', better: 'lower' },
          peak_over_budget: { value: (peak - baseline) / (budget + activations), unit: 'ratio', better: 'lower' },
          bytes_streamed: { value: all.reduce((a, s) => a + s.bytesStreamed, 0), unit: 'bytes' },
          overlap: { value: passMean(all, (s) => s.overlap), unit: 'fraction', better: 'higher' },
        };
      },
      dispose: async () => {
        latent.dispose();
        await ours.close();
      },
    };
  },
};

const MACHINES: Record<string, string> = { w7900x2: 'w7900x2-gfx1100', rtx4090x2: 'rtx4090x2-container' };

export const offloadSuite: Suite = {
  name: 'offload',
  description: 'distorch: placement planning on the real-shape h3-full layout; a forward with 0-100 % of the model streamed from disk, warm and cold; h3-full under an 8 GB budget',
  cases: [
    step,
    h3FullStep,
    {
      name: 'plan_h3_full',
      description: 'planPlacement of all 54 groups of h3-full (bf16, int8 convrot account) for one allocation',
      params: {
        full: [
          { machine: 'w7900x2', alloc: 'hip:0,40gb;hip:1,*', compute: 'auto' },
          { machine: 'w7900x2', alloc: 'hip:0,30%;hip:1,70%', compute: 'int8_convrot' },
          { machine: 'rtx4090x2', alloc: 'cuda:0,10gb;cuda:1,20gb;cpu,*', compute: 'auto' },
          { machine: 'rtx4090x2', alloc: '#cuda:0;50gb;cpu,disk', compute: 'auto' },
          { machine: 'rtx4090x2', alloc: 'cuda:0,23gb;cpu,*', compute: 'auto' },
        ],
        quick: [{ machine: 'w7900x2', alloc: 'hip:0,40gb;hip:1,*', compute: 'auto' }],
      },
      targets: [{ source: 'issue 14', description: 'the planner places every group of h3-full in under 50 ms', on: { time: 'median' }, op: '<=', value: 0.05 }],
      setup: async (p, ctx) => {
        const path = join(ctx.tmpDir, `offload-h3-full-${String(p.machine)}-${String(p.compute)}.safetensors`);
        await writeSyntheticH3Checkpoint(path, { preset: 'h3-full', sparse: true });
        const source = openCheckpoint(path);
        const layout = layoutOf(source);
        const devices = machineDevices(join(benchRoot(), '..', '..', 'packages', 'device', 'fixtures', 'machines', MACHINES[p.machine as string] as string));
        const account = computeAccount(p.compute === 'int8_convrot' ? 'int8_convrot' : 'auto');
        const plan = () => planPlacement({ layout, allocation: p.alloc as string, devices, account, activationBytes: 2 ** 30 });
        return {
          run: plan,
          metrics: () => {
            const placement = plan();
            return {
              groups: { value: placement.groups.length, unit: 'count' },
              fits: { value: placement.fits ? 1 : 0, unit: 'bool' },
            };
          },
          dispose: () => source.close(),
        };
      },
    },
  ],
};
