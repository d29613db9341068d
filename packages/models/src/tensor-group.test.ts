import { describe, expect, it } from 'vitest';
import { bytesByGroup, tensorGroup } from './tensor-group.js';

describe('tensorGroup', () => {
  it('names blocks of every family and top-level modules', () => {
    expect(tensorGroup('model.diffusion_model.blocks.12.attn.qkv_proj.weight', 'model.diffusion_model.')).toBe('blocks.12');
    expect(tensorGroup('token_refiner.blocks.1.mlp.fc1.weight')).toBe('token_refiner.blocks.1');
    expect(tensorGroup('double_blocks.3.img_attn.qkv.weight')).toBe('double_blocks.3');
    expect(tensorGroup('single_blocks.0.linear1.weight')).toBe('single_blocks.0');
    expect(tensorGroup('final_layer.video_out.weight')).toBe('final_layer');
    expect(tensorGroup('rope.inv_freq')).toBe('rope');
    expect(tensorGroup('scalar')).toBe('scalar');
  });

  it('sums bytes per group', () => {
    const m = bytesByGroup([
      { name: 'blocks.0.a', byteLength: 3 },
      { name: 'blocks.0.b', byteLength: 4 },
      { name: 'blocks.1.a', byteLength: 5 },
      { name: 'head.w', byteLength: 1 },
    ]);
    expect([...m]).toEqual([['blocks.0', 7], ['blocks.1', 5], ['head', 1]]);
  });
});
