import { readFileSync, readdirSync } from 'node:fs';
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

/** A file's text, or undefined when it cannot be read (absent file, no permission, not a file). */
export function readText(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8');
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
