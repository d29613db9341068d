// The typed surface of the addon (`NativeAddon` in @ninodes/native's index.d.cts) must name exactly
// what the loaded ninodes.node exports: a binding registered in C++ without a type, or a type left
// behind after a binding was removed, fails here. The interface is read from the declaration file
// with the TypeScript parser, so the check covers the file as written, not a copy of its keys.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { nativeAddon } from './native-addon.js';

const require = createRequire(import.meta.url);

/** Member names of `interface NativeAddon` in the .d.cts that @ninodes/native publishes. */
function declaredKeys(): string[] {
  const manifest = require.resolve('@ninodes/native/package.json');
  const file = join(dirname(manifest), (JSON.parse(readFileSync(manifest, 'utf8')) as { types: string }).types);
  const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, false, ts.ScriptKind.TS);
  const found = source.statements.find((s): s is ts.InterfaceDeclaration => ts.isInterfaceDeclaration(s) && s.name.text === 'NativeAddon');
  if (found === undefined) throw new Error(`no interface NativeAddon in ${file}`);
  return found.members.map((m) => {
    if (m.name === undefined || !ts.isIdentifier(m.name)) throw new Error(`NativeAddon member without a plain name in ${file}`);
    return m.name.text;
  });
}

describe('NativeAddon interface', () => {
  it('declares every export of the loaded addon and nothing else', () => {
    const declared = declaredKeys();
    const exported = Object.keys(nativeAddon());
    expect(declared.length).toBeGreaterThan(40);
    expect(new Set(declared).size).toBe(declared.length);
    expect(exported.filter((k) => !declared.includes(k)), 'exported by the addon but not declared').toEqual([]);
    expect(declared.filter((k) => !exported.includes(k)), 'declared but not exported by the addon').toEqual([]);
  });
});
