import type { NativeBuildInfo, SimdPath } from '@ninodes/native';
import { callNative } from './native-addon.js';

export type { SimdPath };

/** How the addon was built and what it chose at run time, plus the native modules compiled in. */
export interface BuildInfo extends NativeBuildInfo {
  modules: string[];
}

/** How the native addon was built and what it chose at run time. */
export function buildInfo(): BuildInfo {
  return callNative('buildInfo', (n) => ({ ...n.buildInfo(), modules: [...n.modules] }));
}
