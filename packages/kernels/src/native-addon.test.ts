// A native addon that the dynamic loader refuses is a coded NinodesError naming the file, the
// loader's message and what to install. Run in a child: a failed dlopen cannot be undone in-process.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const HANG_MS = Number(process.env.NINODES_TEST_HANG_MS ?? 900_000); // the shared hang guard (vitest.shared.ts)

const dist = new URL('../dist/index.js', import.meta.url).href;

/** Loads the addon in a child with `env`, returns the NinodesError fields it printed (or 'loaded'). */
function loadInChild(env: NodeJS.ProcessEnv): { code?: string; message?: string; where?: string; hint?: string } | 'loaded' {
  const script = `import(${JSON.stringify(dist)}).then((k) => { try { k.buildInfo(); console.log('"loaded"'); } catch (e) { console.log(JSON.stringify({ code: e.code, message: e.message, where: e.where, hint: e.hint, isNinodes: k.isNinodesError(e) })); } });`;
  const child = spawnSync(process.execPath, ['--input-type=module', '-e', script], { env: { ...process.env, ...env }, encoding: 'utf8', timeout: HANG_MS });
  expect(child.error?.message, `the child was killed by the test's hang guard after ${HANG_MS} ms`).toBeUndefined();
  expect(child.status, child.stderr).toBe(0);
  return JSON.parse(child.stdout) as never;
}

describe('loading the native addon', () => {
  it('loads in a child with the ordinary environment (the control for the test below)', () => {
    expect(loadInChild({})).toBe('loaded');
  });

  it('reports an unloadable oneDNN as ADDON_LOAD_FAILED with the loader message and an apt line', () => {
    // An empty libdnnl.so.2 first on the library path: the dynamic loader finds it and rejects it.
    const dir = mkdtempSync(join(tmpdir(), 'ninodes-dnnl-'));
    try {
      writeFileSync(join(dir, 'libdnnl.so.2'), '');
      const result = loadInChild({ LD_LIBRARY_PATH: dir });
      expect(result).toMatchObject({ code: 'ADDON_LOAD_FAILED', isNinodes: true });
      if (result === 'loaded') return;
      expect(result.message).toContain('libdnnl.so.2');
      expect(result.message).toContain('file too short');
      expect(result.where).toMatch(/ninodes\.node$/);
      expect(result.hint).toMatch(/apt-get install -y .*libdnnl/);
      expect(result.hint).not.toContain('scripts/setup.sh');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
