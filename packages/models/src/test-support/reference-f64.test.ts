import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { maxRelError } from '@ninodes/quant';
import { readSafetensorsFile, tensorF64 } from '@ninodes/test-safetensors';
import { type RefConfig, refAngles, refBlock } from './reference-f64.js';

const fixture = join(process.env.NINODES_FIXTURES ?? '', 'dit', 'h3_blocks.safetensors');

describe('float64 reference against the PyTorch H3 block fixture', () => {
  const ck = readSafetensorsFile(fixture);
  const meta = JSON.parse(ck.metadata.config ?? '{}') as Record<string, number>;
  const rot = Number(ck.metadata.rot_dim);
  const cfg: RefConfig = {
    layers: meta.layers as number,
    hidden: meta.hidden as number,
    heads: meta.heads as number,
    headDim: meta.head_dim as number,
    ffn: meta.ffn as number,
    tDim: meta.t_dim as number,
    channels: 24,
    ropeLen: rot / 6,
    eps: Number(ck.metadata.eps),
    qkEps: Number(ck.metadata.qk_eps),
    finalEps: 1e-5,
    freqDim: 256,
  };
  const w = (name: string): Float64Array => tensorF64(ck, name);

  it('two blocks land on out.final_f64', () => {
    let x = w('in.x');
    const s = x.length / cfg.hidden;
    for (let l = 0; l < cfg.layers; l++) x = refBlock(w, `blocks.${l}`, cfg, x, s, w('in.t_emb'), w('in.rope_angles'), rot);
    expect(maxRelError(x, w('out.final_f64'))).toBeLessThan(1e-8);
  });

  it('rope angles are positions times inv_freq per axis, halves duplicated', () => {
    const got = refAngles(w('in.positions'), w('in.rope_inv_freq'));
    expect(maxRelError(got, w('in.rope_angles'))).toBeLessThan(1e-6);
  });
});
