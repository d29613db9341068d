import { join } from 'node:path';
import { Tensor } from '@ninodes/kernels';
import { describe, expect, it } from 'vitest';
import { H3Block } from './h3-block.js';
import { castF32 } from './ops.js';
import { maxRelError } from './test-support/compare.js';
import { testLinearProvider } from './test-support/test-source.js';
import { openSafetensors } from '@ninodes/memory';
import { blockFixtureConfig } from './test-support/fixture-config.js';

const fixture = join(process.env.NINODES_FIXTURES ?? '', 'dit', 'h3_blocks.safetensors');

describe('H3Block against the PyTorch fixture', () => {
  const source = openSafetensors(fixture);
  const config = blockFixtureConfig(source.metadata);
  const f32 = (name: string): Tensor<'f32'> => castF32(source.tensor(name));

  it('two blocks land within 1e-5 relative of out.final_f64 and track the fp32 outputs', async () => {
    const provider = testLinearProvider(source);
    let x = f32('in.x');
    const outs: Tensor<'f32'>[] = [];
    for (let i = 0; i < config.layers; i++) {
      const block = new H3Block(config, i, provider, f32);
      x = await block.forward(x, f32('in.t_emb'), f32('in.rope_angles'));
      outs.push(x);
    }
    const final = source.tensor('out.final_f64') as Tensor<'f64'>;
    const err = maxRelError(x.data, final.data);
    if (process.env.NINODES_VERBOSE) console.log(`fixture blocks: max relative error vs out.final_f64: ${err}`);
    expect(err).toBeLessThan(1e-5);
    expect(maxRelError((outs[0] as Tensor<'f32'>).data, f32('out.block0').data)).toBeLessThan(1e-5);
    expect(provider.calls).toEqual([0, 1].flatMap((i) => ['adaln_proj.linear', 'attn.qkv_proj', 'attn.out_proj', 'mlp.fc1', 'mlp.fc2'].map((n) => `blocks.${i}.${n}`)));
  });

  it('rejects a wrongly shaped input with SHAPE_MISMATCH', async () => {
    const block = new H3Block(config, 0, testLinearProvider(source), f32);
    await expect(block.forward(Tensor.zeros('f32', [4, 8]), f32('in.t_emb'), f32('in.rope_angles'))).rejects.toMatchObject({ code: 'SHAPE_MISMATCH' });
  });
});
