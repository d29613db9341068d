// Test helper: MiniMax-H3's ModelLayout as models' layoutOf makes it from a synthetic checkpoint
// (video only, bf16 with ComfyUI's fp32 islands), read from the JSON models commits and checks
// (packages/models/fixtures/layouts, made by models' layout-fixtures test): distorch may not
// import models. The shape numbers below are what the tests compute their expectations from.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ModelLayout } from '@ninodes/quant';

export interface H3Shape {
  layers: number;
  hidden: number;
  heads: number;
  headDim: number;
  ffn: number;
  tDim: number;
  timeHidden: number;
}

export const H3_FULL: H3Shape = { layers: 50, hidden: 5376, heads: 56, headDim: 128, ffn: 14336, tDim: 2688, timeHidden: 5376 };
export const H3_SMALL: H3Shape = { layers: 10, hidden: 1536, heads: 12, headDim: 128, ffn: 4096, tDim: 768, timeHidden: 1536 };

const FIXTURES: readonly [H3Shape, string][] = [
  [H3_FULL, 'h3-full'],
  [H3_SMALL, 'h3-small-video'],
];

function read(name: string): ModelLayout {
  return JSON.parse(readFileSync(join(process.env.NINODES_REPO_ROOT as string, 'packages', 'models', 'fixtures', 'layouts', `${name}.json`), 'utf8')) as ModelLayout;
}

/** The layout of the preset with these widths, cut to its first `s.layers` blocks (at most the preset's). */
export function h3Layout(s: H3Shape): ModelLayout {
  const fixture = FIXTURES.find(([f]) => f.hidden === s.hidden && f.heads === s.heads && f.headDim === s.headDim && f.ffn === s.ffn && f.tDim === s.tDim && f.timeHidden === s.timeHidden && s.layers <= f.layers);
  if (fixture === undefined) throw new Error(`no layout fixture has the widths of ${JSON.stringify(s)}`);
  const layout = read(fixture[1]);
  const blocks = new Set(Array.from({ length: s.layers }, (_, i) => `blocks.${i}`));
  return { ...layout, groups: layout.groups.filter((g) => g.kind !== 'block' || blocks.has(g.name)) };
}
