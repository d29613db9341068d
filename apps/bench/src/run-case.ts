/** Runs one case instance: setup, interleaved timing against its contenders, metrics, targets. */
import { measureInterleaved, pairRatios, type Timed } from './measure.js';
import type { ContenderResult, RatioResult, CaseResult } from './results-schema.js';
import { summarize, type Stats } from './stats.js';
import type { BenchCase, Budget, CaseContext, Contender, ContenderKind, Params, Suite, Work } from './suite.js';
import { evaluateTargets, paramsMatch } from './targets.js';

/** Stats as JSON can carry them: non-finite numbers (empty samples, division by 0) become null. */
function jsonStats(s: Stats): ContenderResult['stats'] & object {
  const f = (v: number) => (Number.isFinite(v) ? v : null);
  return { n: s.n, median: f(s.median), min: f(s.min), max: f(s.max), mean: f(s.mean), mad: f(s.mad), q25: f(s.q25), q75: f(s.q75), iqr: f(s.iqr), spread: f(s.spread) };
}

export function caseKey(name: string, params: Params): string {
  const parts = Object.entries(params).map(([k, v]) => `${k}=${String(v)}`);
  return `${name}[${parts.join(',')}]`;
}

function throughputOf(work: Work | null, medianSeconds: number | null): ContenderResult['throughput'] {
  if (!work || medianSeconds === null || medianSeconds <= 0) return [];
  const out: ContenderResult['throughput'] = [];
  if (work.bytes !== undefined) out.push({ value: work.bytes / medianSeconds / 1e9, unit: 'GB/s' });
  if (work.flops !== undefined) out.push({ value: work.flops / medianSeconds / 1e9, unit: 'GFLOP/s' });
  return out;
}

function message(e: unknown): string {
  if (!(e instanceof Error)) return String(e);
  const code = (e as Error & { code?: unknown }).code;
  return typeof code === 'string' ? `${code}: ${e.message}` : e.message;
}

async function trial(side: Timed): Promise<void> {
  if ('time' in side) {
    await side.time(1);
    return;
  }
  const out = side.run();
  if (out !== null && typeof out === 'object' && typeof (out as { then?: unknown }).then === 'function') await out;
}

/** Runs every disposer even when some throw; returns their errors so the case can report them. */
async function disposeAll(fns: Array<(() => void | Promise<void>) | undefined>): Promise<string[]> {
  const errors: string[] = [];
  for (const fn of fns) {
    try {
      await fn?.();
    } catch (e) {
      errors.push(`dispose failed: ${message(e)}`);
    }
  }
  return errors;
}

export async function runCase(suite: Suite, bench: BenchCase, params: Params, ctx: CaseContext, budget: Budget): Promise<CaseResult> {
  const t0 = process.hrtime.bigint();
  const key = caseKey(bench.name, params);
  const base = { suite: suite.name, case: bench.name, key, description: bench.description, parameters: { ...params } };
  let work: Work | null = null;
  const disposers: Array<(() => void | Promise<void>) | undefined> = [];
  try {
    work = bench.work ? bench.work(params) : null;
    const instance = await bench.setup(params, ctx);
    disposers.push(instance.dispose);
    const entries: Array<{ name: string; kind: ContenderKind; contender: Contender }> = Object.entries(instance.against ?? {}).map(([name, a]) => ({ name, ...a }));
    for (const e of entries) if (!('missing' in e.contender)) disposers.unshift(e.contender.dispose);
    // One trial run per contender: one that throws is recorded as failed and left out of the rounds,
    // so a broken peer cannot take ours down with it (ours throwing fails the case).
    const failed = new Map<string, string>();
    for (const e of entries) {
      if ('missing' in e.contender) continue;
      try {
        await trial(e.contender as Timed);
      } catch (error) {
        failed.set(e.name, message(error));
      }
    }
    const timed = entries.filter((e) => !('missing' in e.contender) && !failed.has(e.name));
    const sides: Timed[] = [{ run: instance.run }, ...timed.map((e) => e.contender as Timed)];
    const { samples } = await measureInterleaved(sides, { budget: { ...budget, ...bench.budget } });
    const oursSamples = samples[0] as number[];
    const oursStats = jsonStats(summarize(oursSamples));
    const ours: ContenderResult = { name: 'ours', kind: 'ours', status: 'ok', samples: oursSamples, stats: oursStats, throughput: throughputOf(work, oursStats.median) };
    const contenders: ContenderResult[] = [ours];
    const ratios: RatioResult[] = [];
    for (const e of entries) {
      if ('missing' in e.contender) {
        contenders.push({ name: e.name, kind: e.kind, status: 'missing', reason: e.contender.missing, samples: [], stats: null, throughput: [] });
        continue;
      }
      const why = failed.get(e.name);
      if (why !== undefined) {
        contenders.push({ name: e.name, kind: e.kind, status: 'failed', reason: why, samples: [], stats: null, throughput: [] });
        continue;
      }
      const s = samples[1 + timed.indexOf(e)] as number[];
      const stats = jsonStats(summarize(s));
      contenders.push({ name: e.name, kind: e.kind, status: 'ok', samples: s, stats, throughput: throughputOf(work, stats.median) });
      ratios.push({ against: e.name, timeRatio: jsonStats(summarize(pairRatios(oursSamples, s))) });
    }
    const metrics = instance.metrics ? await instance.metrics() : {};
    const targets = evaluateTargets(bench.targets ?? [], params, { ours, ratios, metrics });
    // Measured data stays, but a leak-prone case counts as failed so it gets fixed.
    const disposeErrors = await disposeAll(disposers.splice(0));
    const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
    return { ...base, work, contenders, ratios, metrics, targets, seconds, ...(disposeErrors.length ? { error: disposeErrors.join('; ') } : {}) };
  } catch (e) {
    const disposeErrors = await disposeAll(disposers.splice(0));
    const targets = (bench.targets ?? []).filter((t) => paramsMatch(params, t.when)).map((t) => ({ source: t.source, description: t.description, on: t.on, op: t.op, value: t.value, measured: null, met: null, note: 'case failed' }));
    return { ...base, work, contenders: [], ratios: [], metrics: {}, targets, seconds: Number(process.hrtime.bigint() - t0) / 1e9, error: [message(e), ...disposeErrors].join('; ') };
  }
}
