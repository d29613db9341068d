// Test-only: LoRA safetensors files in either key style, with seeded factors.
import { Tensor } from '@ninodes/kernels';
import { type TensorSource, tensorSources, writeSafetensors } from '@ninodes/memory';

export interface TestLoraModule {
  /** Module path as the model names it, dotted and without prefix: 'blocks.0.attn.qkv_proj'. */
  readonly path: string;
  readonly n: number;
  readonly k: number;
  readonly rank: number;
  readonly alpha?: number;
  readonly seed: number;
}

/** Seeded values in [-scale, scale) (a small LCG: the same numbers on every machine). */
export function seeded(count: number, seed: number, scale = 1): Float32Array {
  let s = (seed * 2654435761) >>> 0;
  const out = new Float32Array(count);
  for (let i = 0; i < count; i++) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    out[i] = ((s / 2 ** 32) * 2 - 1) * scale;
  }
  return out;
}

export function factors(m: TestLoraModule): { up: Tensor<'f32'>; down: Tensor<'f32'> } {
  return {
    up: Tensor.fromArray('f32', [m.n, m.rank], seeded(m.n * m.rank, m.seed, 0.5)),
    down: Tensor.fromArray('f32', [m.rank, m.k], seeded(m.rank * m.k, m.seed + 1000, 0.5)),
  };
}

/**
 * kohya: `lora_unet_<path_with_underscores>.lora_up.weight`; comfy: `diffusion_model.<path>.lora_up.weight`;
 * peft: `transformer.<path>.lora_B.weight` (alpha only through metadata / config, never a tensor).
 */
export async function writeTestLora(path: string, style: 'kohya' | 'comfy' | 'peft', modules: readonly TestLoraModule[], metadata?: Record<string, string>): Promise<void> {
  const tensors: Record<string, Tensor> = {};
  for (const m of modules) {
    const { up, down } = factors(m);
    const key = style === 'kohya' ? `lora_unet_${m.path.replace(/\./g, '_')}` : style === 'comfy' ? `diffusion_model.${m.path}` : `transformer.${m.path}`;
    if (style === 'peft') {
      tensors[`${key}.lora_B.weight`] = up;
      tensors[`${key}.lora_A.weight`] = down;
    } else {
      tensors[`${key}.lora_up.weight`] = up;
      tensors[`${key}.lora_down.weight`] = down;
      if (m.alpha !== undefined) tensors[`${key}.alpha`] = Tensor.f32([], [m.alpha]);
    }
  }
  const list: TensorSource[] = tensorSources(tensors);
  await writeSafetensors(path, list, metadata === undefined ? {} : { metadata });
}
