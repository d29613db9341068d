import { describe, expect, it } from 'vitest';
import { buildCharts } from './charts.js';
import type { CaseResult } from './results-schema.js';

// The smallest CaseResult the chart builders read: one metric, its parameters.
const result = (seq: number, value: number): CaseResult =>
  ({ suite: 's', case: 'attention', parameters: { seq, dim: 64 }, contenders: [], ratios: [], metrics: { extra: { value, unit: 'bytes', better: 'lower' } } }) as unknown as CaseResult;

describe('metric charts', () => {
  const [chart] = buildCharts('s', [{ kind: 'metric', title: 'extra RSS', metric: 'extra', cases: ['attention'], x: 'seq' }], [result(256, 0), result(512, 2 ** 20)]);
  const layers = (chart!.spec as unknown as { layer: Array<{ mark: { type: string }; encoding: { x: { title: string } } }> }).layer;

  it('name their x axis after the parameter on it', () => {
    expect(layers[0]!.encoding.x.title).toBe('seq');
  });

  it('write each value on its bar, so bars of 0 still show a number', () => {
    expect(layers.map((l) => l.mark.type)).toContain('text');
  });
});
