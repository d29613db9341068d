// Each package throws only the codes of its own list or of a list below it, and every listed code
// is thrown; the check must also catch each kind of violation injected into a copy of the tree.
import { appendFileSync, cpSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { removeTrees, repoRoot, tempTree, writeFiles } from './depcruise-run.js';
import { checkErrorCodes, parseList } from './error-codes.js';

afterAll(removeTrees);

/** packages/, apps/ and native/src of this repository (their package.json and sources, no builds). */
function copyOfTree(): string {
  const dir = tempTree('ninodes-error-codes-');
  for (const part of ['packages', 'apps', 'native/src']) {
    cpSync(join(repoRoot, part), join(dir, part), {
      recursive: true,
      filter: (src) => !/\/(node_modules|dist|build|weights)(\/|$)/.test(src.slice(repoRoot.length)),
    });
  }
  return dir;
}

/** Inserts `entry` as the first entry of the list object in `file`; returns its line. */
function addToList(file: string, entry: string): number {
  const text = readFileSync(file, 'utf8');
  const at = text.indexOf('_ERROR_CODES = {\n') + '_ERROR_CODES = {\n'.length;
  writeFileSync(file, `${text.slice(0, at)}  ${entry}\n${text.slice(at)}`);
  return text.slice(0, at).split('\n').length;
}

// Spelled in pieces so that this file does not hold the codes it injects.
const code = (...parts: string[]) => parts.join('_');

describe('error codes', () => {
  it('every package has a list, throws only listed codes, and every listed code is thrown', () => {
    expect(checkErrorCodes(repoRoot).map((v) => `${v.file}:${v.line}: ${v.why}`)).toEqual([]);
  });

  it('reads the codes of a list with their lines', () => {
    const text = "import x from 'y';\nexport const A_ERROR_CODES = {\n  // a group\n  ONE: 'first',\n  TWO_2: \"second\",\n} as const;\nconst OTHER = { THREE: 'x' };\n";
    expect([...parseList(text)]).toEqual([
      ['ONE', 4],
      ['TWO_2', 5],
    ]);
  });

  it('finds each injected violation, naming file and line, and nothing else', () => {
    const dir = copyOfTree();
    const unknown = code('BRAND', 'NEW', 'CODE');
    const dead = code('NOBODY', 'THROWS', 'THIS');
    writeFiles(dir, {
      // A code in no list, thrown through the raw constructor (the types cannot see this one).
      'packages/quant/src/injected.ts': `import { NinodesError } from '@ninodes/kernels';\n\nexport function f(): never {\n  throw new NinodesError(\n    '${unknown}',\n    'x',\n  );\n}\n`,
      // A code of quant thrown by device, which does not depend on quant; a sibling's code in tp.
      'packages/device/src/injected.ts': `export const e = { code: '${code('GGUF', 'BAD', 'MAGIC')}' };\n`,
      'packages/tp/src/injected.ts': `import { isNinodesError } from '@ninodes/kernels';\nexport const m = (e: unknown) => isNinodesError(e, '${code('ARCHITECTURE', 'MISMATCH')}');\n`,
      // Upper-case strings that are not error codes: a dtype, an environment variable.
      'packages/models/src/injected.ts': `export const dtype = 'Q4_K';\nexport const v = process.env['NINODES_INJECTED_VAR'];\nexport const k = ['F8_E4M3', 'ENOENT'];\nexport const c = (x: { code: string }) => x.code === 'EEXIST';\n`,
    });
    // A code raised by the native addon that kernels' list lacks; an environment variable it reads.
    appendFileSync(join(dir, 'native/src/io/mmap.cc'), `\nstatic void injected() { if (std::getenv("NINODES_INJECTED")) ninodes::fail("${unknown}", "x"); }\n`);
    const nativeLine = readFileSync(join(dir, 'native/src/io/mmap.cc'), 'utf8').split('\n').length - 1;
    // A listed code nothing throws; a code listed by two packages.
    const deadLine = addToList(join(dir, 'packages/memory/src/error-codes.ts'), `${dead}: 'never thrown',`);
    const twiceLine = addToList(join(dir, 'packages/models/src/error-codes.ts'), `${code('TENSOR', 'NOT', 'FOUND')}: 'listed twice',`);
    // A package without a list.
    writeFiles(dir, { 'packages/extra/package.json': '{ "name": "@ninodes/extra" }\n', 'packages/extra/src/index.ts': 'export const x = 1;\n' });

    const found = checkErrorCodes(dir).map((v) => `${v.file}:${v.line} ${v.code}`);
    expect(found.sort()).toEqual(
      [
        `packages/quant/src/injected.ts:5 ${unknown}`,
        `packages/device/src/injected.ts:1 ${code('GGUF', 'BAD', 'MAGIC')}`,
        `packages/tp/src/injected.ts:2 ${code('ARCHITECTURE', 'MISMATCH')}`,
        `native/src/io/mmap.cc:${nativeLine} ${unknown}`,
        `packages/memory/src/error-codes.ts:${deadLine} ${dead}`,
        `packages/models/src/error-codes.ts:${twiceLine} ${code('TENSOR', 'NOT', 'FOUND')}`,
        'packages/extra/src/error-codes.ts:0 ',
      ].sort(),
    );
  });
});
