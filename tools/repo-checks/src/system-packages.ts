// Which Debian packages the native build really uses, and whether scripts/setup.sh installs them.
// A machine with extra packages hides a missing one (the OpenCL package Debian's oneDNN CMake
// config requires was only ever present by accident), so the build is not trusted to fail:
// configure the addon in a temporary folder exactly as cmake-js would, collect every system file
// it touches (CMake package files, programs and libraries found, every header a source includes,
// the link line), map each to its Debian package with `dpkg -S`, and accept a package only when
// scripts/system-packages.txt lists it under [build] or [given], or it is in the Depends /
// Pre-Depends closure of one listed there. Recommends do not count: setup installs without them.
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { isAbsolute, join, normalize, resolve } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);
const big = { maxBuffer: 256 * 1024 * 1024, timeout: 120_000 };

/** The sections of scripts/system-packages.txt: `[name]` headers, one package a line, `#` comments. */
export function parsePackageList(text: string): Map<string, string[]> {
  const sections = new Map<string, string[]>();
  let current: string[] | undefined;
  for (const raw of text.split('\n')) {
    const line = raw.replace(/#.*/, '').trim();
    if (line === '') continue;
    const header = /^\[([a-z]+)\]$/.exec(line);
    if (header) {
      current = sections.get(header[1]!) ?? [];
      sections.set(header[1]!, current);
    } else if (current === undefined) {
      throw new Error(`system-packages.txt: '${line}' comes before any [section]`);
    } else {
      current.push(line);
    }
  }
  return sections;
}

/** What the build may rely on: setup's [build] set plus the [given] prerequisites. */
export function buildPackages(sections: Map<string, string[]>): string[] {
  return [...(sections.get('given') ?? []), ...(sections.get('build') ?? [])];
}

// System files only: what a Debian package could own. /usr/local is the admin's own.
const isSystemPath = (p: string) => /^\/(usr|lib|lib32|lib64|libx32|bin|sbin|opt)\//.test(p) && !p.startsWith('/usr/local/');

/** The cmake command cmake-js runs for `native/`, with a Makefile generator (ninja is optional). */
async function cmakeJsConfigureArgs(repoRoot: string): Promise<string[]> {
  const cmakeJs = join(repoRoot, 'node_modules', '.bin', 'cmake-js');
  const { stdout } = await run(cmakeJs, ['print-configure', '--out', 'build', '--config', 'Release'], {
    cwd: join(repoRoot, 'native'),
    ...big,
  });
  // It prints a JavaScript array literal: 'cmake', '<source dir>', then flags.
  const words = [...stdout.matchAll(/'((?:[^'\\]|\\.)*)'/g)].map((m) => m[1]!);
  return words.filter((w) => w.startsWith('-D') && !w.startsWith('-DCMAKE_LIBRARY_OUTPUT_DIRECTORY'));
}

interface TraceLine {
  file?: string;
  cmd?: string;
  args?: string[];
}

const findKeywords = new Set(['HINTS', 'PATHS', 'PATH_SUFFIXES', 'DOC', 'NO_DEFAULT_PATH', 'REQUIRED', 'NO_CACHE', 'ENV']);

/** Files CMake read or found while configuring: its trace, the cache, find_path hits, the link line. */
function filesFromConfigure(buildDir: string, trace: TraceLine[]): string[] {
  const files = new Set<string>();
  for (const line of trace) if (line.file) files.add(line.file);

  const cache = new Map<string, string>();
  for (const entry of readFileSync(join(buildDir, 'CMakeCache.txt'), 'utf8').split('\n')) {
    const m = /^([^#/][^:=]*):(FILEPATH|PATH|STRING|INTERNAL)=(.*)$/.exec(entry);
    if (m) cache.set(m[1]!, m[3]!);
    if (m && m[2] === 'FILEPATH' && isAbsolute(m[3]!)) files.add(m[3]!);
  }
  // find_path stores only the folder; the file it found there is the first of its NAMES present.
  for (const line of trace) {
    if (line.cmd?.toLowerCase() !== 'find_path' || !line.args) continue;
    const [variable, ...rest] = line.args;
    const dir = cache.get(variable!);
    if (!dir || !isAbsolute(dir)) continue;
    const start = rest[0] === 'NAMES' ? 1 : 0;
    const names: string[] = [];
    for (const word of rest.slice(start)) {
      if (findKeywords.has(word)) break;
      names.push(word);
    }
    const hit = names.map((n) => join(dir, n)).find((p) => existsSync(p));
    if (hit) files.add(hit);
  }
  return [...files];
}

async function filesFromLinkLine(buildDir: string): Promise<string[]> {
  const linkTxt = join(buildDir, 'CMakeFiles', 'ninodes.dir', 'link.txt');
  const words = readFileSync(linkTxt, 'utf8').trim().split(/\s+/);
  const files = words.filter((w) => isAbsolute(w));
  const compiler = words[0]!;
  for (const w of words) {
    const lib = /^-l(.+)$/.exec(w)?.[1];
    if (!lib) continue;
    for (const name of [`lib${lib}.so`, `lib${lib}.a`]) {
      const { stdout } = await run(compiler, [`-print-file-name=${name}`], big);
      const found = stdout.trim();
      if (isAbsolute(found)) {
        files.push(normalize(found));
        break;
      }
    }
  }
  return files;
}

/** Every header each source includes, by preprocessing it with its own compile command and -M. */
async function filesFromHeaders(buildDir: string, depDir: string): Promise<string[]> {
  const commands = JSON.parse(readFileSync(join(buildDir, 'compile_commands.json'), 'utf8')) as Array<{
    directory: string;
    command: string;
  }>;
  const files = new Set<string>();
  let next = 0;
  const worker = async () => {
    while (next < commands.length) {
      const index = next++;
      const { directory, command } = commands[index]!;
      const depFile = join(depDir, `${index}.d`);
      // The compile command minus its object output, plus -M: headers only, nothing compiled. -MG
      // takes a missing header for a generated one (the SPIR-V the build compiles from shaders).
      const preprocess = `${command.replace(/ -o \S+/, '')} -M -MG -MF ${depFile}`;
      await run('sh', ['-c', preprocess], { cwd: directory, ...big });
      const deps = readFileSync(depFile, 'utf8').replace(/\\\n/g, ' ').split(/\s+/).slice(1);
      for (const dep of deps) if (dep !== '') files.add(resolve(directory, dep));
    }
  };
  await Promise.all([worker(), worker(), worker()]);
  return [...files];
}

/** Configures `native/` in a temporary folder and returns every system file the build uses. */
export async function collectBuildSystemFiles(repoRoot: string): Promise<string[]> {
  const work = mkdtempSync(join(tmpdir(), 'ninodes-system-packages-'));
  try {
    const buildDir = join(work, 'build');
    const tracePath = join(work, 'trace.json');
    const args = await cmakeJsConfigureArgs(repoRoot);
    await run(
      'cmake',
      [
        '-S', join(repoRoot, 'native'), '-B', buildDir, '-G', 'Unix Makefiles', '--no-warn-unused-cli', ...args,
        '-DCMAKE_EXPORT_COMPILE_COMMANDS=ON', '--trace-expand', '--trace-format=json-v1', `--trace-redirect=${tracePath}`,
      ],
      big,
    );
    const trace = readFileSync(tracePath, 'utf8')
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as TraceLine);
    const all = [
      ...filesFromConfigure(buildDir, trace),
      ...(await filesFromLinkLine(buildDir)),
      ...(await filesFromHeaders(buildDir, work)),
    ];
    return [...new Set(all.map((f) => normalize(f)))].filter(isSystemPath).sort();
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

// With merged /usr a file may be known to dpkg under /lib or /usr/lib, by its link or its target.
function spellings(file: string): string[] {
  const out = new Set([file]);
  try {
    out.add(realpathSync(file));
  } catch {
    // A dangling path still gets its literal spellings.
  }
  for (const p of [...out]) {
    const twin = /^\/usr\/(lib|lib32|lib64|bin|sbin)\//.test(p) ? p.slice(4) : /^\/(lib|lib32|lib64|bin|sbin)\//.test(p) ? `/usr${p}` : undefined;
    if (twin) out.add(twin);
  }
  return [...out];
}

/** The Debian packages owning each file (empty when none does), from one `dpkg -S` call. */
export async function owningPackages(files: string[]): Promise<Map<string, string[]>> {
  const spelled = new Map(files.map((f) => [f, spellings(f)]));
  const queries = [...new Set([...spelled.values()].flat())];
  // dpkg -S exits 1 when any path is unowned; the owned ones are still printed.
  const stdout = await run('dpkg', ['-S', ...queries], big).then(
    (r) => r.stdout,
    (e: { stdout?: string }) => e.stdout ?? '',
  );
  const byPath = new Map<string, string[]>();
  for (const line of stdout.split('\n')) {
    if (line.startsWith('diversion ')) continue;
    const cut = line.indexOf(': /');
    if (cut < 0) continue;
    const packages = line.slice(0, cut).split(', ').map((p) => p.replace(/:[a-z0-9]+$/, ''));
    byPath.set(line.slice(cut + 2), packages);
  }
  const owners = new Map<string, string[]>();
  for (const [file, names] of spelled) owners.set(file, names.map((n) => byPath.get(n)).find((p) => p !== undefined) ?? []);
  return owners;
}

/** Installed packages with their Depends + Pre-Depends (alternative groups) and what provides each virtual name. */
async function installedPackages(): Promise<{ depends: Map<string, string[][]>; providers: Map<string, string[]> }> {
  const { stdout } = await run('dpkg-query', ['-W', '-f=${db:Status-Abbrev}\t${Package}\t${Depends}\t${Pre-Depends}\t${Provides}\n'], big);
  const depends = new Map<string, string[][]>();
  const providers = new Map<string, string[]>();
  const names = (field: string) => field.split('|').map((alt) => alt.trim().replace(/\s*\(.*\)$/, '').replace(/:[a-z0-9]+$/, ''));
  for (const line of stdout.split('\n')) {
    const [status, pkg, dep, pre, provides] = line.split('\t');
    if (!status?.startsWith('ii') || !pkg) continue;
    const groups = [dep, pre].flatMap((f) => (f ? f.split(',').map(names) : []));
    depends.set(pkg, [...(depends.get(pkg) ?? []), ...groups]);
    for (const group of provides ? provides.split(',').map(names) : []) {
      for (const v of group) providers.set(v, [...(providers.get(v) ?? []), pkg]);
    }
  }
  return { depends, providers };
}

/**
 * Every package apt would install for `roots` without Recommends: Depends and Pre-Depends,
 * recursively; of alternatives the first (what apt picks), and for a virtual name its providers.
 */
export async function dependsClosure(roots: string[]): Promise<Set<string>> {
  const { depends, providers } = await installedPackages();
  const seen = new Set<string>();
  const queue = [...roots];
  while (queue.length) {
    const pkg = queue.pop()!;
    if (seen.has(pkg)) continue;
    seen.add(pkg);
    for (const group of depends.get(pkg) ?? []) {
      const first = group[0]!;
      if (depends.has(first) || !providers.has(first)) queue.push(first);
      else queue.push(...providers.get(first)!);
    }
  }
  return seen;
}

export interface SystemPackageProblem {
  /** The package to add to scripts/system-packages.txt [build], or null for a file no package owns. */
  package: string | null;
  files: string[];
}

/** Judges the files the build uses against a package list's text; empty when setup covers them all. */
export async function checkBuildPackages(files: string[], owners: Map<string, string[]>, listText: string): Promise<SystemPackageProblem[]> {
  const allowed = await dependsClosure(buildPackages(parsePackageList(listText)));
  const missing = new Map<string | null, string[]>();
  for (const file of files) {
    const owning = owners.get(file) ?? [];
    if (owning.some((p) => allowed.has(p))) continue;
    const key = owning[0] ?? null;
    missing.set(key, [...(missing.get(key) ?? []), file]);
  }
  return [...missing].map(([pkg, list]) => ({ package: pkg, files: list }));
}

/** One line per problem, naming the package and the files that need it. */
export function describeProblems(problems: SystemPackageProblem[]): string {
  return problems
    .map((p) =>
      p.package === null
        ? `no Debian package owns ${p.files.join(', ')}: the build uses a file installed by hand`
        : `${p.package} is not installed by scripts/setup.sh: the build uses ${p.files.slice(0, 3).join(', ')}${p.files.length > 3 ? ` and ${p.files.length - 3} more` : ''}; add it to [build] in scripts/system-packages.txt`,
    )
    .join('\n');
}
