import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** apps/bench on disk, whether running from src/ (tests) or the bundled dist/cli.js. */
export function benchRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const pkg = join(dir, 'package.json');
    if (existsSync(pkg) && (JSON.parse(readFileSync(pkg, 'utf8')) as { name?: string }).name === '@ninodes/bench') return dir;
    const up = dirname(dir);
    if (up === dir) throw new Error('apps/bench package.json not found above ' + fileURLToPath(import.meta.url));
    dir = up;
  }
}
