// The H3 layouts that distorch's and tp's tests plan with (they may not import models), made here by
// the real layout function from synthetic checkpoints and committed as JSON under
// fixtures/layouts/. This test fails when layoutOf would now make another layout;
// NINODES_UPDATE_FIXTURES=1 writes them anew.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ModelLayout } from '@ninodes/quant';
import { openSafetensors } from '@ninodes/memory';
import { afterAll, describe, expect, it } from 'vitest';
import type { H3Config } from './h3-config.js';
import { layoutOf } from './h3-layout.js';
import { H3_PRESETS } from './presets.js';
import { writeSyntheticH3Checkpoint } from './synthetic-checkpoint.js';

const dir = mkdtempSync(join(tmpdir(), 'ninodes-layout-fixtures-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const fixtures = join(process.env.NINODES_REPO_ROOT as string, 'packages', 'models', 'fixtures', 'layouts');

// Video-only (no text or audio stream), bf16 with ComfyUI's fp32 islands, as the tests plan for.
const { audioChannels: _a, textDim: _t, refinerLayers: _r, ...smallVideo } = H3_PRESETS['h3-small'].config;
const LAYOUTS: Record<string, H3Config> = {
  'h3-small-video': smallVideo,
  'h3-full': H3_PRESETS['h3-full'].config,
};

async function layoutFor(name: string, config: H3Config): Promise<ModelLayout> {
  const path = join(dir, `${name}.safetensors`);
  await writeSyntheticH3Checkpoint(path, { config, sparse: true });
  const source = openSafetensors(path);
  try {
    const { architecture, prefix, groups } = layoutOf(source);
    return { architecture, prefix, groups };
  } finally {
    source.close();
  }
}

describe('layout fixtures for the packages that may not import models', () => {
  it.each(Object.entries(LAYOUTS))('%s.json is what layoutOf makes', async (name, config) => {
    const file = join(fixtures, `${name}.json`);
    const made = JSON.parse(JSON.stringify(await layoutFor(name, config))) as ModelLayout;
    if (process.env.NINODES_UPDATE_FIXTURES === '1') writeFileSync(file, `${JSON.stringify(made)}\n`);
    expect(JSON.parse(readFileSync(file, 'utf8'))).toEqual(made);
  });
});
