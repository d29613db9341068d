import { join } from 'node:path';
import { Tensor } from '@ninodes/kernels';
import { fixturePath, readSafetensorsFile } from '@ninodes/test-safetensors';
import { describe, expect, it } from 'vitest';
import { withGuidance } from './guidance.js';
import { openH3Model } from './open-h3-model.js';

// The tiny audio+video H3 of fixtures/h3av: guidance against the two passes run by hand.
const dir = fixturePath('h3av', 'full');
const inputs = readSafetensorsFile(join(dir, 'inputs.safetensors')).tensors;
const f32 = (name: string): Tensor<'f32'> => {
  const t = inputs.get(name)!;
  return Tensor.fromArray('f32', t.shape, new Float32Array(t.bytes.slice().buffer));
};

describe('withGuidance', () => {
  it('returns v_neg + s·(v_prompt − v_neg) for video and audio, and the prompt velocity alone at s = 1', async () => {
    const { model, close } = openH3Model(join(dir, 'model.safetensors'));
    try {
      const context = f32('context');
      // The negative prompt's states: the same width, fewer tokens, other values.
      const negative = Tensor.fromArray('f32', [1, 3, context.shape[2] as number], context.data.slice(0, 3 * (context.shape[2] as number)).map((v) => -0.5 * v));
      const base = { video: f32('latent'), audio: f32('audio'), sigma: 0.9, sigmaNext: 0.8 };
      const c = await model.forwardStreams({ ...base, context });
      const cv = Float32Array.from(c.video.data);
      const ca = Float32Array.from(c.audio!.data);
      const u = await model.forwardStreams({ ...base, context: negative });
      const [uv, ua] = [Float32Array.from(u.video.data), Float32Array.from(u.audio!.data)];
      const guided = await withGuidance(model, negative, 3.5).forwardStreams!({ ...base, context });
      const want = (cc: Float32Array, uu: Float32Array) => uu.map((x, i) => x + 3.5 * ((cc[i] as number) - x));
      expect(Array.from(guided.video.data)).toEqual(Array.from(want(cv, uv)));
      expect(Array.from(guided.audio!.data)).toEqual(Array.from(want(ca, ua)));
      expect(Array.from((await withGuidance(model, negative, 1).forwardStreams!({ ...base, context })).video.data)).toEqual(Array.from(cv));
      expect(() => withGuidance(model, negative, 0)).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
    } finally {
      close();
    }
  });
});
