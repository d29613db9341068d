// vitest global setup: each package's test run gets a temp directory of its own (TMPDIR, which
// node's os.tmpdir() and mkdtemp read), and the run fails if a test left anything in it. A leaked
// temp folder is a bug a user pays for in disk space; this is where it is caught.
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export default function setup(): () => void {
  const outer = process.env.TMPDIR ?? tmpdir();
  const dir = mkdtempSync(join(outer, 'ninodes-test-'));
  process.env.TMPDIR = dir;
  return () => {
    const left = readdirSync(dir);
    rmSync(dir, { recursive: true, force: true });
    process.env.TMPDIR = outer;
    if (left.length > 0) {
      throw new Error(`tests left ${left.length} entries in the temp dir (a leak; clean up with onTestFinished): ${left.slice(0, 10).join(', ')}`);
    }
  };
}
