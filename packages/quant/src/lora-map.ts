import { type Tensor } from '@ninodes/kernels';
import type { LoraFile, LoraModule } from './lora-file.js';
import type { ModelLayout } from './model-layout.js';
import type { FusedLayout } from './parallel-shard.js';
import { QuantError } from './error-codes.js';

/** A linear a LoRA may patch: its checkpoint name (prefix included) and shape; ModelLayout's linears fit. */
export interface LoraTarget {
  readonly name: string;
  readonly outFeatures: number;
  readonly inFeatures: number;
  readonly fused?: FusedLayout;
}

/** One module's contribution to one layer: rows [rows[0], rows[1]) of it get scale·up·down. */
export interface LoraDelta {
  /** The module's key in the LoRA file. */
  readonly key: string;
  readonly up: Tensor<'f32'>;
  readonly down: Tensor<'f32'>;
  /** alpha / rank (the strength is applied on top). */
  readonly scale: number;
  /** Output rows of the layer the delta covers (a q, k or v part of a fused qkv layer); whole layer when absent. */
  readonly rows?: readonly [number, number];
}

export interface LoraMapping {
  /** Layer name (as in the checkpoint) -> its deltas, in file order. */
  readonly deltas: ReadonlyMap<string, readonly LoraDelta[]>;
  /** Module keys that name no linear of the model. */
  readonly unmapped: readonly string[];
}

/** Every linear of a layout, in execution order. */
export function loraTargets(layout: ModelLayout): LoraTarget[] {
  return layout.groups.flatMap((g) => g.linears);
}

/** Prefixes trainers and converters put before the model's own module path. */
const KNOWN_PREFIXES = ['model.diffusion_model.', 'diffusion_model.', 'base_model.model.', 'transformer.', 'unet.', 'model.'];
/**
 * kohya's flattened prefixes of the diffusion model (the path's dots become underscores after them).
 * Text-encoder modules (`lora_te_`, `lora_te1_`) are not the DiT's: they stay unmapped.
 */
const KOHYA_PREFIXES = ['lora_unet_', 'lora_transformer_'];
/** Names of the three parts of a fused qkv layer, as split-projection models and their LoRAs call them. */
const QKV_PART_NAMES: readonly (readonly [string, string, string])[] = [
  ['to_q', 'to_k', 'to_v'],
  ['q_proj', 'k_proj', 'v_proj'],
  ['q', 'k', 'v'],
];

interface Slot {
  readonly target: LoraTarget;
  readonly rows?: readonly [number, number];
}

/**
 * A lookup from every name a LoRA module may use for a model linear to that linear: the module path
 * (without the checkpoint's prefix) dotted, with the usual trainer prefixes, and flattened the kohya
 * way (`lora_unet_blocks_0_attn_qkv_proj`, ambiguity of underscores resolved against the model's
 * own names, as ComfyUI does). A fused qkv layer also answers to its parts (`attn.to_q`, `attn.q_proj`,
 * ...), each covering its third of the output rows.
 */
function lookupTable(targets: readonly LoraTarget[], prefix: string): Map<string, Slot> {
  const table = new Map<string, Slot>();
  const addPath = (path: string, slot: Slot) => {
    table.set(path, slot);
    const flat = path.replace(/\./g, '_');
    for (const p of KOHYA_PREFIXES) table.set(`${p}${flat}`, slot);
  };
  for (const target of targets) {
    const path = prefix !== '' && target.name.startsWith(prefix) ? target.name.slice(prefix.length) : target.name;
    addPath(path, { target });
    const fused = target.fused;
    if (fused?.kind === 'qkv') {
      const inner = fused.heads * fused.headDim;
      const parent = path.includes('.') ? path.slice(0, path.lastIndexOf('.') + 1) : '';
      for (const names of QKV_PART_NAMES) {
        names.forEach((n, i) => addPath(`${parent}${n}`, { target, rows: [i * inner, (i + 1) * inner] }));
      }
    }
  }
  return table;
}

function findSlot(table: Map<string, Slot>, key: string, prefix: string): Slot | undefined {
  const direct = table.get(key);
  if (direct !== undefined) return direct;
  for (const p of prefix === '' ? KNOWN_PREFIXES : [prefix, ...KNOWN_PREFIXES]) {
    if (key.startsWith(p)) {
      const slot = table.get(key.slice(p.length));
      if (slot !== undefined) return slot;
    }
  }
  return undefined;
}

function checkShape(file: string, m: LoraModule, slot: Slot): void {
  const n = slot.rows === undefined ? slot.target.outFeatures : slot.rows[1] - slot.rows[0];
  const k = slot.target.inFeatures;
  const up = m.up.shape[0] as number;
  const down = m.down.shape[1] as number;
  if (up !== n || down !== k) {
    const part = slot.rows === undefined ? '' : ` (rows ${slot.rows[0]}..${slot.rows[1]} of the fused layer)`;
    throw new QuantError('LORA_SHAPE_MISMATCH', `${file}: LoRA module '${m.key}' gives a [${up}, ${down}] delta, layer '${slot.target.name}'${part} is [${n}, ${k}]`, {
      value: { key: m.key, delta: [up, down], layer: [n, k] },
      where: m.key,
      hint: 'the LoRA was trained for a different model (or model size)',
    });
  }
}

/**
 * Maps a LoRA file's modules onto a model's linears. Modules naming no linear are listed in
 * `unmapped` (the caller reports them); a module whose factors do not fit the layer it names is a
 * LORA_SHAPE_MISMATCH naming the key.
 */
export function mapLora(file: LoraFile, targets: readonly LoraTarget[], prefix = ''): LoraMapping {
  const table = lookupTable(targets, prefix);
  const deltas = new Map<string, LoraDelta[]>();
  const unmapped: string[] = [];
  for (const m of file.modules) {
    const slot = findSlot(table, m.key, prefix);
    if (slot === undefined) {
      unmapped.push(m.key);
      continue;
    }
    checkShape(file.path, m, slot);
    const list = deltas.get(slot.target.name) ?? [];
    list.push({ key: m.key, up: m.up, down: m.down, scale: m.alpha / m.rank, ...(slot.rows === undefined ? {} : { rows: slot.rows }) });
    deltas.set(slot.target.name, list);
  }
  return { deltas, unmapped };
}
