import type { Params, Target } from './suite.js';
import type { ContenderResult, RatioResult, TargetResult } from './results-schema.js';

/** Does an instance's parameters match a target's `when` filter? */
export function paramsMatch(params: Params, when: Params | undefined): boolean {
  if (!when) return true;
  return Object.entries(when).every(([k, v]) => params[k] === v);
}

export interface MeasuredCase {
  ours: ContenderResult;
  ratios: readonly RatioResult[];
  metrics: Readonly<Record<string, { value: number }>>;
}

/** The measured value a target is about, or a note saying why there is none. */
function measuredValue(target: Target, m: MeasuredCase): { value: number | null; note?: string } {
  const on = target.on;
  if ('ratio' in on) {
    const r = m.ratios.find((x) => x.against === on.ratio);
    if (!r || r.timeRatio.median === null) return { value: null, note: `no ratio against ${on.ratio} (contender missing or failed)` };
    return { value: r.timeRatio.median };
  }
  if ('metric' in on) {
    const v = m.metrics[on.metric];
    return v ? { value: v.value } : { value: null, note: `metric ${on.metric} not measured` };
  }
  if ('time' in on) {
    return m.ours.stats?.median != null ? { value: m.ours.stats.median } : { value: null, note: 'ours has no samples' };
  }
  const t = m.ours.throughput.find((x) => x.unit === on.throughput);
  return t ? { value: t.value } : { value: null, note: `no ${on.throughput} throughput (case declares no matching work)` };
}

export function evaluateTargets(targets: readonly Target[], params: Params, m: MeasuredCase): TargetResult[] {
  return targets
    .filter((t) => paramsMatch(params, t.when))
    .map((t) => {
      const { value, note } = measuredValue(t, m);
      const met = value === null ? null : t.op === '<=' ? value <= t.value : value >= t.value;
      return { source: t.source, description: t.description, on: t.on, op: t.op, value: t.value, measured: value, met, ...(note ? { note } : {}) };
    });
}
