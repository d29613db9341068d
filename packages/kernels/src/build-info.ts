import { nativeAddon } from './native-addon.js';

export type SimdPath = 'avx512' | 'avx2' | 'scalar';

export interface BuildInfo {
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
  /** Native modules compiled into the addon. */
  modules: string[];
}

/** How the native addon was built and what it chose at run time. */
export function buildInfo(): BuildInfo {
  const native = nativeAddon();
  const info = (native.buildInfo as () => Omit<BuildInfo, 'modules'>)();
  return { ...info, modules: [...native.modules] };
}
