import { join } from 'node:path';
import { Tensor } from '@ninodes/kernels';
import { describe, expect, it } from 'vitest';
import { H3Block } from './h3-block.js';
import { castF32 } from './ops.js';
import { testLinearProvider } from './test-support/test-source.js';
import { openSafetensors } from '@ninodes/memory';
import { blockFixtureConfig } from './test-support/fixture-config.js';
import { maxRelError } from '@ninodes/quant';

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

  it('computes only the adaLN modality rows a forward reads, bit for bit the whole projection\'s', async () => {
    const d = config.hidden;
    const x = f32('in.x');
    const s = x.shape[0] as number;
    const half = Math.floor(s / 2);
    const t0 = f32('in.t_emb');
    // Two timestep rows (the second another embedding), so segments read rows of timestep 1 too.
    const t2 = Tensor.fromArray('f32', [2, t0.shape[t0.rank - 1] as number], Float32Array.from([...t0.data, ...t0.data.map((v) => 0.5 * v - 0.1)]));
    const name = 'blocks.0.adaln_proj.linear';
    const cases = [
      { segs: undefined, t: t0, rows: [`${name}[0, ${6 * d})`] },
      // text at timestep 1, video at timestep 0: modalities 0..1
      { segs: [{ start: 0, stop: half, row: 3 + 1 }, { start: half, stop: s, row: 0 }], t: t2, rows: [`${name}[0, ${12 * d})`] },
      // audio at both timesteps: modality 2 alone
      { segs: [{ start: 0, stop: half, row: 2 }, { start: half, stop: s, row: 3 + 2 }], t: t2, rows: [`${name}[${12 * d}, ${18 * d})`] },
      { segs: [{ start: 0, stop: half, row: 1 }, { start: half, stop: s, row: 3 + 2 }], t: t2, rows: [`${name}[${6 * d}, ${18 * d})`] },
      // video and audio span all three: the whole projection
      { segs: [{ start: 0, stop: half, row: 2 }, { start: half, stop: s, row: 3 }], t: t2, rows: [] },
    ];
    for (const c of cases) {
      const parts = testLinearProvider(source);
      const base = testLinearProvider(source);
      // The same provider without forwardRows (like a tensor-parallel gather): every row computed.
      const whole = { linear: (spec: Parameters<typeof base.linear>[0]) => {
        const op = base.linear(spec);
        return { spec: op.spec, format: op.format, forward: (v: Tensor<'f32'>, o?: Tensor<'f32'>) => op.forward(v, o), materializedWeight: () => op.materializedWeight() };
      } };
      const got = await new H3Block(config, 0, parts, f32).forward(x, c.t, f32('in.rope_angles'), undefined, c.segs);
      const want = await new H3Block(config, 0, whole, f32).forward(x, c.t, f32('in.rope_angles'), undefined, c.segs);
      expect(parts.rowCalls).toEqual(c.rows);
      expect(base.rowCalls).toEqual([]);
      expect(got.data).toEqual(want.data);
    }
  });

  it('rejects a wrongly shaped input with SHAPE_MISMATCH', async () => {
    const block = new H3Block(config, 0, testLinearProvider(source), f32);
    await expect(block.forward(Tensor.zeros('f32', [4, 8]), f32('in.t_emb'), f32('in.rope_angles'))).rejects.toMatchObject({ code: 'SHAPE_MISMATCH' });
  });
});
