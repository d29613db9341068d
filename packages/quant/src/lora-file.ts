import { existsSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { type Tensor, fsError, readSmallFile } from '@ninodes/kernels';
import { toF32 } from './materialize.js';
import { openCheckpoint } from './open-checkpoint.js';
import { QuantError } from './error-codes.js';

/** Which naming convention a LoRA module's tensors follow. */
export type LoraKeyStyle =
  | 'kohya' // lora_unet_<path_with_underscores>.lora_up.weight / .lora_down.weight / .alpha
  | 'comfy' // <dotted path>.lora_up.weight / .lora_down.weight (/ .alpha), e.g. diffusion_model.blocks.0...
  | 'peft'; // <dotted path>.lora_B.weight / .lora_A.weight (diffusers / peft), alpha from config

/** One low-rank module of a LoRA file: ΔW = (alpha / rank) · up · down. */
export interface LoraModule {
  /** The module's key in the file, its tensor suffix removed (e.g. `lora_unet_blocks_0_attn_qkv_proj`). */
  readonly key: string;
  readonly style: LoraKeyStyle;
  /** f32 [N, rank], owned (copied out of the file). */
  readonly up: Tensor<'f32'>;
  /** f32 [rank, K] (a conv-shaped [rank, K, 1, 1] is folded to 2-D), owned. */
  readonly down: Tensor<'f32'>;
  readonly rank: number;
  /** The module's alpha; `alpha / rank` scales the product. Equal to `rank` when the file gives none (ComfyUI: scale 1). */
  readonly alpha: number;
  /** Where alpha came from, for reports. */
  readonly alphaFrom: 'tensor' | 'option' | 'adapter_config' | 'metadata' | 'rank';
}

export interface LoraFile {
  readonly path: string;
  readonly modules: readonly LoraModule[];
  /** Tensors of the file that belong to no supported low-rank pair (DoRA scales, LoKr, biases, ...). */
  readonly unsupported: readonly string[];
}

export interface ReadLoraOptions {
  /** Alpha for modules without an `.alpha` tensor (peft keeps it in adapter_config.json, not in the weights). */
  readonly alpha?: number;
}

/** Suffix → which factor it is. Longest first, so `.lora.up.weight` wins over shorter matches. */
const FACTOR_SUFFIXES: readonly [string, 'up' | 'down', LoraKeyStyle | undefined][] = [
  ['.lora_up.weight', 'up', undefined],
  ['.lora_down.weight', 'down', undefined],
  ['.lora_B.weight', 'up', 'peft'],
  ['.lora_A.weight', 'down', 'peft'],
  ['.lora.up.weight', 'up', 'peft'],
  ['.lora.down.weight', 'down', 'peft'],
];

function styleOf(key: string, suffixStyle: LoraKeyStyle | undefined): LoraKeyStyle {
  if (suffixStyle !== undefined) return suffixStyle;
  return key.startsWith('lora_') && !key.includes('.') ? 'kohya' : 'comfy';
}

/** peft saves `adapter_model.safetensors` beside `adapter_config.json`, which holds `lora_alpha`. */
function adapterConfigAlpha(path: string): number | undefined {
  const config = join(dirname(path), 'adapter_config.json');
  if (!/^adapter_model/i.test(basename(path)) || !existsSync(config)) return undefined;
  let parsed: unknown;
  try {
    // A side file: a FIFO or device there is refused at once, and a config is kilobytes, not gigabytes.
    parsed = JSON.parse(readSmallFile(config, { maxBytes: 1 << 20, where: config }).data.toString('utf8'));
  } catch (error) {
    if (error instanceof SyntaxError) throw new QuantError('LORA_INVALID', `${config} is not valid JSON: ${error.message}`, { value: config, where: config, hint: 'fix or remove adapter_config.json, or pass the alpha explicitly' });
    throw fsError(error, config, 'cannot read');
  }
  const alpha = (parsed as { lora_alpha?: unknown }).lora_alpha;
  if (alpha === undefined) return undefined;
  if (typeof alpha !== 'number' || !Number.isFinite(alpha) || alpha <= 0) {
    throw new QuantError('LORA_INVALID', `${config}: lora_alpha must be a positive number`, { value: alpha, where: config });
  }
  return alpha;
}

function metadataAlpha(path: string, metadata: Readonly<Record<string, string>>): number | undefined {
  const raw = metadata.lora_alpha;
  if (raw === undefined) return undefined;
  const alpha = Number(raw);
  if (!Number.isFinite(alpha) || alpha <= 0) throw new QuantError('LORA_INVALID', `${path}: metadata lora_alpha '${raw}' is not a positive number`, { value: raw, where: path });
  return alpha;
}

function owned(t: Tensor): Tensor<'f32'> {
  const f = toF32(t);
  // An f32 tensor comes back as a view of the mapping, which is closed after reading.
  return f === t ? f.copy() : f;
}

/**
 * Reads a LoRA safetensors file in the kohya/ComfyUI (`lora_up`/`lora_down`/`alpha`) or the
 * diffusers/peft (`lora_B`/`lora_A`) key style. Factors are copied out as f32 (LoRA files are small)
 * and the file is closed again. Alpha, per module: its `.alpha` tensor, else `options.alpha`, else
 * peft's `adapter_config.json` beside an `adapter_model*.safetensors`, else the `lora_alpha`
 * metadata entry, else the rank (scale 1, as ComfyUI does).
 */
export function readLoraFile(path: string, options: ReadLoraOptions = {}): LoraFile {
  const source = openCheckpoint(path);
  try {
    if (source.format !== 'safetensors') {
      throw new QuantError('LORA_INVALID', `${path} is a ${source.format} file; LoRAs are read from safetensors`, { value: path, where: path, hint: 'convert the LoRA to .safetensors' });
    }
    const pairs = new Map<string, { up?: string; down?: string; alpha?: string; style?: LoraKeyStyle }>();
    const unsupported: string[] = [];
    for (const e of source.entries()) {
      const factor = FACTOR_SUFFIXES.find(([s]) => e.name.endsWith(s));
      if (factor !== undefined) {
        const key = e.name.slice(0, -factor[0].length);
        const p = pairs.get(key) ?? {};
        p[factor[1]] = e.name;
        if (factor[2] !== undefined) p.style = factor[2];
        pairs.set(key, p);
      } else if (e.name.endsWith('.alpha')) {
        const key = e.name.slice(0, -'.alpha'.length);
        const p = pairs.get(key) ?? {};
        p.alpha = e.name;
        pairs.set(key, p);
      } else unsupported.push(e.name);
    }
    const fileAlpha = options.alpha !== undefined ? { alpha: options.alpha, from: 'option' as const } : undefined;
    const configAlpha = fileAlpha === undefined ? adapterConfigAlpha(path) : undefined;
    const metaAlpha = fileAlpha === undefined && configAlpha === undefined ? metadataAlpha(path, source.metadata) : undefined;
    const modules: LoraModule[] = [];
    for (const [key, p] of pairs) {
      if (p.up === undefined || p.down === undefined) {
        if (p.up === undefined && p.down === undefined) {
          // An alpha with no factors (e.g. a module the trainer pruned): nothing to apply.
          unsupported.push(p.alpha as string);
          continue;
        }
        throw new QuantError('LORA_INVALID', `${path}: LoRA module '${key}' has ${p.up === undefined ? 'a down factor but no up factor' : 'an up factor but no down factor'}`, {
          value: key,
          where: path,
          hint: 'the file is incomplete or not a LoRA',
        });
      }
      const up = owned(source.tensor(p.up));
      const downRaw = owned(source.tensor(p.down));
      if (up.shape.length !== 2 && !(up.shape.length === 4 && up.shape[2] === 1 && up.shape[3] === 1)) {
        throw new QuantError('LORA_SHAPE_MISMATCH', `${path}: up factor of '${key}' is [${up.shape.join(', ')}], expected [N, rank]`, { value: up.shape, where: p.up });
      }
      const rank = up.shape[1] as number;
      const up2 = up.reshape([up.shape[0] as number, rank]);
      if (downRaw.shape[0] !== rank || downRaw.shape.length < 2) {
        throw new QuantError('LORA_SHAPE_MISMATCH', `${path}: '${key}' has up [${up.shape.join(', ')}] and down [${downRaw.shape.join(', ')}]: the ranks differ`, {
          value: { up: up.shape, down: downRaw.shape },
          where: p.down,
        });
      }
      const down = downRaw.reshape([rank, -1]);
      let alpha: number;
      let alphaFrom: LoraModule['alphaFrom'];
      if (p.alpha !== undefined) {
        const a = owned(source.tensor(p.alpha));
        if (a.numel !== 1) throw new QuantError('LORA_INVALID', `${path}: alpha of '${key}' holds ${a.numel} values`, { value: a.shape, where: p.alpha });
        alpha = (a.data as Float32Array)[0] as number;
        alphaFrom = 'tensor';
      } else if (fileAlpha !== undefined) {
        alpha = fileAlpha.alpha;
        alphaFrom = 'option';
      } else if (configAlpha !== undefined) {
        alpha = configAlpha;
        alphaFrom = 'adapter_config';
      } else if (metaAlpha !== undefined) {
        alpha = metaAlpha;
        alphaFrom = 'metadata';
      } else {
        alpha = rank;
        alphaFrom = 'rank';
      }
      modules.push({ key, style: styleOf(key, p.style), up: up2, down, rank, alpha, alphaFrom });
    }
    if (modules.length === 0) {
      throw new QuantError('LORA_INVALID', `${path} holds no LoRA modules (no lora_up/lora_down or lora_A/lora_B pairs)`, {
        value: path,
        where: path,
        hint: 'supported: kohya/ComfyUI (lora_up, lora_down, alpha) and diffusers/peft (lora_A, lora_B) LoRAs',
      });
    }
    return { path, modules, unsupported };
  } finally {
    source.close();
  }
}
