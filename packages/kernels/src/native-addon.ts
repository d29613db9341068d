// The one place the native addon is loaded, and the one way to call it: callNative/callNativeAsync
// hand the wrapper the typed addon (its whole surface is `NativeAddon` in @ninodes/native's
// index.d.cts) and re-throw its errors as NinodesErrors. Everything else in ninodes reaches native
// code through @ninodes/kernels' typed functions.
import { createRequire } from 'node:module';
import type * as NativePackage from '@ninodes/native';
import type { NativeAddon } from '@ninodes/native';
import { NinodesError, fromNativeError } from './errors.js';
import { KernelsError } from './error-codes.js';

export type { NativeAddon } from '@ninodes/native';

const require = createRequire(import.meta.url);

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
    const native: typeof NativePackage = require('@ninodes/native');
    try {
      addon = native.load();
    } catch (error) {
      throw addonError(error);
    }
  }
  return addon;
}

/** Runs a synchronous native call, re-throwing its error (or a load failure) as a NinodesError. */
export function callNative<T>(where: string, fn: (addon: NativeAddon) => T): T {
  const native = nativeAddon();
  try {
    return fn(native);
  } catch (error) {
    throw fromNativeError(error, where);
  }
}

/** Awaits an asynchronous native call, re-throwing its error or rejection as a NinodesError. */
export async function callNativeAsync<T>(where: string, fn: (addon: NativeAddon) => Promise<T>): Promise<T> {
  const native = nativeAddon();
  let promise: Promise<T>;
  try {
    promise = fn(native);
  } catch (error) {
    throw fromNativeError(error, where);
  }
  try {
    return await promise;
  } catch (error) {
    throw fromNativeError(error, where);
  }
}

function addonError(error: unknown): NinodesError {
  const e = (error ?? {}) as NativeLoadError;
  const code = e.code === 'ADDON_MISSING' || e.code === 'ADDON_LOAD_FAILED' ? e.code : 'ADDON_LOAD_FAILED';
  const message = typeof e.message === 'string' ? e.message : String(error);
  return new KernelsError(code, message, {
    value: typeof e.file === 'string' ? e.file : undefined,
    where: typeof e.file === 'string' ? e.file : '@ninodes/native',
    hint: typeof e.hint === 'string' ? e.hint : 'reinstall @ninodes/native',
    cause: error,
  });
}
