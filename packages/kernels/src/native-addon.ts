// The one place the native addon is loaded. Everything else in ninodes reaches native code
// through @ninodes/kernels' typed functions.
import { createRequire } from 'node:module';
import { NinodesError } from './errors.js';

const require = createRequire(import.meta.url);

/** The raw addon; typed piecemeal by the modules that wrap its functions. */
export type NativeAddon = Record<string, (...args: never[]) => unknown> & { modules: string[] };

/** What @ninodes/native's loader throws: ADDON_MISSING or ADDON_LOAD_FAILED, the file, what to do. */
interface NativeLoadError {
  code?: unknown;
  message?: unknown;
  file?: unknown;
  hint?: unknown;
}

let addon: NativeAddon | undefined;

export function nativeAddon(): NativeAddon {
  if (addon === undefined) {
    const native = require('@ninodes/native') as { load(): unknown };
    try {
      addon = native.load() as NativeAddon;
    } catch (error) {
      throw addonError(error);
    }
  }
  return addon;
}

function addonError(error: unknown): NinodesError {
  const e = (error ?? {}) as NativeLoadError;
  const code = e.code === 'ADDON_MISSING' || e.code === 'ADDON_LOAD_FAILED' ? e.code : 'ADDON_LOAD_FAILED';
  const message = typeof e.message === 'string' ? e.message : String(error);
  return new NinodesError(code, message, {
    value: typeof e.file === 'string' ? e.file : undefined,
    where: typeof e.file === 'string' ? e.file : '@ninodes/native',
    hint: typeof e.hint === 'string' ? e.hint : 'reinstall @ninodes/native',
    cause: error,
  });
}
