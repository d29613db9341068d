// Builds a scratch npm project that installs the packed @ninodes tarballs offline, as a user's
// project would install them from the registry. npm's cache holds the tarballs of every registry
// dependency (npm ci put them there) but not their registry metadata, so a plain offline
// `npm install` cannot resolve `zod@^4` by itself; a lockfile made from the monorepo's own names the
// exact versions and integrities, and `npm ci --offline` reads them from the cache.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, readdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';

interface Manifest {
  name: string;
  version: string;
  dependencies?: Record<string, string>;
  optionalDependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
  [key: string]: unknown;
}

interface LockEntry {
  version?: string;
  name?: string;
  link?: boolean;
  dependencies?: Record<string, string>;
  optionalDependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
  [key: string]: unknown;
}

export interface Workspace {
  readonly name: string;
  /** Directory relative to the repository root, as the lockfile names it. */
  readonly path: string;
  readonly manifest: Manifest;
}

export interface Packed {
  readonly workspace: Workspace;
  /** Tarball path relative to the scratch project. */
  readonly file: string;
  readonly integrity: string;
}

const readJson = <T>(path: string): T => JSON.parse(readFileSync(path, 'utf8')) as T;
const isOurs = (name: string): boolean => name.startsWith('@ninodes/');

/** Every workspace of the repository by package name (the folders the root `workspaces` globs name). */
export function workspaces(root: string): Map<string, Workspace> {
  const globs = readJson<{ workspaces: string[] }>(join(root, 'package.json')).workspaces;
  const dirs = globs.flatMap((g) => (g.endsWith('/*') ? readdirSync(join(root, g.slice(0, -2))).map((d) => `${g.slice(0, -2)}/${d}`) : [g]));
  const out = new Map<string, Workspace>();
  for (const path of dirs) {
    if (!existsSync(join(root, path, 'package.json'))) continue;
    const manifest = readJson<Manifest>(join(root, path, 'package.json'));
    out.set(manifest.name, { name: manifest.name, path, manifest });
  }
  return out;
}

/** `names` and every @ninodes package they depend on (dependencies and optionalDependencies). */
export function closure(all: Map<string, Workspace>, names: readonly string[]): Workspace[] {
  const seen = new Map<string, Workspace>();
  const visit = (name: string): void => {
    if (seen.has(name)) return;
    const ws = all.get(name);
    if (ws === undefined) throw new Error(`${name} is not a workspace`);
    seen.set(name, ws);
    const deps = { ...ws.manifest.dependencies, ...ws.manifest.optionalDependencies };
    for (const dep of Object.keys(deps)) if (isOurs(dep)) visit(dep);
  };
  for (const name of names) visit(name);
  return [...seen.values()];
}

/** `npm pack` of each directory into `dest` (one npm process); returns name -> tarball and integrity. */
export function pack(dirs: readonly string[], dest: string): Map<string, { filename: string; integrity: string }> {
  const out = execFileSync('npm', ['pack', ...dirs, '--pack-destination', dest, '--ignore-scripts', '--json', '--loglevel=error'], { encoding: 'utf8', maxBuffer: 64 << 20, timeout: 180_000 });
  const reports = JSON.parse(out) as Array<{ name: string; filename: string; integrity: string }>;
  return new Map(reports.map((r) => [r.name, { filename: join(dest, r.filename), integrity: r.integrity }]));
}

/** Lockfile path where Node would find `name` when required from the package at `from`. */
function resolveIn(packages: Record<string, LockEntry>, from: string, name: string): string | undefined {
  let base = from;
  for (;;) {
    const candidate = base === '' ? `node_modules/${name}` : `${base}/node_modules/${name}`;
    if (packages[candidate] !== undefined) return candidate;
    if (base === '') return undefined;
    const up = base.lastIndexOf('/node_modules/');
    base = up === -1 ? '' : base.slice(0, up);
  }
}

/**
 * Writes package.json and package-lock.json of a scratch project at `dir` that depends on the packed
 * tarballs, with every registry package they need at the version and place the monorepo's lockfile has.
 */
export function writeScratchProject(root: string, dir: string, packed: readonly Packed[]): void {
  const lock = readJson<{ packages: Record<string, LockEntry> }>(join(root, 'package-lock.json'));
  const registry = 'https://registry.npmjs.org';
  const packages: Record<string, LockEntry> = {};
  const dependencies: Record<string, string> = {};
  const scratchPath = (path: string, ws: Workspace): string => (path.startsWith(`${ws.path}/`) ? `node_modules/${ws.name}${path.slice(ws.path.length)}` : path);

  const queue: Array<{ from: string; ws: Workspace; deps: Record<string, string>; optional: Set<string> }> = [];
  for (const p of packed) {
    const m = p.workspace.manifest;
    dependencies[m.name] = `file:${p.file}`;
    const entry: LockEntry = { version: m.version, resolved: `file:${p.file}`, integrity: p.integrity };
    for (const key of ['dependencies', 'optionalDependencies', 'bin', 'engines', 'os', 'cpu', 'libc', 'license']) if (m[key] !== undefined) entry[key] = m[key];
    if ((m.scripts as Record<string, string> | undefined)?.install !== undefined) entry.hasInstallScript = true;
    packages[`node_modules/${m.name}`] = entry;
    queue.push({ from: p.workspace.path, ws: p.workspace, deps: { ...m.dependencies, ...m.optionalDependencies }, optional: new Set(Object.keys(m.optionalDependencies ?? {})) });
  }
  while (queue.length > 0) {
    const { from, ws, deps, optional } = queue.pop()!;
    for (const name of Object.keys(deps)) {
      if (isOurs(name)) continue; // packed above
      const found = resolveIn(lock.packages, from, name);
      if (found === undefined) {
        if (optional.has(name)) continue;
        throw new Error(`${name} (needed by ${from}) is not in package-lock.json`);
      }
      const target = scratchPath(found, ws);
      if (packages[target] !== undefined) continue;
      const { dev, devOptional, peer, extraneous, ...entry } = lock.packages[found]!;
      const pkgName = entry.name ?? found.slice(found.lastIndexOf('node_modules/') + 'node_modules/'.length);
      entry.resolved = `${registry}/${pkgName}/-/${basename(pkgName)}-${entry.version}.tgz`;
      packages[target] = entry;
      const peers = Object.fromEntries(Object.entries(entry.peerDependencies ?? {}).filter(([p]) => resolveIn(lock.packages, found, p) !== undefined));
      queue.push({ from: found, ws, deps: { ...entry.dependencies, ...entry.optionalDependencies, ...peers }, optional: new Set(Object.keys(entry.optionalDependencies ?? {})) });
    }
  }
  const manifest = { name: 'ninodes-scratch', version: '0.0.0', private: true, dependencies };
  writeFileSync(join(dir, 'package.json'), `${JSON.stringify(manifest, null, 2)}\n`);
  const lockfile = { name: manifest.name, version: manifest.version, lockfileVersion: 3, requires: true, packages: { '': { name: manifest.name, version: manifest.version, dependencies }, ...packages } };
  writeFileSync(join(dir, 'package-lock.json'), `${JSON.stringify(lockfile, null, 2)}\n`);
}

/** A directory of symlinks to just `tools` (found on the current PATH), for a PATH with nothing else. */
export function toolsOnlyPath(dir: string, tools: readonly string[]): string {
  mkdirSync(dir, { recursive: true });
  for (const tool of tools) {
    const real = tool === 'node' ? process.execPath : execFileSync('sh', ['-c', `command -v ${tool}`], { encoding: 'utf8' }).trim();
    symlinkSync(real, join(dir, tool));
  }
  return dir;
}
