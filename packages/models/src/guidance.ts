import { Tensor } from '@ninodes/kernels';
import { ModelsError } from './error-codes.js';
import type { H3StreamsInput, H3StreamsOutput, VelocityModel } from './h3-model.js';

/** u + scale·(c − u), element by element in float32, into `out` when it has the shape. */
function guide(c: Tensor<'f32'>, u: Tensor<'f32'>, scale: number, out?: Tensor<'f32'>): Tensor<'f32'> {
  const y = out !== undefined && out.numel === c.numel ? out : Tensor.zeros('f32', c.shape);
  const [cd, ud, yd] = [c.data, u.data, y.data];
  for (let i = 0; i < yd.length; i++) yd[i] = (ud[i] as number) + scale * ((cd[i] as number) - (ud[i] as number));
  return y;
}

function copy(t: Tensor<'f32'>): Tensor<'f32'> {
  return Tensor.fromArray('f32', t.shape, Float32Array.from(t.data));
}

/**
 * Classifier-free guidance around a text-conditioned velocity model: every step runs the model on
 * the prompt's states and on `negative`'s (the negative prompt's), and returns
 * v_neg + scale·(v_prompt − v_neg) for the video and the audio stream. scale 1 is the prompt's
 * velocity alone (H3's docs sample with 1: no second pass is worth making then).
 */
export function withGuidance(model: VelocityModel, negative: Tensor<'f32'>, scale: number): VelocityModel {
  const inner = model.forwardStreams?.bind(model);
  if (inner === undefined) {
    throw new ModelsError('INVALID_ARGUMENT', 'classifier-free guidance needs a text-conditioned model (forwardStreams)', { value: 'forwardStreams', where: 'withGuidance', hint: 'run with guidance 1' });
  }
  if (!Number.isFinite(scale) || scale <= 0) {
    throw new ModelsError('INVALID_ARGUMENT', `the guidance scale must be a positive number, got ${String(scale)}`, { value: scale, where: 'cfg', hint: '1 turns guidance off; H3 samples with 1' });
  }
  const streams = async (input: H3StreamsInput): Promise<H3StreamsOutput> => {
    const { videoOut, ...rest } = input;
    // Copied before the second pass: a model may hand back buffers it reuses from call to call.
    const c = await inner(rest);
    const cv = copy(c.video);
    const ca = c.audio === undefined ? undefined : copy(c.audio);
    const u = await inner({ ...rest, context: negative });
    const video = guide(cv, u.video, scale, videoOut);
    return ca === undefined || u.audio === undefined ? { video } : { video, audio: guide(ca, u.audio, scale) };
  };
  return {
    latentChannels: model.latentChannels,
    audioChannels: model.audioChannels,
    forward: async (latent, sigma) => (await streams({ video: latent, sigma })).video,
    forwardStreams: streams,
  };
}
