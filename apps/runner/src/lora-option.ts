// --lora file[:strength], shared by `run` and `merge`: parsed at the edge, each file read and mapped
// onto the checkpoint's linears (quant's LoraPatcher), and what did not map shown to the user.
import { terminalSafe } from '@ninodes/kernels';
import type { CheckpointSource } from '@ninodes/memory';
import { layoutOf } from '@ninodes/models';
import { type LoraApplied, LoraPatcher, readLoraFile } from '@ninodes/quant';
import { RunnerError } from './error-codes.js';

export interface LoraOption {
  readonly path: string;
  readonly strength: number;
}

/**
 * `file[:strength]`: the text after the last colon is the strength when it is a number (so a path
 * may hold colons); strength 1 otherwise.
 */
export function parseLoraOption(value: string): LoraOption {
  const colon = value.lastIndexOf(':');
  const tail = colon < 0 ? '' : value.slice(colon + 1);
  if (colon > 0 && /^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/.test(tail)) {
    const strength = Number(tail);
    if (!Number.isFinite(strength)) throw new RunnerError('INVALID_ARGUMENT', `--lora ${value}: strength ${tail} is not finite`, { value, where: '--lora', hint: 'e.g. --lora style.safetensors:0.8' });
    return { path: value.slice(0, colon), strength };
  }
  if (value.length === 0 || colon === value.length - 1) {
    throw new RunnerError('INVALID_ARGUMENT', `--lora '${value}' names no file${colon === value.length - 1 ? ' (nothing after the colon)' : ''}`, { value, where: '--lora', hint: 'e.g. --lora style.safetensors or --lora style.safetensors:0.8' });
  }
  return { path: value, strength: 1 };
}

export interface LoadedLoras {
  readonly patcher: LoraPatcher;
  readonly applied: readonly LoraApplied[];
}

/** Reads every --lora file and maps it onto the checkpoint's model layout (coded errors name the file and key). */
export function loadLoras(source: CheckpointSource, options: readonly LoraOption[]): LoadedLoras {
  const patcher = LoraPatcher.forLayout(layoutOf(source));
  const applied = options.map((o) => patcher.add(readLoraFile(o.path), o.strength));
  return { patcher, applied };
}

/** One line per LoRA, then the module keys that named no layer of the model (every one of them). */
export function describeLoras(applied: readonly LoraApplied[]): string[] {
  const lines: string[] = [];
  for (const a of applied) {
    lines.push(`lora       ${terminalSafe(a.path)} (strength ${a.strength}): ${a.layers.length} layers patched, ${a.unmapped.length} modules not mapped${a.unsupported.length > 0 ? `, ${a.unsupported.length} tensors of unsupported kinds skipped` : ''}`);
    for (const key of a.unmapped) lines.push(`  not mapped: ${terminalSafe(key)}`);
    for (const key of a.unsupported) lines.push(`  unsupported: ${terminalSafe(key)}`);
  }
  return lines;
}

/** The report.json entry of each LoRA. */
export function loraReport(applied: readonly LoraApplied[]): { path: string; strength: number; layers: number; unmapped: string[]; unsupported: string[] }[] {
  return applied.map((a) => ({ path: a.path, strength: a.strength, layers: a.layers.length, unmapped: [...a.unmapped], unsupported: [...a.unsupported] }));
}
