/**
 * Suite `io` (issue 4): checkpoint open time, full-read throughput with a warm page cache against
 * `cat`, `fs.readFile` and Python safetensors, and the weight cache's layer-by-layer pass at budgets
 * of 100 / 50 / 25 % of the model size (step time here, peak RSS from a child measured by the OS).
 *
 * Checkpoints have the real MiniMax-H3 key layout (`h3TensorSpecs` from @ninodes/models, sized by
 * `benchH3Config`). The filled ones store the bf16 tensors as f16 (the f32 islands stay f32): numpy
 * has no bf16, so Python safetensors could not read a bf16 file into numpy at all. The bytes are the
 * same size either way and nothing here interprets them.
 */
import { readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { type Tensor, allocateNative } from '@ninodes/kernels';
import {
  type CheckpointSource,
  SafetensorsFile,
  type TensorSource,
  WeightCache,
  cachePass,
  openSafetensors,
  patternTensors,
  readAllTensors,
  registerCheckpoint,
  writeFilledCheckpoint,
  writeSparseCheckpoint,
} from '@ninodes/memory';
import { benchH3Specs, specBytes } from './h3-bench-layout.js';
import type { CaseContext, Metric, Params, Suite } from '../suite.js';

function f16Layout(p: Params): TensorSource[] {
  const specs = benchH3Specs(p.blocks as number, p.hidden as number).map((t) => ({ ...t, dtype: t.dtype === 'bf16' ? ('f16' as const) : t.dtype }));
  return patternTensors(specs);
}

let fileSerial = 0;

/** Writes a filled f16 checkpoint into the run's scratch directory; the caller removes it. */
async function filledCheckpoint(ctx: CaseContext, p: Params): Promise<{ path: string; bytes: number }> {
  const path = join(ctx.tmpDir, `io-h3-${String(p.blocks)}x${String(p.hidden)}-${String(fileSerial++)}.safetensors`);
  const bytes = await writeFilledCheckpoint(path, f16Layout(p));
  return { path, bytes };
}

// Full: 12 blocks at hidden 2048 = 1.8 GiB, 132 tensors (under fs.readFile's 2 GiB limit).
// Quick: 5 blocks at hidden 512 = 50 MiB. Open: 104 blocks at hidden 2560 = 24.2 GiB, 1,052 tensors.
const FULL_MODEL = { blocks: 12, hidden: 2048 } as const;
const QUICK_MODEL = { blocks: 5, hidden: 512 } as const;
const OPEN_MODEL = { blocks: 104, hidden: 2560 } as const;

const bytesMetric = (value: number): Metric => ({ value, unit: 'bytes', better: 'lower' });

/** Peak RSS of a fresh Node that only imports @ninodes/memory: the floor every child pays. */
const nodeFloor = new Map<CaseContext, Promise<number>>();
function nodeBaselinePeak(ctx: CaseContext): Promise<number> {
  let p = nodeFloor.get(ctx);
  if (!p) {
    p = ctx.peakMemoryOfScript(`import '@ninodes/memory';`).then((r) => r.peakBytes);
    nodeFloor.set(ctx, p);
  }
  return p;
}

/**
 * A source that remembers the last tensor taken, so a materializer can drop that tensor's mapped
 * pages after copying them out (madvise DONTNEED): what a layer-by-layer loader does so the mapping
 * does not pile up in RSS beside the cache. Copies go to native memory the cache frees on eviction
 * or release (a JS ArrayBuffer would linger until GC and overshoot the budget). Same code as the
 * child script below.
 */
function droppingMaterializer(src: SafetensorsFile): { source: CheckpointSource; materialize: (t: Tensor) => Tensor } {
  let last = '';
  const source: CheckpointSource = {
    format: src.format,
    path: src.path,
    metadata: src.metadata,
    entries: () => src.entries(),
    has: (n) => src.has(n),
    entry: (n) => src.entry(n),
    tensor: (n) => {
      last = n;
      return src.tensor(n);
    },
    tensorRows: (n, a, b) => src.tensorRows(n, a, b),
    tensorColumns: (n, a, b) => src.tensorColumns(n, a, b),
    close: () => src.close(),
  };
  const materialize = (t: Tensor): Tensor => {
    const copy = allocateNative(t.dtype, t.shape);
    copy.bytes().set(t.bytes());
    src.advise(last, 'dontneed');
    return copy;
  };
  return { source, materialize };
}

/** The child of the cache case: `passes` passes at `budget`, then prints the cache statistics. */
function cachePassScript(path: string, budget: number, passes: number): string {
  return `
import { allocateNative } from '@ninodes/kernels';
import { WeightCache, cachePass, openSafetensors, registerCheckpoint } from '@ninodes/memory';
const src = openSafetensors(${JSON.stringify(path)});
let last = '';
const source = {
  format: src.format, path: src.path, metadata: src.metadata,
  entries: () => src.entries(), has: (n) => src.has(n), entry: (n) => src.entry(n),
  tensor: (n) => { last = n; return src.tensor(n); }, close: () => src.close(),
};
const materialize = (t) => { const c = allocateNative(t.dtype, t.shape); c.bytes().set(t.bytes()); src.advise(last, 'dontneed'); return c; };
const cache = new WeightCache({ budgets: { cpu: ${String(budget)} }, dispose: (v) => v.dispose() });
registerCheckpoint(cache, 'h3', src);
let stats;
for (let i = 0; i < ${String(passes)}; i++) stats = cachePass(cache, 'cpu', 'h3', source, materialize);
console.log(JSON.stringify(stats));
src.close();
`;
}

export const ioSuite: Suite = {
  name: 'io',
  description:
    'Checkpoint I/O (issue 4): open time, full-read throughput of a warm-cache checkpoint against cat, fs.readFile and Python safetensors, and the weight cache at 100/50/25 % budgets.',
  cases: [
    {
      name: 'open',
      description: 'openSafetensors + close of a sparse H3 checkpoint (header parse, validation, mmap); resident growth from a child process',
      params: {
        full: [
          { blocks: FULL_MODEL.blocks, hidden: FULL_MODEL.hidden, size: '1.8 GiB' },
          { ...OPEN_MODEL, size: '24 GiB' },
        ],
        quick: [{ ...OPEN_MODEL, size: '24 GiB' }],
      },
      targets: [
        { source: 'issue 4', description: '24 GB sparse checkpoint (1,000+ tensors) opens in under 100 ms', on: { time: 'median' }, op: '<=', value: 0.1, when: { size: '24 GiB' } },
        { source: 'issue 4', description: '...with under 50 MB of resident growth (child peak RSS minus a bare import)', on: { metric: 'resident_growth' }, op: '<=', value: 50 * 1024 * 1024, when: { size: '24 GiB' } },
      ],
      setup: (p, ctx) => {
        const layout = patternTensors(benchH3Specs(p.blocks as number, p.hidden as number));
        const path = join(ctx.tmpDir, `io-open-${String(p.blocks)}x${String(p.hidden)}-${String(fileSerial++)}.safetensors`);
        const fileBytes = writeSparseCheckpoint(path, layout);
        return {
          run: () => openSafetensors(path).close(),
          metrics: async () => {
            const floor = await nodeBaselinePeak(ctx);
            const opened = await ctx.peakMemoryOfScript(
              `import { openSafetensors } from '@ninodes/memory';\nconst f = openSafetensors(${JSON.stringify(path)});\nconsole.log(f.entries().length);\nf.close();`,
            );
            return {
              tensors: { value: layout.length, unit: 'count' },
              file_bytes: { value: fileBytes, unit: 'bytes' },
              resident_growth: bytesMetric(opened.peakBytes - floor),
            };
          },
          dispose: () => rm(path, { force: true }),
        };
      },
    },
    {
      name: 'read_all',
      description:
        'open + read every tensor byte (readAllTensors, parallel) + close, warm page cache; f16 file so Python safetensors (numpy) can read it',
      params: { full: [{ ...FULL_MODEL, size: '1.8 GiB' }], quick: [{ ...QUICK_MODEL, size: '50 MiB' }] },
      work: (p) => ({ bytes: specBytes(benchH3Specs(p.blocks as number, p.hidden as number)) }),
      targets: [
        { source: 'issue 4', description: 'full read at least 0.9x the throughput of cat (time ratio <= 1/0.9)', on: { ratio: 'cat' }, op: '<=', value: 1 / 0.9 },
        { source: 'issue 4', description: 'full read ahead of Python safetensors (safe_open + every tensor as numpy)', on: { ratio: 'python_safetensors' }, op: '<=', value: 1 },
      ],
      // A full-size round is four reads of 1.8 GiB (seconds on 2 shared cores): cap the rounds.
      budget: { maxRuns: 12 },
      setup: async (p, ctx) => {
        const { path, bytes } = await filledCheckpoint(ctx, p);
        let checksum = 0;
        return {
          run: () => {
            const f = openSafetensors(path);
            try {
              checksum += readAllTensors(f).checksum;
            } finally {
              f.close();
            }
          },
          against: {
            cat: { kind: 'bound', contender: await ctx.peers.cat(path) },
            fs_readFile: { kind: 'peer', contender: { run: () => readFile(path) } },
            python_safetensors: { kind: 'peer', contender: await ctx.peers.python('safetensors.load', { file: path, framework: 'numpy' }) },
          },
          metrics: () => ({ file_bytes: { value: bytes, unit: 'bytes' }, checksum_nonzero: { value: checksum > 0 ? 1 : 0, unit: 'bool' } }),
          dispose: () => rm(path, { force: true }),
        };
      },
    },
    {
      name: 'cache_pass',
      description:
        'one layer-by-layer pass through the WeightCache (copy into native memory on miss, freed on eviction / release; mapped pages dropped after each copy), steady state; peak RSS of a child doing two passes',
      params: {
        full: [100, 50, 25].map((budget_pct) => ({ ...FULL_MODEL, budget_pct })),
        quick: [100, 50, 25].map((budget_pct) => ({ ...QUICK_MODEL, budget_pct })),
      },
      // No `work`: at 100 % a pass is all hits and moves no bytes, so a GB/s figure would mislead.
      budget: { maxRuns: 10 },
      setup: async (p, ctx) => {
        const { path } = await filledCheckpoint(ctx, p);
        const src = SafetensorsFile.open(path);
        const modelBytes = src.entries().reduce((a, e) => a + e.byteLength, 0);
        const budget = Math.floor((modelBytes * (p.budget_pct as number)) / 100);
        const cache = new WeightCache<Tensor>({ budgets: { cpu: budget }, dispose: (v) => v.dispose() });
        registerCheckpoint(cache, 'h3', src);
        const { source, materialize } = droppingMaterializer(src);
        let passes = 0;
        let before = cache.stats('cpu');
        return {
          run: () => {
            before = cache.stats('cpu');
            cachePass(cache, 'cpu', 'h3', source, materialize);
            passes++;
          },
          metrics: async () => {
            const after = cache.stats('cpu');
            const child = await ctx.peakMemoryOfScript(cachePassScript(path, budget, 2));
            // The same child with no pass: node, the addon and the opened checkpoint, nothing cached.
            const floor = (await ctx.peakMemoryOfScript(cachePassScript(path, budget, 0))).peakBytes;
            return {
              budget_bytes: { value: budget, unit: 'bytes' },
              peak_rss: bytesMetric(child.peakBytes),
              peak_rss_of_passes: bytesMetric(child.peakBytes - floor),
              cache_peak_resident: bytesMetric(after.peakResidentBytes),
              cache_peak_with_temporaries: bytesMetric(after.peakBytes),
              // Of the last pass: bytes served as temporaries (copied and dropped) and hits.
              last_pass_temporary_bytes: bytesMetric(after.bytesTemporary - before.bytesTemporary),
              last_pass_hits: { value: after.hits - before.hits, unit: 'count', better: 'higher' },
              passes: { value: passes, unit: 'count' },
            };
          },
          dispose: async () => {
            cache.evictAll();
            src.close();
            await rm(path, { force: true });
          },
        };
      },
    },
  ],
  charts: [
    { kind: 'throughput', title: 'full-read throughput against cat, fs.readFile and Python safetensors', cases: ['read_all'] },
    { kind: 'ratio', title: 'read time ratio ours / peer', cases: ['read_all'] },
    { kind: 'time', title: 'open time (header parse + validation + mmap)', cases: ['open'], x: 'size' },
    { kind: 'time', title: 'weight-cache pass step time by budget', cases: ['cache_pass'], x: 'budget_pct' },
    { kind: 'metric', title: 'peak RSS of two passes (child) above the same child without a pass, by budget', metric: 'peak_rss_of_passes', cases: ['cache_pass'], x: 'budget_pct' },
  ],
};
