// The H3 layouts that distorch's and tp's tests plan with (they may not import models), made here by
// the real layout function from synthetic checkpoints and committed as JSON under
// fixtures/layouts/. This test fails when layoutOf would now make another layout;
// NINODES_UPDATE_FIXTURES=1 writes them anew.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type ModelLayout, type QuantizeTarget, openCheckpoint, quantize } from '@ninodes/quant';
import { openSafetensors } from '@ninodes/memory';
import { afterAll, describe, expect, it } from 'vitest';
import { H3_DEFAULTS, type H3Config } from './h3-config.js';
import { layoutOf } from './h3-layout.js';
import { H3_PRESETS } from './presets.js';
import { writeSyntheticH3Checkpoint } from './synthetic-checkpoint.js';

const dir = mkdtempSync(join(tmpdir(), 'ninodes-layout-fixtures-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const fixtures = join(process.env.NINODES_REPO_ROOT as string, 'packages', 'models', 'fixtures', 'layouts');

// Video-only (no text or audio stream), bf16 with ComfyUI's fp32 islands, as the tests plan for.
const { audioChannels: _a, textDim: _t, refinerLayers: _r, ...smallVideo } = H3_PRESETS['h3-small'].config;
// tp's shard-plan tests: two small blocks, stored bf16 (the synthetic writer), int8 convrot or Q4_K
// (quant's converters), and widths that do or do not split.
const tp = (over: Partial<H3Config>): H3Config => ({ ...H3_DEFAULTS, layers: 2, hidden: 512, heads: 4, headDim: 128, ffn: 1024, tDim: 256, timeHidden: 512, ropeLen: 16, ...over });

interface Fixture {
  readonly config: H3Config;
  /** Converted by quant from the synthetic bf16 checkpoint. */
  readonly format?: QuantizeTarget;
}

const LAYOUTS: Record<string, Fixture> = {
  'h3-small-video': { config: smallVideo },
  'h3-full': { config: H3_PRESETS['h3-full'].config },
  'tp-bf16': { config: tp({}) },
  'tp-int8': { config: tp({}), format: 'int8_convrot' },
  'tp-q4k': { config: tp({}), format: 'q4_k' },
  'tp-wide-q4k': { config: tp({ headDim: 64, hidden: 1024, ffn: 1536, timeHidden: 1024, ropeLen: 8 }), format: 'q4_k' },
  'tp-6-heads': { config: tp({ heads: 6, headDim: 64, hidden: 384, timeHidden: 384, ropeLen: 8 }) },
  'tp-ffn-1000': { config: tp({ heads: 16, headDim: 64, hidden: 1024, ffn: 1000, timeHidden: 1024, ropeLen: 8 }) },
};

async function layoutFor(name: string, { config, format }: Fixture): Promise<ModelLayout> {
  let path = join(dir, `${name}.safetensors`);
  await writeSyntheticH3Checkpoint(path, { config, sparse: format === undefined && config.layers > 2 });
  if (format !== undefined) {
    const stored = openSafetensors(path);
    path = join(dir, `${name}-${format}.${format === 'q4_k' ? 'gguf' : 'safetensors'}`);
    try {
      await quantize(stored, path, { format });
    } finally {
      stored.close();
    }
  }
  const source = openCheckpoint(path);
  try {
    const { architecture, prefix, groups } = layoutOf(source);
    return { architecture, prefix, groups };
  } finally {
    source.close();
  }
}

describe('layout fixtures for the packages that may not import models', () => {
  it.each(Object.entries(LAYOUTS))('%s.json is what layoutOf makes', async (name, fixture) => {
    const file = join(fixtures, `${name}.json`);
    const made = JSON.parse(JSON.stringify(await layoutFor(name, fixture))) as ModelLayout;
    if (process.env.NINODES_UPDATE_FIXTURES === '1') writeFileSync(file, `${JSON.stringify(made)}\n`);
    expect(JSON.parse(readFileSync(file, 'utf8'))).toEqual(made);
  });
});
