// A clone from the project's public home has nothing beside it: no file of the repository may
// name a path outside it. Finds, in every tracked (or new, not ignored) text file except Markdown,
// a `../` chain or a run of '..' path segments that climbs above the repository root from the
// file's own folder, a path into the sibling `shared/` folder, and absolute paths into the work
// folder of the machine it was written on.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

export interface EscapingPath {
  file: string;
  line: number;
  text: string;
  why: string;
}

const checks: Array<{ pattern: RegExp; why: string; depth?: (match: RegExpMatchArray) => number }> = [
  { pattern: /\.\.\/shared\b|(?<![\w./-])shared\/fixtures\b/g, why: 'reads the shared folder beside the clone' },
  { pattern: /(?<![\w.-])\/work\//g, why: 'an absolute path on the machine it was written on' },
  // `../../..`: how far up it climbs, counted from the file's folder.
  { pattern: /(?<![\w.])(?:\.\.\/)+(?:\.\.(?![\w.]))?/g, why: 'climbs above the repository root', depth: (m) => (m[0].match(/\.\./g) ?? []).length },
  // join(here, '..', '..'): a run of '..' segments.
  { pattern: /(['"`])\.\.\1(?:\s*,\s*(['"`])\.\.\2)*/g, why: 'climbs above the repository root', depth: (m) => (m[0].match(/\.\./g) ?? []).length },
];

/** Files git would commit: tracked plus new ones that are not ignored. */
function repositoryFiles(root: string): string[] {
  const out = execFileSync('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], { cwd: root, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
  return [...new Set(out.split('\0').filter((f) => f !== ''))];
}

export function findEscapingPaths(root: string): EscapingPath[] {
  const found: EscapingPath[] = [];
  for (const file of repositoryFiles(root)) {
    if (file.endsWith('.md')) continue;
    let text: string;
    try {
      text = readFileSync(join(root, file), 'utf8');
    } catch {
      continue; // deleted in the work tree but still in the index
    }
    if (text.includes('\0')) continue; // binary
    const folderDepth = file.split('/').length - 1;
    text.split('\n').forEach((line, index) => {
      // One report per line, with the first reason that applies.
      const check = checks.find((c) => [...line.matchAll(c.pattern)].some((m) => !c.depth || c.depth(m) > folderDepth));
      if (check) found.push({ file, line: index + 1, text: line.trim().slice(0, 160), why: check.why });
    });
  }
  return found;
}
