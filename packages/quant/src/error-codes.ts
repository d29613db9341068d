// Every error code quant throws, with what it means; quant re-throws the codes of kernels, device
// and memory too. The rank-4 packages share codes through this list (siblings never import each
// other). tools/repo-checks fails on a code that is in no list or that nothing throws.
import { NinodesError, type CodedError } from '@ninodes/kernels';
import type { MemoryThrownCode } from '@ninodes/memory';

export const QUANT_ERROR_CODES = {
  // Quantized safetensors (ComfyUI's markers).
  BAD_QUANT_MARKER: 'a comfy_quant tensor or __metadata__._quantization_metadata is not valid UTF-8 JSON of the expected form',
  CONTRADICTORY_QUANT_MARKERS: 'a quantization marker disagrees with the stored tensors or with the other marker',
  UNSUPPORTED_QUANT_FORMAT: 'a layer is stored in a quantized form ninodes cannot read (an unknown format, an unimplemented variant, or I8 without a marker)',
  // Checkpoint files.
  NOT_A_CHECKPOINT: 'a file given as a checkpoint is something else (text, an image, an archive, a pickle): neither safetensors nor GGUF',
  // GGUF files.
  GGUF_BAD_MAGIC: 'the file does not start with the GGUF magic',
  GGUF_UNSUPPORTED_VERSION: 'a GGUF version other than 2 or 3',
  GGUF_TRUNCATED: 'the GGUF header runs past the end of the file',
  GGUF_BAD_STRING: 'a GGUF string is not valid UTF-8',
  GGUF_BAD_VALUE: 'a GGUF metadata value is impossible (a bool other than 0 or 1, arrays nested too deep)',
  GGUF_BAD_VALUE_TYPE: 'a GGUF metadata value has a type id GGUF does not define',
  GGUF_DUPLICATE_KEY: 'a GGUF metadata key appears twice',
  GGUF_BAD_ALIGNMENT: 'general.alignment is not a positive power of two',
  GGUF_DUPLICATE_TENSOR: 'a GGUF tensor is described twice',
  GGUF_BAD_DIMS: 'a GGUF tensor has an impossible number or size of dimensions, or does not fill whole blocks',
  GGUF_UNSUPPORTED_TENSOR_TYPE: 'a GGUF tensor has a ggml type that is unknown or that the kernels cannot decode',
  GGUF_MISALIGNED_TENSOR: "a GGUF tensor's data offset is not a multiple of the alignment",
  GGUF_TENSOR_PAST_EOF: "a GGUF tensor's data reaches past the end of the file",
  GGUF_OVERLAPPING_TENSORS: 'two GGUF tensors share bytes',
  GGUF_UNUSED_BYTES: 'a GGUF data region holds an alignment or more of bytes that no tensor describes (a tensor dropped from the count, appended data)',
  GGUF_BAD_ORIG_SHAPE: 'a ComfyUI-GGUF orig_shape entry is not a shape of the same number of elements',
  // Weight formats, quantizing and the quantized linears.
  UNKNOWN_WEIGHT_FORMAT: 'a weight format name ninodes does not define',
  ALREADY_QUANTIZED: 'quantize found no float linear to convert: the checkpoint\'s linears are already quantized',
  UNSUPPORTED_COMPUTE: 'a layer cannot run in the compute format asked for',
  BIAS_MISMATCH: 'a layer has a bias the model does not use, or lacks one it needs',
  GGUF_WRITE_MISMATCH: "a tensor handed to the GGUF writer does not match its declared dtype, shape or size",
  // LoRA files and patches.
  LORA_INVALID: 'a LoRA file is malformed: an up or down factor missing, a bad alpha, not safetensors, no LoRA modules',
  LORA_SHAPE_MISMATCH: "a LoRA module's up·down product does not fit the layer it names (the key is in the message)",
  LORA_NO_MATCH: 'none of the modules of a LoRA file names a linear of this model',
  // Shards (tensor parallelism; shared by models and tp).
  INVALID_SHARD: 'a shard names a rank outside [0, size)',
  SHARD_NOT_DIVISIBLE: 'a layer or the heads do not split evenly over the ranks',
  SHARD_NOT_GROUP_ALIGNED: "a rank's slice of a convrot int8 layer splits its 256-column Hadamard groups",
  UNSUPPORTED_SHARD: 'a layer cannot be sharded that way (column ranges of a weight that is not 2-D)',
} as const;

export type QuantErrorCode = keyof typeof QUANT_ERROR_CODES;
/** What quant may throw: its own codes and those of the packages below it. */
export type QuantThrownCode = QuantErrorCode | MemoryThrownCode;

/** NinodesError for the codes quant may throw. */
export const QuantError: CodedError<QuantThrownCode> = NinodesError;
