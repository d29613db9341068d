// @ninodes/native installs the prebuilt package of exactly its own version: a release that bumped
// one without the other would ship a stale binary. changesets keeps them in one fixed group.
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = process.env.NINODES_REPO_ROOT as string;
const readJson = (path: string) => JSON.parse(readFileSync(join(root, path), 'utf8')) as unknown;
const native = readJson('native/package.json') as { version: string; optionalDependencies?: Record<string, string> };
const platforms = readdirSync(join(root, 'native', 'platforms')).map((dir) => readJson(`native/platforms/${dir}/package.json`) as { name: string; version: string });

describe('prebuilt platform packages', () => {
  it.each(platforms.map((p) => [p.name, p]))('%s is an optional dependency of @ninodes/native at exactly its version', (_name, platform) => {
    expect(platform.version).toBe(native.version);
    expect(native.optionalDependencies?.[platform.name]).toBe(native.version);
  });

  it('changesets versions @ninodes/native and every platform package together', () => {
    const fixed = (readJson('.changeset/config.json') as { fixed: string[][] }).fixed;
    const group = fixed.find((g) => g.includes('@ninodes/native'));
    expect(group).toBeDefined();
    for (const p of platforms) expect(group).toContain(p.name);
  });
});
