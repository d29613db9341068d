// `ninodes --version`: the CLI's version and what the native core was built with.
import { readFileSync } from 'node:fs';
import { buildInfo, isNinodesError } from '@ninodes/kernels';

export function versionText(): string {
  // ../package.json from both src/ (tests) and dist/ (the published bin).
  const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string };
  const lines = [`ninodes ${pkg.version}`, `node ${process.version} (${process.platform}-${process.arch})`];
  try {
    const info = buildInfo() as unknown as Record<string, unknown>;
    for (const [key, value] of Object.entries(info)) lines.push(`${key.padEnd(17)} ${Array.isArray(value) ? value.join(', ') : typeof value === 'object' ? JSON.stringify(value) : String(value)}`);
  } catch (error) {
    // --version must work even when the addon does not load: it is the first thing to ask then.
    lines.push(`native addon not loaded: ${isNinodesError(error) ? `${error.code}: ${error.message}` : String(error)}`);
  }
  return `${lines.join('\n')}\n`;
}
