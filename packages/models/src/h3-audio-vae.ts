import { Tensor, conv1d, convTranspose1d } from '@ninodes/kernels';
import type { CheckpointSource } from '@ninodes/memory';
import { openCheckpoint } from '@ninodes/quant';
import { ModelsError } from './error-codes.js';
import { castF32 } from './ops.js';

/*
 * MiniMax-H3's audio VAE decoder (facts from stable-diffusion.cpp's minimax_h3_audio_vae.hpp and
 * ltx_audio_vae.hpp): each stereo stream of the latent [1, 32, 2, T] is un-normalized with the file's
 * latents_mean / latents_std, projected by dec_in_proj (1×1 conv) and vocoded by a BigVGAN: conv_pre,
 * seven transposed-conv upsamplings (×5 ×5 ×2 ×2 ×2 ×2 ×2 = 800 samples per latent frame), each
 * followed by the mean of three AMP blocks (anti-aliased SnakeBeta activations and dilated convs),
 * a last activation, conv_post, clamp to [-1, 1]. 32 kHz.
 */

export const H3_AUDIO_SAMPLE_RATE = 32000;
export const H3_AUDIO_LATENT_CHANNELS = 32;
const RATES = [5, 5, 2, 2, 2, 2, 2] as const;
const KERNELS = [9, 9, 4, 4, 4, 4, 4] as const;
const RES_KERNELS = [3, 7, 11] as const;
const DILATIONS = [1, 3, 5] as const;
/** Samples per latent frame: the product of the upsampling rates. */
export const H3_AUDIO_HOP = RATES.reduce((a, b) => a * b, 1);

/** Audio latent frames for `frames` video frames at `fps` (stable-diffusion.cpp: 40 per second, at least 1). */
export function h3AudioLatentFrames(frames: number, fps = 24): number {
  return Math.max(1, Math.round((frames * 40) / fps));
}

function findPrefix(source: CheckpointSource): string {
  const hits = source.entries().filter((e) => e.name.endsWith('dec_in_proj.weight'));
  if (hits.length !== 1) {
    throw new ModelsError('ARCHITECTURE_MISMATCH', `${source.path} is not a MiniMax-H3 audio VAE: ${hits.length === 0 ? 'it has no dec_in_proj.weight' : 'it has several decoders'}`, {
      value: hits.map((e) => e.name),
      where: source.path,
      hint: 'pass the H3 audio VAE file (--audio-vae)',
    });
  }
  return hits[0]!.name.slice(0, -'dec_in_proj.weight'.length);
}

/** Every tensor name the decoder reads (without prefix). */
export function h3AudioDecoderTensors(): string[] {
  const names = ['latents_mean', 'latents_std', 'dec_in_proj.weight', 'dec_in_proj.bias', 'decoder.conv_pre.weight', 'decoder.conv_pre.bias'];
  const activation = (p: string): string[] => ['act.alpha', 'act.beta', 'upsample.filter', 'downsample.lowpass.filter'].map((n) => `${p}${n}`);
  for (let i = 0; i < RATES.length; i++) {
    names.push(`decoder.ups.${i}.0.weight`, `decoder.ups.${i}.0.bias`);
    for (let j = 0; j < RES_KERNELS.length; j++) {
      const p = `decoder.resblocks.${3 * i + j}.`;
      for (let m = 0; m < 3; m++) names.push(`${p}convs1.${m}.weight`, `${p}convs1.${m}.bias`, `${p}convs2.${m}.weight`, `${p}convs2.${m}.bias`);
      for (let m = 0; m < 6; m++) names.push(...activation(`${p}activations.${m}.`));
    }
  }
  names.push(...activation('decoder.activation_post.'), 'decoder.conv_post.weight');
  return names;
}

/** MiniMax-H3's audio VAE decoder: an audio latent [1, 32, 2, T] -> stereo samples [2, 800·T] at 32 kHz. */
export class H3AudioDecoder {
  readonly prefix: string;
  private readonly source: CheckpointSource;
  private readonly params = new Map<string, Tensor<'f32'>>();

  private constructor(source: CheckpointSource, prefix: string) {
    this.source = source;
    this.prefix = prefix;
  }

  /** Checks every tensor the decoder reads is in the file (TENSOR_NOT_FOUND names the first missing); reads none. */
  static create(source: CheckpointSource): H3AudioDecoder {
    const prefix = findPrefix(source);
    for (const n of h3AudioDecoderTensors()) {
      if (!source.has(`${prefix}${n}`)) throw new ModelsError('TENSOR_NOT_FOUND', `${source.path} has no tensor ${prefix}${n}, which the H3 audio VAE decoder needs`, { value: `${prefix}${n}`, where: source.path });
    }
    const mean = source.entry(`${prefix}latents_mean`).shape;
    if (mean.reduce((a, b) => a * b, 1) !== H3_AUDIO_LATENT_CHANNELS) {
      throw new ModelsError('ARCHITECTURE_INCONSISTENT', `${source.path}: latents_mean has [${mean.join(', ')}], not ${H3_AUDIO_LATENT_CHANNELS} channels`, { value: mean, where: `${prefix}latents_mean` });
    }
    return new H3AudioDecoder(source, prefix);
  }

  private param(name: string): Tensor<'f32'> {
    let t = this.params.get(name);
    if (t === undefined) {
      t = castF32(this.source.tensor(`${this.prefix}${name}`));
      this.params.set(name, t);
    }
    return t;
  }

  private conv(x: Tensor<'f32'>, p: string, padding: number, dilation = 1, bias = true): Promise<Tensor<'f32'>> {
    return conv1d(x, this.param(`${p}weight`), bias ? this.param(`${p}bias`) : undefined, { padding, dilation });
  }

  /** The anti-aliased SnakeBeta of BigVGAN: 2× up (low-pass), x + sin²(x·e^α)/(e^β + 1e-9), 2× down (low-pass). */
  private activation(x: Tensor<'f32'>, p: string): Tensor<'f32'> {
    const [c, len] = x.shape as [number, number];
    const up = this.param(`${p}upsample.filter`).data;
    const down = this.param(`${p}downsample.lowpass.filter`).data;
    const alpha = this.param(`${p}act.alpha`).data;
    const beta = this.param(`${p}act.beta`).data;
    const k = up.length;
    const out = new Float32Array(c * len);
    const padded = len + 10;
    const upLen = (padded - 1) * 2 + k;
    const wide = new Float64Array(upLen);
    const act = new Float64Array(2 * len + 11);
    for (let ch = 0; ch < c; ch++) {
      const row = x.data.subarray(ch * len, (ch + 1) * len);
      // replicate pad 5, transposed conv with stride 2, times 2
      wide.fill(0);
      for (let t = 0; t < padded; t++) {
        const v = row[Math.min(len - 1, Math.max(0, t - 5))] as number;
        for (let j = 0; j < k; j++) wide[2 * t + j] = (wide[2 * t + j] as number) + v * (up[j] as number);
      }
      const a = Math.exp(alpha[ch] as number);
      const b = Math.exp(beta[ch] as number) + 1e-9;
      // crop 15 each side (2·len samples), snake, replicate pad (5, 6)
      for (let t = 0; t < 2 * len; t++) {
        const h = 2 * (wide[15 + t] as number);
        const s = Math.sin(h * a);
        act[5 + t] = h + (s * s) / b;
      }
      for (let t = 0; t < 5; t++) act[t] = act[5] as number;
      for (let t = 0; t < 6; t++) act[5 + 2 * len + t] = act[4 + 2 * len] as number;
      // low-pass conv with stride 2
      for (let t = 0; t < len; t++) {
        let acc = 0;
        for (let j = 0; j < down.length; j++) acc += (act[2 * t + j] as number) * (down[j] as number);
        out[ch * len + t] = acc;
      }
    }
    return Tensor.fromArray('f32', [c, len], out);
  }

  private async stream(z: Tensor<'f32'>): Promise<Float32Array> {
    let x = await this.conv(z, 'dec_in_proj.', 0);
    x = await this.conv(x, 'decoder.conv_pre.', 3);
    for (let i = 0; i < RATES.length; i++) {
      const r = RATES[i] as number;
      const k = KERNELS[i] as number;
      x = await convTranspose1d(x, this.param(`decoder.ups.${i}.0.weight`), this.param(`decoder.ups.${i}.0.bias`), { stride: r, padding: (k - r) / 2 });
      const total = new Float32Array(x.numel);
      for (let j = 0; j < RES_KERNELS.length; j++) {
        const rk = RES_KERNELS[j] as number;
        const p = `decoder.resblocks.${3 * i + j}.`;
        let h = x;
        for (let m = 0; m < DILATIONS.length; m++) {
          const d = DILATIONS[m] as number;
          let t = this.activation(h, `${p}activations.${2 * m}.`);
          t = await this.conv(t, `${p}convs1.${m}.`, (rk * d - d) / 2, d);
          t = this.activation(t, `${p}activations.${2 * m + 1}.`);
          t = await this.conv(t, `${p}convs2.${m}.`, Math.floor(rk / 2));
          const sum = new Float32Array(h.numel);
          for (let q = 0; q < sum.length; q++) sum[q] = (h.data[q] as number) + (t.data[q] as number);
          h = Tensor.fromArray('f32', h.shape, sum);
        }
        for (let q = 0; q < total.length; q++) total[q] = (total[q] as number) + (h.data[q] as number);
      }
      for (let q = 0; q < total.length; q++) total[q] = (total[q] as number) / RES_KERNELS.length;
      x = Tensor.fromArray('f32', x.shape, total);
    }
    const y = await this.conv(this.activation(x, 'decoder.activation_post.'), 'decoder.conv_post.', 3, 1, false);
    return y.data.map((v) => Math.min(1, Math.max(-1, v)));
  }

  /** Latent [1, 32, 2, T] -> samples [2, 800·T] (left, right) in [-1, 1] at 32 kHz. */
  async decode(latent: Tensor<'f32'>): Promise<Tensor<'f32'>> {
    if (latent.rank !== 4 || latent.shape[0] !== 1 || latent.shape[1] !== H3_AUDIO_LATENT_CHANNELS || latent.shape[2] !== 2 || latent.numel === 0) {
      throw new ModelsError('SHAPE_MISMATCH', `the H3 audio VAE decodes a latent [1, ${H3_AUDIO_LATENT_CHANNELS}, 2, T], got [${latent.shape.join(', ')}]`, { value: latent.shape, where: 'latent' });
    }
    const t = latent.shape[3] as number;
    const mean = this.param('latents_mean').data;
    const std = this.param('latents_std').data;
    const out = new Float32Array(2 * H3_AUDIO_HOP * t);
    for (let s = 0; s < 2; s++) {
      const z = new Float32Array(H3_AUDIO_LATENT_CHANNELS * t);
      for (let c = 0; c < H3_AUDIO_LATENT_CHANNELS; c++) {
        for (let i = 0; i < t; i++) z[c * t + i] = Math.fround((latent.data[(c * 2 + s) * t + i] as number) * (std[c] as number)) + (mean[c] as number);
      }
      const wave = await this.stream(Tensor.fromArray('f32', [H3_AUDIO_LATENT_CHANNELS, t], z));
      if (wave.length !== H3_AUDIO_HOP * t) throw new ModelsError('INTERNAL', `the audio decoder made ${wave.length} samples of ${t} latent frames, not ${H3_AUDIO_HOP * t}`, { value: wave.length });
      out.set(wave, s * H3_AUDIO_HOP * t);
    }
    return Tensor.fromArray('f32', [2, H3_AUDIO_HOP * t], out);
  }
}

export interface OpenedH3AudioDecoder {
  readonly decoder: H3AudioDecoder;
  readonly source: CheckpointSource;
  close(): void;
}

/** Opens an H3 audio VAE file; closes it again if it is not one. */
export function openH3AudioDecoder(path: string): OpenedH3AudioDecoder {
  const source = openCheckpoint(path);
  try {
    return { decoder: H3AudioDecoder.create(source), source, close: () => source.close() };
  } catch (error) {
    source.close();
    throw error;
  }
}
