/**
 * Robust summary statistics for timing samples. Medians and quartiles rather than means because a
 * shared, noisy machine produces long right tails (preemption, page faults) that would drag a mean.
 */
export interface Stats {
  n: number;
  median: number;
  min: number;
  max: number;
  mean: number;
  /** Median absolute deviation from the median (unscaled). */
  mad: number;
  /** Quartiles (linear interpolation between order statistics). */
  q25: number;
  q75: number;
  /** Interquartile range, q75 - q25. */
  iqr: number;
  /** Relative spread: IQR / median (0 when the median is 0). The noise figure `--compare` uses. */
  spread: number;
}

/** Quantile by linear interpolation between order statistics of an already sorted array (type 7). */
export function quantileSorted(sorted: readonly number[], q: number): number {
  if (sorted.length === 0) return Number.NaN;
  const pos = (sorted.length - 1) * q;
  const lo = Math.floor(pos);
  const hi = Math.ceil(pos);
  const a = sorted[lo] as number;
  const b = sorted[hi] as number;
  return a + (b - a) * (pos - lo);
}

export function median(values: readonly number[]): number {
  return quantileSorted([...values].sort((a, b) => a - b), 0.5);
}

export function summarize(values: readonly number[]): Stats {
  const sorted = [...values].sort((a, b) => a - b);
  const n = sorted.length;
  if (n === 0) {
    return { n: 0, median: Number.NaN, min: Number.NaN, max: Number.NaN, mean: Number.NaN, mad: Number.NaN, q25: Number.NaN, q75: Number.NaN, iqr: Number.NaN, spread: Number.NaN };
  }
  const med = quantileSorted(sorted, 0.5);
  const mad = median(sorted.map((v) => Math.abs(v - med)));
  const q25 = quantileSorted(sorted, 0.25);
  const q75 = quantileSorted(sorted, 0.75);
  const iqr = q75 - q25;
  let sum = 0;
  for (const v of sorted) sum += v;
  return {
    n,
    median: med,
    min: sorted[0] as number,
    max: sorted[n - 1] as number,
    mean: sum / n,
    mad,
    q25,
    q75,
    iqr,
    spread: med === 0 ? 0 : iqr / Math.abs(med),
  };
}
