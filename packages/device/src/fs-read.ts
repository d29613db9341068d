import { readdirSync } from 'node:fs';
import { readSmallFile } from '@ninodes/kernels';
import { join } from 'node:path';

/** Where procfs and sysfs are mounted; tests point these at recorded trees of real machines. */
export interface SystemRoots {
  /** procfs root, default `/proc`. */
  procRoot?: string;
  /** sysfs root, default `/sys`. */
  sysRoot?: string;
}

export interface ResolvedRoots {
  procRoot: string;
  sysRoot: string;
}

export function resolveRoots(roots: SystemRoots = {}): ResolvedRoots {
  return { procRoot: roots.procRoot ?? '/proc', sysRoot: roots.sysRoot ?? '/sys' };
}

/** procfs and sysfs tables are kilobytes; a recorded tree holding more at one of their names is not one. */
export const MAX_TABLE_BYTES = 4 << 20;

/**
 * A file's text, or undefined when it cannot be read (absent file, no permission, not a regular
 * file: a FIFO in a recorded tree is refused at once, never waited on; larger than MAX_TABLE_BYTES).
 */
export function readText(path: string): string | undefined {
  try {
    return readSmallFile(path, { maxBytes: MAX_TABLE_BYTES }).data.toString('utf8');
  } catch {
    return undefined;
  }
}

/** Entry names of a directory, sorted, or [] when it cannot be listed. */
export function listDir(path: string): string[] {
  try {
    return readdirSync(path).sort();
  } catch {
    return [];
  }
}

export { join };

/** Parses a decimal or 0x-hex unsigned integer that fills the whole (trimmed) text. */
export function parseUnsigned(text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  const t = text.trim();
  if (/^[0-9]+$/.test(t)) {
    const n = Number(t);
    return Number.isSafeInteger(n) ? n : undefined;
  }
  if (/^0x[0-9a-f]+$/i.test(t)) {
    const n = Number.parseInt(t.slice(2), 16);
    return Number.isSafeInteger(n) ? n : undefined;
  }
  return undefined;
}
