// Every error code the ninodes CLI throws, with what it means; it re-throws the codes of every
// package too. Codes starting with CLI_ exit with the usage status (2). tools/repo-checks fails on
// a code that is in no list or that nothing throws.
import type { DistorchThrownCode } from '@ninodes/distorch';
import { NinodesError, type CodedError } from '@ninodes/kernels';
import type { ModelsThrownCode } from '@ninodes/models';
import type { TpThrownCode } from '@ninodes/tp';

export const RUNNER_ERROR_CODES = {
  // The command line.
  CLI_UNKNOWN_COMMAND: 'a command ninodes does not have',
  CLI_UNKNOWN_OPTION: 'an option the command does not have',
  CLI_MISSING_OPTION: 'a required option is missing',
  CLI_MISSING_VALUE: 'an option that takes a value was given none',
  CLI_REPEATED_OPTION: 'an option was given more than once',
  CLI_INVALID_OPTION: "an option's value has the wrong form (not a number, not one of the choices, empty)",
  CLI_OUT_OF_RANGE: "an option's value is outside its range, or two options' values contradict",
  CLI_ARGUMENT_COUNT: 'too many or too few arguments',
  CLI_TP_ENV: 'a NINODES_TP_* variable of a rank started by hand is missing or malformed',
  CLI_TP_MISMATCH: "--tp differs from the rank's NINODES_TP_SIZE",
  CLI_TP_PIN: '--tp-pin asks for more cores than this process may use',
  BUDGET_TOO_SMALL: '--budget is below the least this run can hold (activations, streaming staging, the tensors that must stay resident)',
  // Outputs.
  OUTPUT_EXISTS: 'the output holds an earlier result (pass --force to replace it)',
  OUTPUT_CONTAINER_MISMATCH: "quantize's <out> extension names a container the format is not written in (.gguf for q8_0/q4_k, .safetensors for the rest)",
  OUT_DIR_BUSY: 'another ninodes process is writing the same output directory',
  OUT_DIR_UNWRITABLE: "the output's parent directory exists but takes no new files",
  OUTPUT_IS_INPUT: 'quantize or merge was asked to write over one of its inputs (the checkpoint or a LoRA)',
  // Runs.
  RUN_DEVICE_UNSUPPORTED: 'the allocation or --device places compute on a device that ninodes run cannot compute on (the CPU, and a Vulkan device for --device)',
  RUN_TOO_LARGE: 'the asked size (frames, height, width) needs more activation memory than this machine has, or an array larger than Node allows',
  PARTS_MISMATCH: "generate's model parts do not fit together (the text encoder's width is not the DiT's text width)",
  MUX_FAILED: 'ffmpeg could not write the mp4 of a generation',
  DEMO_RUN_FAILED: 'a run started by the demo exited with an error (printed above it)',
  TP_CLI_NOT_FOUND: 'the ninodes CLI to start tensor-parallel ranks with cannot be found',
  TP_PIN_UNAVAILABLE: '--tp-pin needs taskset, which is not installed',
  TP_RANK_FAILED: 'a tensor-parallel rank exited with an error or a signal',
  TP_RANKS_DISAGREE: 'the ranks of a tensor-parallel run opened different checkpoints or run with different settings or inputs',
} as const;

export type RunnerErrorCode = keyof typeof RUNNER_ERROR_CODES;
/** What the CLI may throw: its own codes and those of every package. */
export type RunnerThrownCode = RunnerErrorCode | ModelsThrownCode | DistorchThrownCode | TpThrownCode;

/** NinodesError for the codes the CLI may throw. */
export const RunnerError: CodedError<RunnerThrownCode> = NinodesError;
