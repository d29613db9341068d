// Every error code models throws, with what it means; models re-throws the codes of the packages
// below it too. tools/repo-checks fails on a code that is in no list or that nothing throws.
import { NinodesError, type CodedError } from '@ninodes/kernels';
import type { QuantThrownCode } from '@ninodes/quant';

export const MODELS_ERROR_CODES = {
  ARCHITECTURE_MISMATCH: 'a checkpoint is not of the architecture asked for (e.g. not a MiniMax-H3 DiT)',
  ARCHITECTURE_INCONSISTENT: "a checkpoint's tensor shapes contradict each other (head dim, qkv width, patch size)",
  BLOCK_INDEX_GAP: 'the numbered blocks of a checkpoint have a gap',
  INVALID_CONFIG: 'a model config (preset, given or detected) has an impossible value',
  INVALID_METADATA: 'the ninodes.sampler metadata of a checkpoint is missing, not JSON, or lacks a value',
  UNKNOWN_PRESET: 'a model preset name ninodes does not define',
  LINEAR_WIDTH_MISMATCH: "a linear op's output width differs from what the block needs (a wrong shard or op)",
  LATENT_NOT_FINITE: 'the starting latent holds NaN or infinity',
  SHIFT_OUT_OF_RANGE: 'a sampler shift collapses the sigma schedule',
  ABORTED: 'sampling was aborted through its signal',
  CAPTURE_STATE: 'capture calls out of order (a write before beginCall)',
  TOKEN_OUT_OF_RANGE: 'a token id is negative, not an integer, or past the text encoder\'s vocabulary',
  WRITE_FAILED: 'a cached synthetic checkpoint has the wrong size after writing',
} as const;

export type ModelsErrorCode = keyof typeof MODELS_ERROR_CODES;
/** What models may throw: its own codes and those of the packages below it. */
export type ModelsThrownCode = ModelsErrorCode | QuantThrownCode;

/** NinodesError for the codes models may throw. */
export const ModelsError: CodedError<ModelsThrownCode> = NinodesError;
