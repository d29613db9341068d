import { Tensor, linear } from '@ninodes/kernels';
import type { LoraFile } from './lora-file.js';
import { type LoraDelta, type LoraMapping, type LoraTarget, loraTargets, mapLora } from './lora-map.js';
import type { LayerSlice } from './linear-shard.js';
import type { ModelLayout } from './model-layout.js';
import type { WeightPatcher } from './weight-patcher.js';
import { QuantError } from './error-codes.js';

/** What adding one LoRA did. */
export interface LoraApplied {
  /** Index for `setStrength`. */
  readonly index: number;
  readonly path: string;
  readonly strength: number;
  /** Layers it patches. */
  readonly layers: readonly string[];
  /** Module keys that name no linear of the model. */
  readonly unmapped: readonly string[];
  /** Tensors of the file that are no low-rank pair (DoRA scales, LoKr, ...), not applied. */
  readonly unsupported: readonly string[];
}

function checkStrength(strength: number, where: string): void {
  if (!Number.isFinite(strength)) {
    throw new QuantError('INVALID_ARGUMENT', `LoRA strength must be a finite number, got ${strength}`, { value: strength, where, hint: 'e.g. 1, 0.8 or -0.5' });
  }
}

/** down[:, c0:c1] transposed: [c1 - c0, rank], the `w` operand of linear (which computes x·wᵀ). */
function downColumnsT(down: Tensor<'f32'>, c0: number, c1: number): Tensor<'f32'> {
  const [rank, k] = down.shape as [number, number];
  const src = down.data;
  const kc = c1 - c0;
  const out = new Float32Array(kc * rank);
  for (let r = 0; r < rank; r++) {
    const row = r * k;
    for (let j = 0; j < kc; j++) out[j * rank + r] = src[row + c0 + j] as number;
  }
  return Tensor.fromArray('f32', [kc, rank], out);
}

/**
 * w += s · (up · down), restricted to what `w` holds of the layer: `slice.rows` segments (whole-layer
 * row coordinates, concatenated in `w`), `slice.columns`. The product is computed in f32 by the
 * kernels' matmul; `s · product` is rounded to f32 and added (ComfyUI:
 * `weight += (strength · alpha) · lora_diff` on an fp32 weight).
 */
async function addDelta(w: Tensor<'f32'>, d: LoraDelta, s: number, slice: LayerSlice | undefined): Promise<void> {
  const [n, k] = w.shape as [number, number];
  const [c0, c1] = slice?.columns ?? [0, d.down.shape[1] as number];
  if (c1 - c0 !== k) throw new QuantError('INTERNAL', `LoRA delta '${d.key}' covers ${c1 - c0} columns, the weight has ${k}`, { where: d.key });
  const r0 = d.rows?.[0] ?? 0;
  const r1 = r0 + (d.up.shape[0] as number);
  const segments = slice?.rows ?? [[0, n] as const];
  const downT = downColumnsT(d.down, c0, c1);
  const out = w.data;
  let local = 0;
  for (const [a, b] of segments) {
    const lo = Math.max(a, r0);
    const hi = Math.min(b, r1);
    if (lo < hi) {
      const product = (await linear(d.up.rows(lo - r0, hi - r0), downT)).data;
      const base = (local + lo - a) * k;
      for (let i = 0; i < product.length; i++) out[base + i] = (out[base + i] as number) + Math.fround(s * (product[i] as number));
    }
    local += b - a;
  }
  if (local !== n) throw new QuantError('INTERNAL', `LoRA patch of '${d.key}': the slice covers ${local} rows, the weight has ${n}`, { where: d.key });
}

/**
 * The LoRAs of one model, as a WeightPatcher for the linear provider: each layer's weight gets
 * W + Σ strength · (alpha / rank) · up · down, in fp32, in the order the LoRAs were added, whenever
 * it is prepared (resident, streamed again, or a shard of it). `setStrength` says which layers must
 * be prepared again (only those the LoRA touches); `patchedLayers` counts the patches done.
 */
export class LoraPatcher implements WeightPatcher {
  private readonly loras: { file: LoraFile; strength: number; mapping: LoraMapping }[] = [];
  private count = 0;

  constructor(
    private readonly targets: readonly LoraTarget[],
    private readonly prefix = '',
  ) {}

  static forLayout(layout: ModelLayout): LoraPatcher {
    return new LoraPatcher(loraTargets(layout), layout.prefix);
  }

  /** Maps `file` onto the model (LORA_SHAPE_MISMATCH for modules that do not fit) and adds it. */
  add(file: LoraFile, strength = 1): LoraApplied {
    checkStrength(strength, file.path);
    const mapping = mapLora(file, this.targets, this.prefix);
    if (mapping.deltas.size === 0) {
      throw new QuantError('LORA_NO_MATCH', `${file.path}: none of its ${file.modules.length} modules names a linear of this model (e.g. '${file.modules[0]?.key}')`, {
        value: file.modules.slice(0, 5).map((m) => m.key),
        where: file.path,
        hint: `the model's linears are named like '${this.targets[0]?.name ?? '?'}'; is the LoRA for this model?`,
      });
    }
    const index = this.loras.length;
    this.loras.push({ file, strength, mapping });
    return { index, path: file.path, strength, layers: [...mapping.deltas.keys()], unmapped: mapping.unmapped, unsupported: file.unsupported };
  }

  /** Changes one LoRA's strength; returns the layers whose prepared weights are now stale (none if unchanged). */
  setStrength(index: number, strength: number): readonly string[] {
    const lora = this.loras[index];
    if (lora === undefined) throw new QuantError('INDEX_OUT_OF_RANGE', `no LoRA ${index} (${this.loras.length} added)`, { value: index, where: 'LoraPatcher.setStrength' });
    checkStrength(strength, lora.file.path);
    if (lora.strength === strength) return [];
    lora.strength = strength;
    return [...lora.mapping.deltas.keys()];
  }

  /** Every layer some LoRA with a non-zero strength patches. */
  layers(): string[] {
    const out = new Set<string>();
    for (const l of this.loras) if (l.strength !== 0) for (const k of l.mapping.deltas.keys()) out.add(k);
    return [...out];
  }

  has(layer: string): boolean {
    return this.loras.some((l) => l.strength !== 0 && l.mapping.deltas.has(layer));
  }

  /** How many times a layer's weight has been patched (each preparation of a patched layer counts once). */
  get patchedLayers(): number {
    return this.count;
  }

  async apply(layer: string, w: Tensor<'f32'>, slice?: LayerSlice): Promise<void> {
    let touched = false;
    for (const l of this.loras) {
      if (l.strength === 0) continue;
      for (const d of l.mapping.deltas.get(layer) ?? []) {
        await addDelta(w, d, l.strength * d.scale, slice);
        touched = true;
      }
    }
    if (touched) this.count++;
  }
}
