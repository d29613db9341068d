/**
 * Timing by interleaved rounds. Each round runs ours and every contender once, in an order that
 * rotates round by round, so drift (thermal, other tenants, page cache) hits all sides alike and
 * position effects cancel. Ratios are taken per round and summarised by their median.
 */
import type { Budget } from './suite.js';

/** One timed side: an in-process function (timed here) or a self-timed run (seconds). */
export type Timed = { run: () => unknown } | { time: (runs: number) => Promise<number> };

export interface MeasureOptions {
  budget: Budget;
  /** Monotonic clock in nanoseconds; injectable so tests can drive it. */
  now?: () => bigint;
}

export interface Measured {
  /** Seconds per run, one array per side, index-aligned by round. */
  samples: number[][];
  /** Elapsed seconds of the timed rounds. */
  seconds: number;
}

const hrnow = (): bigint => process.hrtime.bigint();

/** Seconds per run, averaged over `inner` back-to-back runs. */
async function once(side: Timed, now: () => bigint, inner: number): Promise<number> {
  if ('time' in side) {
    const s = await side.time(inner);
    if (!Number.isFinite(s) || s < 0) throw new Error(`self-timed run reported ${String(s)} seconds`);
    return s / inner;
  }
  const t0 = now();
  for (let i = 0; i < inner; i++) {
    const out = side.run();
    if (out !== null && typeof out === 'object' && typeof (out as { then?: unknown }).then === 'function') await out;
  }
  return Number(now() - t0) / 1e9 / inner;
}

/** Runs `sides` in interleaved rounds: `warmup` untimed, then timed until the budget is spent. */
export async function measureInterleaved(sides: readonly Timed[], options: MeasureOptions): Promise<Measured> {
  const now = options.now ?? hrnow;
  const { warmup, minRuns, maxRuns, seconds } = options.budget;
  const inner = Math.max(1, Math.floor(options.budget.inner));
  const samples: number[][] = sides.map(() => []);
  const k = sides.length;
  for (let w = 0; w < warmup; w++) {
    for (const side of sides) await once(side, now, inner);
  }
  const start = now();
  let elapsed = 0;
  for (let round = 0; round < maxRuns; round++) {
    if (round >= minRuns && elapsed >= seconds) break;
    for (let j = 0; j < k; j++) {
      const idx = (round + j) % k;
      (samples[idx] as number[]).push(await once(sides[idx] as Timed, now, inner));
    }
    elapsed = Number(now() - start) / 1e9;
  }
  return { samples, seconds: elapsed };
}

/** Per-round ratios a[i] / b[i]. */
export function pairRatios(a: readonly number[], b: readonly number[]): number[] {
  const n = Math.min(a.length, b.length);
  const out: number[] = [];
  for (let i = 0; i < n; i++) out.push((a[i] as number) / (b[i] as number));
  return out;
}
