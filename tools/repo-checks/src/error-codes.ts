// Every error code a package throws is in its list (`src/error-codes.ts`) or in the list of a
// package it depends on (a re-thrown code), every listed code is thrown somewhere, and no code is
// listed twice. The TypeScript types catch most of this at the call sites; this check also sees
// what types cannot: the codes the native addon raises (they surface through kernels, so they
// belong to kernels' list), a raw `new NinodesError(...)` that bypasses a package's typed
// constructor, and entries nothing throws any more.
import { constants } from 'node:os';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

export interface ErrorCodeViolation {
  file: string;
  line: number;
  code: string;
  why: string;
}

/** A workspace with its list: codes (with the list's line of each) and its @ninodes dependencies. */
interface Workspace {
  name: string;
  dir: string;
  deps: string[];
  list: Map<string, number> | undefined;
}

/** The native addon has no list of its own: its errors reach users only through kernels. */
const NATIVE_SOURCES = { owner: 'kernels', dir: 'native/src' };
const LIST_FILE = 'src/error-codes.ts';

const CODE = String.raw`[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)*`;
const TS_LITERAL = new RegExp(String.raw`(['"\x60])(${CODE})\1`, 'g');
const CC_LITERAL = new RegExp(String.raw`"(${CODE})"`, 'g');
// Where an unknown upper-case literal is a code all the same: what precedes it in the source.
const TS_CONTEXTS = [
  /new\s+\w*Error\s*\(\s*$/, // first argument of an error constructor
  /\b\w*(?:Error|error|fail|Fail)\s*\(\s*$/, // first argument of an error helper
  /\bcode\s*(?::|={2,3}|!={1,2})\s*$/, // { code: 'X' }, code === 'X'
  /isNinodesError\([^,()]*,\s*$/,
];
const CC_CONTEXTS = [/\bfail\s*\(\s*$/, /to_js_error\s*\([^,()]*,\s*$/, /CommStatus\s*\{\s*$/, /\bcode_?\s*=\s*$/];
/** Node's errno names (ENOENT, EEXIST, ...) are compared with `code ===` too, and are not ours. */
const ERRNO_NAMES = new Set(Object.keys(constants.errno));

function workspaces(root: string): Workspace[] {
  const found: Workspace[] = [];
  for (const parent of ['packages', 'apps']) {
    if (!existsSync(join(root, parent))) continue;
    for (const entry of readdirSync(join(root, parent), { withFileTypes: true })) {
      const dir = `${parent}/${entry.name}`;
      if (!entry.isDirectory() || !existsSync(join(root, dir, 'package.json')) || !existsSync(join(root, dir, 'src'))) continue;
      const pkg = JSON.parse(readFileSync(join(root, dir, 'package.json'), 'utf8')) as { dependencies?: Record<string, string> };
      const deps = Object.keys(pkg.dependencies ?? {})
        .filter((d) => d.startsWith('@ninodes/'))
        .map((d) => d.slice('@ninodes/'.length));
      const listPath = join(root, dir, LIST_FILE);
      found.push({ name: entry.name, dir, deps, list: existsSync(listPath) ? parseList(readFileSync(listPath, 'utf8')) : undefined });
    }
  }
  return found;
}

/**
 * The codes of a list file: the keys of its `..._ERROR_CODES = { CODE: 'meaning', ... } as const`
 * object, each with its line. Parsed as text, so that the check runs on a copy of the tree
 * without building it.
 */
export function parseList(text: string): Map<string, number> {
  const codes = new Map<string, number>();
  const start = text.search(/_ERROR_CODES\s*=\s*\{/);
  if (start < 0) return codes;
  const end = text.indexOf('} as const', start);
  const lines = text.slice(0, end < 0 ? undefined : end).split('\n');
  const first = text.slice(0, start).split('\n').length - 1;
  for (let i = first; i < lines.length; i += 1) {
    const m = /^\s*([A-Z][A-Z0-9_]*)\s*:\s*\S/.exec(lines[i] ?? '');
    if (m?.[1] !== undefined) codes.set(m[1], i + 1);
  }
  return codes;
}

function sourceFiles(root: string, dir: string, keep: (file: string) => boolean): string[] {
  const out: string[] = [];
  const walk = (rel: string) => {
    for (const entry of readdirSync(join(root, rel), { withFileTypes: true })) {
      const path = `${rel}/${entry.name}`;
      if (entry.isDirectory()) {
        if (entry.name !== 'node_modules' && entry.name !== 'dist' && entry.name !== 'build') walk(path);
      } else if (keep(path)) out.push(path);
    }
  };
  if (existsSync(join(root, dir))) walk(dir);
  return out.sort();
}

interface Occurrence {
  file: string;
  line: number;
  code: string;
}

/** Code literals in one file: known codes anywhere, unknown ones where the context makes them a code. */
function occurrences(root: string, file: string, known: Set<string>): Occurrence[] {
  const text = readFileSync(join(root, file), 'utf8');
  const cc = !file.endsWith('.ts');
  const literal = cc ? CC_LITERAL : TS_LITERAL;
  const contexts = cc ? CC_CONTEXTS : TS_CONTEXTS;
  const found: Occurrence[] = [];
  for (const m of text.matchAll(literal)) {
    const code = (cc ? m[1] : m[2]) as string;
    const before = text.slice(Math.max(0, (m.index ?? 0) - 160), m.index);
    if (!known.has(code) && (ERRNO_NAMES.has(code) || !contexts.some((c) => c.test(before)))) continue;
    // In C++ an environment variable's name is a string too.
    if (cc && /getenv\s*\(\s*$/.test(before)) continue;
    found.push({ file, line: text.slice(0, m.index).split('\n').length, code });
  }
  return found;
}

/** The files whose codes count for `w`: its sources but not its tests or its list; native/src for kernels. */
function sourcesOf(root: string, w: Workspace): string[] {
  const files = sourceFiles(root, `${w.dir}/src`, (f) => f.endsWith('.ts') && !f.endsWith('.test.ts') && !f.endsWith('.d.ts') && f !== `${w.dir}/${LIST_FILE}`);
  if (w.name === NATIVE_SOURCES.owner) files.push(...sourceFiles(root, NATIVE_SOURCES.dir, (f) => /\.(cc|cpp|h|hpp)$/.test(f)));
  return files;
}

/**
 * Every violation in the tree at `root`: a package without a list, a code listed twice, a code in
 * a source that is in no list or in the list of a package it does not depend on, and a listed code
 * that no source of its package, or of a package depending on it, names.
 */
export function checkErrorCodes(root: string): ErrorCodeViolation[] {
  const all = workspaces(root);
  const byName = new Map(all.map((w) => [w.name, w]));
  const violations: ErrorCodeViolation[] = [];
  const owner = new Map<string, Workspace>();
  for (const w of all) {
    if (w.list === undefined) {
      violations.push({ file: `${w.dir}/${LIST_FILE}`, line: 0, code: '', why: `${w.name} has no list of its error codes` });
      continue;
    }
    if (w.list.size === 0) violations.push({ file: `${w.dir}/${LIST_FILE}`, line: 0, code: '', why: 'no `..._ERROR_CODES = { CODE: "meaning" } as const` object found' });
    for (const [code, line] of w.list) {
      const other = owner.get(code);
      if (other) violations.push({ file: `${w.dir}/${LIST_FILE}`, line, code, why: `${code} is listed by ${other.name} too: one package owns each code` });
      else owner.set(code, w);
    }
  }
  const known = new Set(owner.keys());

  /** A workspace and everything it depends on, directly or not. */
  const closure = (name: string, seen = new Set<string>()): Set<string> => {
    if (seen.has(name)) return seen;
    seen.add(name);
    for (const d of byName.get(name)?.deps ?? []) closure(d, seen);
    return seen;
  };
  const thrownBy = new Map<string, Set<string>>(); // code -> workspaces whose sources use it
  for (const w of all) {
    const allowed = closure(w.name);
    for (const o of sourcesOf(root, w).flatMap((f) => occurrences(root, f, known))) {
      const listedBy = owner.get(o.code);
      if (!thrownBy.has(o.code)) thrownBy.set(o.code, new Set());
      thrownBy.get(o.code)?.add(w.name);
      if (listedBy !== undefined && allowed.has(listedBy.name)) continue;
      const why =
        listedBy === undefined
          ? `${o.code} is in no list: add it to ${w.dir}/${LIST_FILE} (or reuse a listed code of the same meaning)`
          : `${o.code} belongs to ${listedBy.name}, which ${w.name} does not depend on: move it to a package both depend on, or use a code of ${w.name}'s own`;
      violations.push({ file: o.file, line: o.line, code: o.code, why });
    }
  }
  for (const [code, w] of owner) {
    const users = [...(thrownBy.get(code) ?? [])].filter((u) => closure(u).has(w.name));
    if (users.length === 0) violations.push({ file: `${w.dir}/${LIST_FILE}`, line: w.list?.get(code) ?? 0, code, why: `${code} is listed but nothing throws it: remove the entry` });
  }
  return violations;
}
