import { performance } from 'node:perf_hooks';

/** Op families a step's time is split into (the bench's "share of step time per op family"). */
export type OpFamily = 'linear' | 'attention' | 'norm' | 'rope' | 'elementwise' | 'layout';

export const OP_FAMILIES: readonly OpFamily[] = ['linear', 'attention', 'norm', 'rope', 'elementwise', 'layout'];

/** Receives the wall time of each op the model runs; absent, the model measures nothing. */
export interface OpProfiler {
  add(family: OpFamily, seconds: number): void;
}

/** An accumulating profiler: totals per family and call counts. */
export function createOpProfiler(): OpProfiler & { readonly seconds: Record<OpFamily, number>; readonly calls: Record<OpFamily, number>; reset(): void } {
  const zero = (): Record<OpFamily, number> => Object.fromEntries(OP_FAMILIES.map((f) => [f, 0])) as Record<OpFamily, number>;
  const seconds = zero();
  const calls = zero();
  return {
    seconds,
    calls,
    add(family, s) {
      seconds[family] += s;
      calls[family] += 1;
    },
    reset() {
      for (const f of OP_FAMILIES) {
        seconds[f] = 0;
        calls[f] = 0;
      }
    },
  };
}

/** Runs fn, reporting its time to the profiler when there is one. */
export function timed<T>(profiler: OpProfiler | undefined, family: OpFamily, fn: () => T): T {
  if (!profiler) return fn();
  const t0 = performance.now();
  const out = fn();
  profiler.add(family, (performance.now() - t0) / 1000);
  return out;
}

export async function timedAsync<T>(profiler: OpProfiler | undefined, family: OpFamily, fn: () => Promise<T>): Promise<T> {
  if (!profiler) return fn();
  const t0 = performance.now();
  const out = await fn();
  profiler.add(family, (performance.now() - t0) / 1000);
  return out;
}
