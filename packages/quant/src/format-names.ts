// One vocabulary of weight-format names for every command and library: the formats' own names
// (`f32`, `bf16`, `int8_convrot`, `int8_rowwise`, `f8_e4m3fn`, `f8_e5m2`, `q8_0`, `q4_k`), plus `auto`
// (compute: each layer as stored) and `keep` (merge: each layer as stored). Spellings other tools
// use are not accepted — two names for one thing is how commands drifted apart — but they are
// recognized, so that a refusal can say which name is meant.
import { closest } from '@ninodes/kernels';
import type { ComputeMode } from './memory-account.js';

/** `run --quant`, the bench and `openH3Model`: how linears compute. */
export const COMPUTE_MODES: readonly ComputeMode[] = ['auto', 'f32', 'bf16', 'int8_convrot', 'f8_e4m3fn'];

/** Other tools' (and older ninodes') spellings of a format, by lower-cased spelling. */
const OTHER_SPELLINGS: Readonly<Record<string, string>> = {
  fp32: 'f32',
  float32: 'f32',
  float: 'f32',
  fp16: 'f16',
  float16: 'f16',
  half: 'f16',
  bfloat16: 'bf16',
  fp8: 'f8_e4m3fn',
  fp8_e4m3fn: 'f8_e4m3fn',
  float8_e4m3fn: 'f8_e4m3fn',
  e4m3fn: 'f8_e4m3fn',
  fp8_e5m2: 'f8_e5m2',
  float8_e5m2: 'f8_e5m2',
  e5m2: 'f8_e5m2',
  int8: 'int8_convrot',
  int8_tensorwise: 'int8_convrot',
  convrot: 'int8_convrot',
  gguf_q8_0: 'q8_0',
  gguf_q4_k: 'q4_k',
  q4_k_m: 'q4_k',
  q4_k_s: 'q4_k',
  stored: 'auto',
  default: 'auto',
  as_stored: 'auto',
};

/**
 * The name among `known` that `value` most likely means: another tool's spelling of it, a case
 * difference, or a typo; undefined when none is close.
 */
export function suggestFormatName(value: string, known: readonly string[]): string | undefined {
  const lower = value.trim().toLowerCase().replace(/-/g, '_');
  const other = OTHER_SPELLINGS[lower];
  if (other !== undefined && known.includes(other)) return other;
  if (known.includes(lower)) return lower;
  return closest(lower, known);
}
