// The whole surface of ninodes.node as one interface: every function the C++ modules register
// (each `exports.Set` under src/), with the argument order the C++ reads. @ninodes/kernels calls the
// addon only through this type, and its native-addon test checks that these keys equal the loaded
// addon's exports exactly, so a binding added or removed on one side fails a test.

type F32 = Float32Array;

/** An mmap handle from ioMapFile (opaque; pass it back to the io* functions). */
export type MappingHandle = { readonly __mapping: unique symbol };
/** A Gloo communicator handle from commCreate (opaque; pass it back to the comm* functions). */
export type CommHandle = { readonly __communicator: unique symbol };

/** madvise hints: prefetch (`willneed`), drop after use (`dontneed`), or the access pattern. */
export type MadviseAdvice = 'willneed' | 'dontneed' | 'sequential' | 'random' | 'normal';

/** The element types the collectives carry. */
export type CommArray = Float32Array | Int32Array;
export type CommDType = 'f32' | 'i32';
/** allgatherInto also carries int8 activations. */
export type CommGatherArray = CommArray | Int8Array;
export type CommGatherDType = CommDType | 'i8';
export type ReduceOp = 'sum' | 'max';

/** What every comm* call settles with: OK or a stable code, and the ranks it concerns. */
export interface CommStatus {
  code: string;
  message: string;
  ranks: number[];
}

export interface CommCreateOptions {
  rank: number;
  size: number;
  storeKind: 'file' | 'redis';
  storePath?: string;
  storeHost?: string;
  storePort?: number;
  prefix: string;
  iface?: string;
  hostname?: string;
  timeoutMs: number;
  graceMs: number;
}

export type SimdPath = 'avx512' | 'avx2' | 'scalar';
export type Int8BackendName = 'amx' | 'vnni' | 'onednn' | 'native';

/** buildInfo()'s answer (the registered module names are `modules`, beside it). */
export interface NativeBuildInfo {
  /** Compiler and version the addon was built with, e.g. "gcc 12.2.0". */
  compiler: string;
  /** oneDNN version linked at run time, "major.minor.patch". */
  onednn: string;
  /** oneDNN CPU threading runtime id (dnnl_cpu_runtime_t: 1 = sequential, 2 = OpenMP, 4 = TBB, 8 = threadpool). */
  onednnCpuRuntime: number;
  /** Gloo version from its CMake package at build time. */
  gloo: string;
  /** SIMD path the hand-written kernels use: "avx512" (adds 16-lane kernels where they pay), "avx2" or "scalar". */
  simd: SimdPath;
  /** The CPU multiplies bf16 natively (AVX512_BF16 on the selected path): `linear(..., { precision: 'bf16' })` can run. */
  bf16Units: boolean;
  /** Intra-op threads of the native pool. */
  threads: number;
  napiVersion: number;
  buildType: 'Release' | 'Debug';
}

export interface NvmlDeviceRecord {
  index: number;
  name?: string;
  uuid?: string;
  pciBusId?: string;
  totalBytes?: number;
  freeBytes?: number;
  usedBytes?: number;
  pcieGen?: number;
  pcieWidth?: number;
  pcieMaxGen?: number;
  pcieMaxWidth?: number;
  ccMajor?: number;
  ccMinor?: number;
}

export type NvmlProbeResult =
  | { available: true; library: string; driverVersion?: string; devices: NvmlDeviceRecord[]; errors: string[] }
  | { available: false; library?: string; reason: string };

export interface HipDeviceRecord {
  index: number;
  name?: string;
  pciBusId?: string;
  totalBytes?: number;
}

export type HipProbeResult =
  | { available: true; library: string; runtimeVersion?: number; devices: HipDeviceRecord[] }
  | { available: false; library?: string; reason: string };

export interface VulkanHeap {
  sizeBytes: number;
  deviceLocal: boolean;
  /** Some memory type on this heap is host-visible (the host can write it without staging). */
  hostVisible: boolean;
  /** VK_EXT_memory_budget, where the driver has it: what this process may use, and uses. */
  budgetBytes?: number;
  usageBytes?: number;
}

export interface VulkanDeviceRecord {
  index: number;
  name: string;
  type: 'integrated' | 'discrete' | 'virtual' | 'cpu' | 'other';
  vendorId: number;
  deviceId: number;
  apiVersion: string;
  driverName: string;
  driverInfo: string;
  driverId: number;
  /** From VK_EXT_pci_bus_info, `dddd:bb:dd.f`; absent where the driver lacks it (lavapipe). */
  pciBusId?: string;
  heaps: VulkanHeap[];
  unifiedMemory: boolean;
  memoryBudget: boolean;
  subgroupSize: number;
  maxStorageBufferRange: number;
  maxComputeSharedMemorySize: number;
  maxComputeWorkGroupInvocations: number;
  shaderInt8: boolean;
  shaderFloat16: boolean;
  integerDotProduct: boolean;
  cooperativeMatrix: boolean;
}

export type VulkanProbeResult =
  | { available: true; loaderVersion: string; validation: boolean; devices: VulkanDeviceRecord[] }
  | { available: false; reason: string };

export interface VulkanValidationReport {
  /** NINODES_VK_VALIDATION=1 was set when the instance was created. */
  enabled: boolean;
  /** Warnings and errors the validation layer reported since. */
  count: number;
  /** The first 16 messages. */
  messages: string[];
}

export interface VulkanDispatch {
  /** The shader (vulkan/shaders/variants.txt). */
  op: string;
  /** Buffer ids in binding order. */
  buffers: number[];
  /** Push constants, floats as their bits. */
  push: Uint32Array;
}

export interface NativeAddon {
  /** Names of the native modules compiled in (src/core/registry.cc). */
  readonly modules: string[];

  // core/build_info.cc
  buildInfo(): NativeBuildInfo;
  setSimd(path: SimdPath): void;

  // ops/onednn_context.cc: the one thread setter (native pool and oneDNN's OpenMP team).
  setComputeThreads(n: number): number;
  getComputeThreads(): number;

  // tensor/native_memory.cc
  allocateNative(bytes: number): ArrayBuffer;
  releaseNative(buffer: ArrayBuffer): boolean;
  nativeBytes(): number;

  // tensor/float_convert.cc
  castElements(src: Uint8Array, from: string, dst: Uint8Array, to: string, n: number): void;
  /** castElements on a worker thread (the same bits). */
  castElementsAsync(src: Uint8Array, from: string, dst: Uint8Array, to: string, n: number): Promise<void>;
  encodeFp8(src: Uint8Array, dst: Uint8Array, n: number, format: string, scale: number, clamp: boolean, stochastic: boolean, seed: number): void;
  /** encodeFp8 on a worker thread (the same bits). */
  encodeFp8Async(src: Uint8Array, dst: Uint8Array, n: number, format: string, scale: number, clamp: boolean, stochastic: boolean, seed: number): Promise<void>;
  /** max |x| of f32 elements on a worker thread (NaN when any is NaN, 0 when empty). */
  absMaxAsync(src: Uint8Array, n: number): Promise<number>;
  decodeFp8(src: Uint8Array, dst: Uint8Array, n: number, format: string, scale: number): void;

  // ops/hadamard.cc
  hadamardSync(src: Uint8Array, dst: Uint8Array, rows: number, cols: number, group: number, order: string): void;
  hadamardAsync(src: Uint8Array, dst: Uint8Array, rows: number, cols: number, group: number, order: string): Promise<void>;

  // ops/linear.cc
  linear(x: Uint8Array, w: Uint8Array, wIsBf16: boolean, bias: Uint8Array | null, y: Uint8Array, m: number, k: number, n: number, precision: 'f32' | 'bf16'): Promise<void>;
  /** Bytes of a bf16 [n, k] weight in the layout oneDNN's bf16 matmul packs it into (BACKEND_UNAVAILABLE without bf16 units). */
  linearPackedBytes(k: number, n: number): number;
  /** w bf16 [n, k] into `packed` (64-byte aligned, linearPackedBytes long), or with `unpack` back into w. */
  packLinearBf16(w: Uint8Array, packed: Uint8Array, k: number, n: number, unpack: boolean): Promise<void>;
  /** linear's bf16 compute with a packed weight: the same output bits as the plain weight. */
  linearPackedBf16(x: Uint8Array, packed: Uint8Array, bias: Uint8Array | null, y: Uint8Array, m: number, k: number, n: number): Promise<void>;
  int8Matmul(a: Uint8Array, b: Uint8Array, c: Uint8Array, m: number, k: number, n: number, backend: string): Promise<void>;
  int8Linear(
    x: Uint8Array,
    w: Uint8Array,
    wScale: Uint8Array | null,
    bias: Uint8Array | null,
    /** null: the accumulators only (acc given), no epilogue (wScale may be null then). */
    y: Uint8Array | null,
    acc: Uint8Array | null,
    xScale: Uint8Array,
    m: number,
    k: number,
    n: number,
    group: number,
    order: string,
    external: boolean,
    backend: string,
  ): Promise<void>;
  /** int8Linear's GEMM and epilogue on rows already quantized (qx i8 [m, k], xScale f32 [m]). */
  int8LinearQuantized(qx: Uint8Array, w: Uint8Array, wScale: Uint8Array, bias: Uint8Array | null, y: Uint8Array, xScale: Uint8Array, m: number, k: number, n: number, backend: string): Promise<void>;
  int8Dequantize(acc: Uint8Array, xScale: Uint8Array, wScale: Uint8Array, bias: Uint8Array | null, y: Uint8Array, m: number, n: number): Promise<void>;

  // ops/int8_quantize.cc, ops/int8_backend.cc
  quantizeRowsInt8(x: Uint8Array, q: Uint8Array, scale: Uint8Array, rows: number, cols: number, external: boolean, group: number, order: string, rotated?: Uint8Array | null): void;
  // ops/int8_quantize_async.cc: the weight path of quantizeRowsInt8 (computed scales, regular order) on a worker thread.
  quantizeWeightInt8Async(w: Uint8Array, q: Uint8Array, scale: Uint8Array, rows: number, cols: number, group: number): Promise<void>;
  int8Backend(): Int8BackendName;
  int8Backends(): Int8BackendName[];

  // ops/gguf_dequant.cc
  ggufDequantize(dtype: string, src: Uint8Array, dst: Float32Array | Uint16Array): void;
  ggufDequantizeAsync(dtype: string, src: Uint8Array, dst: Float32Array | Uint16Array): Promise<void>;

  // ops/gguf_linear.cc: y = x·wᵀ + bias on the stored blocks (q8_0, q4_0, q4_k, q5_k, q6_k).
  ggufLinear(dtype: string, x: Uint8Array, w: Uint8Array, bias: Uint8Array | null, y: Uint8Array, m: number, k: number, n: number, kernel: 'auto' | 'vnni' | 'avx2' | 'scalar'): Promise<void>;
  ggufLinearKernel(): 'vnni' | 'avx2' | 'scalar';

  // ops/gguf_quantize.cc
  ggufQuantize(dtype: string, src: Float32Array, dst: Uint8Array): void;
  ggufQuantizeAsync(dtype: string, src: Float32Array, dst: Uint8Array): Promise<void>;

  // ops/norms.cc
  rmsNormF32(x: F32, weight: F32 | null, out: F32, rows: number, dim: number, eps: number): void;
  layerNormF32(x: F32, weight: F32 | null, bias: F32 | null, out: F32, rows: number, dim: number, eps: number): void;
  softmaxF32(x: F32, out: F32, rows: number, dim: number): void;

  // ops/elementwise.cc
  siluF32(x: F32, out: F32): void;
  geluTanhF32(x: F32, out: F32): void;
  swigluF32(x: F32, out: F32, rows: number, features: number): void;
  addF32(a: F32, b: F32, out: F32): void;
  mulF32(a: F32, b: F32, out: F32): void;
  addcmulF32(x: F32, a: F32, b: F32, out: F32): void;
  modulateF32(x: F32, shift: F32, scale: F32, out: F32): void;
  gatedResidualF32(x: F32, out: F32, gate: F32, y: F32): void;
  rmsNormModulateF32(x: F32, weight: F32 | null, shift: F32, scale: F32, y: F32, rows: number, dim: number, eps: number): void;
  qkNormRopeF32(qkv: F32, qWeight: F32 | null, kWeight: F32 | null, angles: F32, q: F32, k: F32, v: F32, seq: number, heads: number, headDim: number, rotDim: number, angleColumns: number, eps: number): void;
  scaleF32(x: F32, s: number, out: F32): void;

  // ops/rope.cc, ops/attention.cc
  ropeSplitHalfF32(x: F32, angles: F32, out: F32, seq: number, heads: number, headDim: number, rotDim: number, angleColumns: number): void;
  // seqMajor: out is [S, H·D] instead of [H, S, D] (default false).
  attentionF32(q: F32, k: F32, v: F32, out: F32, heads: number, seqQ: number, seqK: number, headDim: number, scale: number, seqMajor?: boolean): Promise<void>;
  attentionNaiveF32(q: F32, k: F32, v: F32, out: F32, heads: number, seqQ: number, seqK: number, headDim: number, scale: number): Promise<void>;
  // ops/attention_bf16.cc: q, k, v rounded to bf16, vdpbf16ps with f32 accumulation; BACKEND_UNAVAILABLE without bf16 units.
  attentionBf16(q: F32, k: F32, v: F32, out: F32, heads: number, seqQ: number, seqK: number, headDim: number, scale: number, seqMajor?: boolean): Promise<void>;

  // io/mmap.cc
  ioMapFile(fd: number, length: number, priv: boolean, path: string): MappingHandle;
  ioMapView(handle: MappingHandle, offset: number, length: number): ArrayBuffer;
  ioDetach(buffer: ArrayBuffer): boolean;
  ioUnmap(handle: MappingHandle): boolean;
  ioMadvise(handle: MappingHandle, offset: number, length: number, advice: MadviseAdvice): void;
  ioTouchPages(handle: MappingHandle, offset: number, length: number): number;
  /** Reads the range's pages in and maps them on a worker thread (MADV_POPULATE_READ, else one byte per page); resolves with the bytes (whole pages). */
  ioPopulate(handle: MappingHandle, offset: number, length: number): Promise<number>;
  /** posix_fadvise on a descriptor; length 0 means to the end of the file. */
  ioFadvise(fd: number, offset: number, length: number, advice: MadviseAdvice): void;
  ioSumBytes(handle: MappingHandle, offset: number, length: number): number;
  ioAssertIntact(handle: MappingHandle): void;
  ioMallocTrim(pad: number): boolean;
  ioPageSize(): number;

  // comm/comm_bindings.cc
  commCreate(options: CommCreateOptions): Promise<CommStatus & { handle?: CommHandle }>;
  // The collectives run on the calling thread (each read and write has the communicator's deadline).
  commAllreduce(handle: CommHandle, data: CommArray, dtype: CommDType, op: ReduceOp): CommStatus;
  commBroadcast(handle: CommHandle, data: CommArray, dtype: CommDType, root: number): CommStatus;
  commAllgather(handle: CommHandle, input: CommArray, output: CommArray, dtype: CommDType): CommStatus;
  // counts: one segment length (elements) per rank, summing to data's length.
  commReduceScatter(handle: CommHandle, data: CommArray, dtype: CommDType, counts: readonly number[]): CommStatus;
  commAllgatherInto(handle: CommHandle, data: CommGatherArray, dtype: CommGatherDType, counts: readonly number[]): CommStatus;
  commAllToAll(handle: CommHandle, send: CommGatherArray, recv: CommGatherArray, dtype: CommGatherDType, counts: readonly number[]): CommStatus;
  commBarrier(handle: CommHandle): CommStatus;
  commClose(handle: CommHandle): void;

  // probe/nvml.cc, probe/hip.cc (dlopen at run time; a missing library is an answer, not an error)
  nvmlProbe(): NvmlProbeResult;
  hipProbe(): HipProbeResult;

  // vulkan/probe.cc, vulkan/bindings.cc: Vulkan devices (the loader dlopened by volk).
  vkProbe(): VulkanProbeResult;
  vkValidation(): VulkanValidationReport;
  vkOpen(device: number): { maxBindingBytes: number; float64: boolean };
  vkBufferCreate(device: number, bytes: number): number;
  /** False when the id was already freed. */
  vkBufferFree(id: number): boolean;
  vkUpload(id: number, byteOffset: number, data: ArrayBufferView): Promise<void>;
  vkDownload(id: number, byteOffset: number, data: ArrayBufferView): Promise<void>;
  vkRun(device: number, dispatches: VulkanDispatch[]): Promise<void>;
  vkStats(device: number): { buffers: number; bufferBytes: number; pipelines: number; pipelineCacheBytes: number };
}

/**
 * Loads the addon: a local build from source if present, else the prebuilt package for this platform.
 * Throws an Error with `code` ADDON_MISSING (nothing installed) or ADDON_LOAD_FAILED (the file exists but
 * the dynamic loader refused it), plus `file` (the path) and `hint` (what to install or run).
 */
export declare function load(): NativeAddon;
/** Absolute path of the ninodes.node that load() uses, or undefined when none is installed. */
export declare function bindingPath(): string | undefined;
