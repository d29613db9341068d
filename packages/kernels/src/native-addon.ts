// The one place the native addon is loaded. Everything else in ninodes reaches native code
// through @ninodes/kernels' typed functions.
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);

/** The raw addon; typed piecemeal by the modules that wrap its functions. */
export type NativeAddon = Record<string, (...args: never[]) => unknown> & { modules: string[] };

let addon: NativeAddon | undefined;

export function nativeAddon(): NativeAddon {
  if (addon === undefined) {
    const native = require('@ninodes/native') as { load(): unknown };
    addon = native.load() as NativeAddon;
  }
  return addon;
}
