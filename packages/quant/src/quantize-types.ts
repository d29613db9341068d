// The converters' options and report (int8 / fp8 into safetensors, Q8_0 / Q4_K into GGUF).
import type { Tensor } from '@ninodes/kernels';
import type { WeightFormat } from './weight-format.js';

export type QuantizeTarget = 'int8_convrot' | 'int8_rowwise' | 'f8_e4m3fn' | 'f8_e5m2' | 'q8_0' | 'q4_k';

/** Every target, safetensors (ComfyUI layout) first, then GGUF (a .gguf file). */
export const QUANTIZE_TARGETS: readonly QuantizeTarget[] = ['int8_convrot', 'int8_rowwise', 'f8_e4m3fn', 'f8_e5m2', 'q8_0', 'q4_k'];

export interface QuantizeOptions {
  format: QuantizeTarget;
  /** Extra layers to keep as they are: exact layer names, substrings, or patterns. */
  skip?: readonly (string | RegExp)[];
  /**
   * Also quantize what is kept by default (norm-like, embedding and fp32-island linears: patch and
   * output projections such as `video_patch_proj`, `final_layer.video_out`). Default false.
   */
  quantizeIslands?: boolean;
  /** Extra `__metadata__` entries (the source's metadata is kept); GGUF: extra string entries. */
  metadata?: Readonly<Record<string, string>>;
  /** GGUF only: `general.architecture` (default: the source's own, else 'unknown'). */
  architecture?: string;
  onProgress?: (event: QuantizeProgress) => void;
  /**
   * Reads a source tensor (default: `source.tensor`). `mergeLora` passes its reader, which patches
   * and dequantizes a layer (asynchronously) when the converter reaches it.
   */
  read?: (name: string) => Promise<Tensor> | Tensor;
}

export interface QuantizeProgress {
  /** 'quantized' after a layer's weight is converted, 'kept' after a tensor is copied. */
  readonly kind: 'quantized' | 'kept';
  readonly name: string;
  readonly index: number;
  readonly total: number;
  /** Source bytes consumed so far (the throughput numerator). */
  readonly bytesRead: number;
  readonly sourceBytes: number;
  readonly format?: WeightFormat;
  readonly note?: string;
}

export interface QuantizedLayerReport {
  readonly name: string;
  readonly format: WeightFormat;
  readonly shape: readonly [number, number];
  /** Why the layer is not in the requested format (e.g. unrotated because K is not a multiple of 256). */
  readonly note?: string;
}

export interface QuantizeReport {
  readonly path: string;
  readonly target: QuantizeTarget;
  readonly layers: readonly QuantizedLayerReport[];
  /** Weights left as they were, and why. */
  readonly kept: readonly { readonly name: string; readonly reason: string }[];
  /** Bytes of tensor data read from the source / written to the target file. */
  readonly sourceBytes: number;
  readonly bytesWritten: number;
  readonly seconds: number;
  /** Most bytes of converted tensors held at once (the streaming bound: about one layer). */
  readonly peakHeldBytes: number;
}
