import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { SafetensorsFile, type TensorSource, writeSafetensors } from '@ninodes/memory';
import { ModelsError } from './error-codes.js';
import { H3_VAE_LATENT_CHANNELS, H3_VAE_PATCH } from './h3-video-vae.js';
import { GaussianStream, hashSeed } from './noise.js';
import { type H3PresetName, h3Preset } from './presets.js';
import { QWEN3_H3 } from './qwen3-config.js';

/*
 * Synthetic text encoder and video VAE checkpoints to pair with a synthetic H3 DiT (presets): random
 * weights under the real key names and layouts, widths that fit the DiT (the encoder's hidden size is
 * the DiT's text_dim), bf16 like the files people run, deterministic from the seed.
 */

/** Sizes of a synthetic part. */
export interface SyntheticPartSizes {
  readonly textEncoder: { readonly hidden: number; readonly layers: number; readonly heads: number; readonly kvHeads: number; readonly headDim: number; readonly ffn: number; readonly vocab: number };
  readonly videoDecoder: { readonly dim: number; readonly layers: number; readonly ffn: number };
  /** BigVGAN widths: dec_in_proj's output and conv_pre's (halved by each of the 7 upsamplings, so at least 128). */
  readonly audioDecoder: { readonly decIn: number; readonly channels: number };
}

/**
 * The parts that go with an H3 preset. The encoder keeps Qwen3's real vocabulary (the tokenizer's
 * ids index it) and the DiT's text_dim as its width; the decoder keeps H3's head dim (64) and patch.
 */
export function syntheticPartSizes(preset: H3PresetName): SyntheticPartSizes {
  const config = h3Preset(preset).config;
  const textDim = config.textDim;
  if (textDim === undefined) {
    throw new ModelsError('INVALID_CONFIG', `preset ${preset} has no text stream, so no text encoder fits it`, { value: preset, where: 'preset', hint: 'use h3-tiny or h3-small' });
  }
  const headDim = 64;
  return {
    textEncoder: { hidden: textDim, layers: 2, heads: textDim / headDim, kvHeads: textDim / headDim / 4, headDim, ffn: 2 * textDim, vocab: QWEN3_H3.vocab },
    videoDecoder: { dim: 256, layers: 2, ffn: 512 },
    audioDecoder: { decIn: 128, channels: 128 },
  };
}

function bf16Bytes(values: Float32Array): Uint8Array {
  const bits = new Uint32Array(values.buffer, values.byteOffset, values.length);
  const out = new Uint16Array(values.length);
  for (let i = 0; i < values.length; i++) {
    const u = bits[i] as number;
    out[i] = ((u + 0x7fff + ((u >>> 16) & 1)) >>> 16) & 0xffff;
  }
  return new Uint8Array(out.buffer);
}

/** A tensor of N(mean, std²) values, generated when the writer reaches it (bytes depend on seed and name only). */
function normal(name: string, shape: readonly number[], seed: number, std: number, mean = 0, dtype: 'bf16' | 'f32' = 'bf16'): TensorSource {
  return {
    name,
    dtype,
    shape,
    data: () => {
      // In chunks of one stream: a vocabulary-sized embedding never exists in f32 at once.
      const g = new GaussianStream(hashSeed(seed, name));
      const numel = shape.reduce((a, b) => a * b, 1);
      const width = dtype === 'f32' ? 4 : 2;
      const out = new Uint8Array(numel * width);
      const chunk = new Float32Array(Math.min(numel, 1 << 20));
      for (let at = 0; at < numel; at += chunk.length) {
        const v = g.fill(chunk.subarray(0, Math.min(chunk.length, numel - at)), std, mean);
        out.set(dtype === 'f32' ? new Uint8Array(v.buffer, v.byteOffset, v.byteLength) : bf16Bytes(v), at * width);
      }
      return out;
    },
  };
}

/** Writes a synthetic Qwen3 text encoder (Hugging Face names under `model.`, no final norm, as H3's export). */
export async function writeSyntheticQwen3(path: string, sizes: SyntheticPartSizes['textEncoder'], seed = 145): Promise<void> {
  const { hidden, layers, heads, kvHeads, headDim, ffn, vocab } = sizes;
  const t: TensorSource[] = [normal('model.embed_tokens.weight', [vocab, hidden], seed, 1)];
  for (let i = 0; i < layers; i++) {
    const p = `model.layers.${i}.`;
    t.push(
      normal(`${p}input_layernorm.weight`, [hidden], seed, 0.1, 1),
      normal(`${p}post_attention_layernorm.weight`, [hidden], seed, 0.1, 1),
      normal(`${p}self_attn.q_norm.weight`, [headDim], seed, 0.1, 1),
      normal(`${p}self_attn.k_norm.weight`, [headDim], seed, 0.1, 1),
      normal(`${p}self_attn.q_proj.weight`, [heads * headDim, hidden], seed, 1 / Math.sqrt(hidden)),
      normal(`${p}self_attn.k_proj.weight`, [kvHeads * headDim, hidden], seed, 1 / Math.sqrt(hidden)),
      normal(`${p}self_attn.v_proj.weight`, [kvHeads * headDim, hidden], seed, 1 / Math.sqrt(hidden)),
      normal(`${p}self_attn.o_proj.weight`, [hidden, heads * headDim], seed, 0.5 / Math.sqrt(heads * headDim)),
      normal(`${p}mlp.gate_proj.weight`, [ffn, hidden], seed, 1 / Math.sqrt(hidden)),
      normal(`${p}mlp.up_proj.weight`, [ffn, hidden], seed, 1 / Math.sqrt(hidden)),
      normal(`${p}mlp.down_proj.weight`, [hidden, ffn], seed, 0.5 / Math.sqrt(ffn)),
    );
  }
  await writeSafetensors(path, t, { metadata: { producer: 'ninodes synthetic', 'ninodes.part': 'qwen3-text-encoder', 'ninodes.sizes': JSON.stringify(sizes), seed: String(seed) } });
}

/** Writes a synthetic H3 video VAE decoder (stable-diffusion.cpp's names; no encoder). */
export async function writeSyntheticVideoDecoder(path: string, sizes: SyntheticPartSizes['videoDecoder'], seed = 145): Promise<void> {
  const { dim, layers, ffn } = sizes;
  const c = H3_VAE_LATENT_CHANNELS;
  const patch = 3 * H3_VAE_PATCH.t * H3_VAE_PATCH.h * H3_VAE_PATCH.w;
  const t: TensorSource[] = [
    normal('post_quant_conv.weight', [c, c, 1, 1, 1], seed, 0.2, 0, 'f32'),
    normal('post_quant_conv.bias', [c], seed, 0.05, 0, 'f32'),
    normal('decoder.x_embedder.weight', [dim, c], seed, 1 / Math.sqrt(c)),
    normal('decoder.x_embedder.bias', [dim], seed, 0.02),
    normal('decoder.register_tokens', [4, dim], seed, 1, 0, 'f32'),
    normal('decoder.mask_token', [dim], seed, 1, 0, 'f32'),
  ];
  for (let i = 0; i < layers; i++) {
    const p = `decoder.transformer_blocks.${i}.`;
    t.push(
      normal(`${p}norm1.weight`, [dim], seed, 0.1, 1, 'f32'),
      normal(`${p}norm2.weight`, [dim], seed, 0.1, 1, 'f32'),
      normal(`${p}scale1`, [dim], seed, 0.1, 0, 'f32'),
      normal(`${p}scale2`, [dim], seed, 0.1, 0, 'f32'),
      normal(`${p}attn.to_qkv.weight`, [3 * dim, dim], seed, 1 / Math.sqrt(dim)),
      normal(`${p}attn.to_qkv.bias`, [3 * dim], seed, 0.02),
      normal(`${p}attn.to_out.weight`, [dim, dim], seed, 1 / Math.sqrt(dim)),
      normal(`${p}attn.to_out.bias`, [dim], seed, 0.02),
      normal(`${p}ff.w1.weight`, [2 * ffn, dim], seed, 1 / Math.sqrt(dim)),
      normal(`${p}ff.w1.bias`, [2 * ffn], seed, 0.02),
      normal(`${p}ff.w2.weight`, [dim, ffn], seed, 1 / Math.sqrt(ffn)),
      normal(`${p}ff.w2.bias`, [dim], seed, 0.02),
    );
  }
  t.push(
    normal('decoder.norm_out.weight', [dim], seed, 0.1, 1, 'f32'),
    normal('decoder.norm_out.bias', [dim], seed, 0.02, 0, 'f32'),
    normal('decoder.proj_out.weight', [patch, dim], seed, 1 / Math.sqrt(dim)),
    normal('decoder.proj_out.bias', [patch], seed, 0.02),
  );
  await writeSafetensors(path, t, { metadata: { producer: 'ninodes synthetic', 'ninodes.part': 'minimax-h3-video-vae', 'ninodes.sizes': JSON.stringify(sizes), seed: String(seed) } });
}

/** A Hann-windowed sinc low-pass (cutoff a quarter of the rate, 12 taps, sum 1): the alias filter of a synthetic BigVGAN. */
function lowPass(taps = 12): Float32Array {
  const f = Float32Array.from({ length: taps }, (_, i) => {
    const t = i - (taps - 1) / 2;
    const sinc = Math.sin(0.5 * Math.PI * t) / (0.5 * Math.PI * t);
    return sinc * Math.sin((Math.PI * (i + 0.5)) / taps) ** 2;
  });
  const sum = f.reduce((a, b) => a + b, 0);
  return f.map((v) => v / sum);
}

/** Writes a synthetic H3 audio VAE decoder (stable-diffusion.cpp's names; BigVGAN with H3's rates and kernels; no encoder). */
export async function writeSyntheticAudioDecoder(path: string, sizes: SyntheticPartSizes['audioDecoder'], seed = 145): Promise<void> {
  const { decIn, channels } = sizes;
  const filter = lowPass();
  const fixed = (name: string, values: Float32Array): TensorSource => ({ name, dtype: 'f32', shape: [1, 1, values.length], data: () => new Uint8Array(values.buffer.slice(0)) });
  const t: TensorSource[] = [
    normal('latents_mean', [32], seed, 0.5, 0, 'f32'),
    normal('latents_std', [32], seed, 0.05, 1, 'f32'),
    normal('dec_in_proj.weight', [decIn, 32, 1], seed, 1 / Math.sqrt(32), 0, 'f32'),
    normal('dec_in_proj.bias', [decIn], seed, 0.02, 0, 'f32'),
    normal('decoder.conv_pre.weight', [channels, decIn, 7], seed, 1 / Math.sqrt(7 * decIn), 0, 'f32'),
    normal('decoder.conv_pre.bias', [channels], seed, 0.02, 0, 'f32'),
  ];
  const activation = (p: string, c: number): void => {
    t.push(normal(`${p}act.alpha`, [c], seed, 0.2, 0, 'f32'), normal(`${p}act.beta`, [c], seed, 0.2, 0, 'f32'), fixed(`${p}upsample.filter`, filter), fixed(`${p}downsample.lowpass.filter`, filter));
  };
  const rates = [5, 5, 2, 2, 2, 2, 2];
  const kernels = [9, 9, 4, 4, 4, 4, 4];
  let c = channels;
  rates.forEach((r, i) => {
    const n = c / 2;
    const k = kernels[i] as number;
    t.push(normal(`decoder.ups.${i}.0.weight`, [c, n, k], seed, 1 / Math.sqrt((c * k) / r), 0, 'f32'), normal(`decoder.ups.${i}.0.bias`, [n], seed, 0.02, 0, 'f32'));
    [3, 7, 11].forEach((rk, j) => {
      const p = `decoder.resblocks.${3 * i + j}.`;
      for (let m = 0; m < 3; m++) {
        for (const conv of ['convs1', 'convs2']) t.push(normal(`${p}${conv}.${m}.weight`, [n, n, rk], seed, 0.5 / Math.sqrt(n * rk), 0, 'f32'), normal(`${p}${conv}.${m}.bias`, [n], seed, 0.02, 0, 'f32'));
      }
      for (let m = 0; m < 6; m++) activation(`${p}activations.${m}.`, n);
    });
    c = n;
  });
  activation('decoder.activation_post.', c);
  t.push(normal('decoder.conv_post.weight', [1, c, 7], seed, 0.3 / Math.sqrt(7 * c), 0, 'f32'));
  await writeSafetensors(path, t, { metadata: { producer: 'ninodes synthetic', 'ninodes.part': 'minimax-h3-audio-vae', 'ninodes.sizes': JSON.stringify(sizes), seed: String(seed) } });
}

export interface SyntheticParts {
  readonly textEncoder: string;
  readonly videoDecoder: string;
  readonly audioDecoder: string;
}

function writtenSizes(path: string): string | undefined {
  if (!existsSync(path)) return undefined;
  const file = SafetensorsFile.open(path);
  try {
    return file.metadata['ninodes.sizes'];
  } finally {
    file.close();
  }
}

/**
 * The synthetic text encoder and video VAE of a preset in `dir` (written once, reused while their
 * sizes match): what `ninodes generate --preset` pairs with the synthetic DiT. Each file is written
 * under a temporary name and renamed, so a crash never leaves a partial one.
 */
export async function ensureSyntheticParts(dir: string, preset: H3PresetName, seed = 145): Promise<SyntheticParts> {
  const sizes = syntheticPartSizes(preset);
  mkdirSync(dir, { recursive: true });
  const textEncoder = join(dir, `${preset}-qwen3-seed${seed}.safetensors`);
  const videoDecoder = join(dir, `${preset}-video-vae-seed${seed}.safetensors`);
  if (writtenSizes(textEncoder) !== JSON.stringify(sizes.textEncoder)) await writeSyntheticQwen3(textEncoder, sizes.textEncoder, seed);
  const audioDecoder = join(dir, `${preset}-audio-vae-seed${seed}.safetensors`);
  if (writtenSizes(videoDecoder) !== JSON.stringify(sizes.videoDecoder)) await writeSyntheticVideoDecoder(videoDecoder, sizes.videoDecoder, seed);
  if (writtenSizes(audioDecoder) !== JSON.stringify(sizes.audioDecoder)) await writeSyntheticAudioDecoder(audioDecoder, sizes.audioDecoder, seed);
  return { textEncoder, videoDecoder, audioDecoder };
}
