// Runs the repository's own dependency-cruiser config over a tree and returns what it found, so
// the layer tests judge the exact rules `npm run layers` applies.
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';

export const repoRoot = process.env.NINODES_REPO_ROOT as string;
const depcruise = join(repoRoot, 'node_modules', '.bin', 'depcruise');

export interface Violation {
  rule: string;
  from: string;
  to: string;
}

export interface CruiseResult {
  output: string;
  violations: Violation[];
}

const defaultConfig = join(repoRoot, '.dependency-cruiser.cjs');

// Asynchronous, so that a test file can cruise several trees at once (it.concurrent).
function run(dir: string, config: string, outputType: string) {
  const roots = ['packages', 'apps'].filter((d) => existsSync(join(dir, d)));
  const args = [...roots, '--config', config, '--output-type', outputType];
  return new Promise<{ status: number | null; stdout: string; stderr: string }>((resolve) => {
    execFile(depcruise, args, { cwd: dir, timeout: 60_000, maxBuffer: 256 * 1024 * 1024 }, (error, stdout, stderr) => {
      const code = error === null ? 0 : typeof error.code === 'number' ? error.code : null;
      resolve({ status: code, stdout, stderr });
    });
  });
}

/** The exit status `npm run layers` would give on `dir` (the JSON reporter always exits 0). */
export async function cruiseStatus(dir: string, config = defaultConfig): Promise<number | null> {
  return (await run(dir, config, 'err')).status;
}

/** Cruises `packages/` and `apps/` of `dir` with `config` (the repository's by default). */
export async function cruise(dir: string, config = defaultConfig): Promise<CruiseResult> {
  const result = await run(dir, config, 'json');
  const output = result.stdout + result.stderr;
  let violations: Violation[] = [];
  try {
    const json = JSON.parse(result.stdout) as {
      summary: { violations: Array<{ rule: { name: string }; from: string; to: string }> };
    };
    violations = json.summary.violations.map((v) => ({ rule: v.rule.name, from: v.from, to: v.to }));
  } catch {
    // Not JSON: depcruise itself failed; `output` says why and the caller's expectations fail.
  }
  return { output, violations };
}

/** A temporary folder removed by `removeTrees`. */
const made: string[] = [];
export function tempTree(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  made.push(dir);
  return dir;
}
export function removeTrees(): void {
  for (const dir of made.splice(0)) rmSync(dir, { recursive: true, force: true });
}

/** Writes `files` (path → text) under `dir`. */
export function writeFiles(dir: string, files: Record<string, string>): void {
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, path)), { recursive: true });
    writeFileSync(join(dir, path), text);
  }
}

/** Links `node_modules/<name>` to `target` (both relative to `dir`) the way npm links a workspace. */
export function linkPackage(dir: string, name: string, target: string): void {
  const link = join(dir, 'node_modules', name);
  mkdirSync(dirname(link), { recursive: true });
  symlinkSync(relative(dirname(link), join(dir, target)), link);
}
