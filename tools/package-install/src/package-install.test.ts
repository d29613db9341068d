// The published form, as a user gets it: pack @ninodes/runner, everything it depends on and the
// prebuilt platform package; install the tarballs offline into a scratch project whose PATH has
// node, npm and sh and nothing else (no cmake, no compiler, no make), with no npm config of this
// machine (its nodedir included); then run a linear through ESM and CJS against a float64 loop, and
// the CLI on the default model. Finally break the install the two ways a user can and expect the
// coded errors with hints a package user can follow.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Packed, closure, pack, toolsOnlyPath, workspaces, writeScratchProject } from './scratch-project.js';

const HANG_MS = Number(process.env.NINODES_TEST_HANG_MS ?? 900_000); // the shared hang guard (vitest.shared.ts)

const root = process.env.NINODES_REPO_ROOT as string;
const PREBUILT = '@ninodes/native-linux-x64-gnu';
const tmp = mkdtempSync(join(tmpdir(), 'ninodes-install-'));
const project = join(tmp, 'project');
// This machine's npm cache (outside the workspace: `npm config` refuses workspace folders).
const npmCache = spawnSync('npm', ['config', 'get', 'cache'], { cwd: tmp, encoding: 'utf8' }).stdout.trim();
let env: NodeJS.ProcessEnv;

afterAll(() => rmSync(tmp, { recursive: true, force: true }));

// Bounded, with room for a machine busy with the other workspaces' tests (the CLI run took 50 s there).
const SLOW = 300_000;

function run(cmd: string, args: readonly string[]) {
  const r = spawnSync(cmd, args, { cwd: project, env, encoding: 'utf8', timeout: SLOW - 30_000 });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr, output: `${r.stdout}\n${r.stderr}\n${r.error?.message ?? ''}` };
}

// y = x·wᵀ + b for a 3x5 input and a 4x5 weight, in float32 through @ninodes/kernels.
const M = 3;
const K = 5;
const N = 4;
const xs = Array.from({ length: M * K }, (_, i) => Math.sin(i + 1));
const ws = Array.from({ length: N * K }, (_, i) => Math.cos(0.7 * i));
const bs = Array.from({ length: N }, (_, i) => 0.25 * i - 0.5);
const linearCall = `k.linear(k.Tensor.f32([${M}, ${K}], ${JSON.stringify(xs)}), k.Tensor.f32([${N}, ${K}], ${JSON.stringify(ws)}), k.Tensor.f32([${N}], ${JSON.stringify(bs)}))`;

function expectLinear(printed: string): void {
  const y = JSON.parse(printed) as number[];
  expect(y).toHaveLength(M * N);
  for (let i = 0; i < M; i++) {
    for (let j = 0; j < N; j++) {
      let want = bs[j]!;
      for (let p = 0; p < K; p++) want += xs[i * K + p]! * ws[j * K + p]!;
      expect(y[i * N + j]).toBeCloseTo(want, 5);
    }
  }
}

describe('the packed packages in a scratch project with no compiler', () => {
  beforeAll(() => {
    const tarballs = join(tmp, 'tarballs');
    mkdirSync(tarballs);
    mkdirSync(project);
    // The prebuilt package is assembled from this checkout's build into a scratch copy.
    const prebuiltDir = join(tmp, 'prebuilt');
    const assembled = spawnSync(process.execPath, [join(root, 'native/scripts/pack-prebuilt.mjs'), '--out', prebuiltDir], { encoding: 'utf8', timeout: HANG_MS });
    expect(assembled.status, assembled.stderr).toBe(0);

    const all = workspaces(root);
    const needed = closure(all, ['@ninodes/runner']);
    expect(needed.map((w) => w.name)).toContain(PREBUILT);
    const dirs = needed.map((w) => (w.name === PREBUILT ? prebuiltDir : join(root, w.path)));
    const tgz = pack(dirs, tarballs);
    const packed: Packed[] = needed.map((w) => ({ workspace: w, file: `../tarballs/${tgz.get(w.name)!.filename.split('/').pop()}`, integrity: tgz.get(w.name)!.integrity }));
    writeScratchProject(root, project, packed);

    const home = join(tmp, 'home');
    mkdirSync(home);
    writeFileSync(join(home, '.npmrc'), '');
    env = {
      PATH: toolsOnlyPath(join(tmp, 'bin'), ['node', 'npm', 'sh']),
      HOME: home,
      npm_config_cache: npmCache,
      npm_config_userconfig: join(home, '.npmrc'),
      NINODES_CACHE: join(tmp, 'cache'),
    };
  }, SLOW);

  it('has no cmake, compiler or make on PATH', () => {
    for (const tool of ['cmake', 'g++', 'c++', 'cc', 'gcc', 'make']) expect(run('sh', ['-c', `command -v ${tool}`]).status).not.toBe(0);
  });

  it('installs offline without building (the prebuilt package loads)', () => {
    const r = run('npm', ['ci', '--offline', '--no-audit', '--no-fund', '--foreground-scripts']);
    expect(r.status, r.output).toBe(0);
    expect(existsSync(join(project, 'node_modules/@ninodes/native/build'))).toBe(false);
    expect(existsSync(join(project, `node_modules/${PREBUILT}/libdnnl.so.2`))).toBe(true);
  }, SLOW);

  it('runs a linear through import (ESM)', () => {
    const r = run(process.execPath, ['--input-type=module', '-e', `import * as k from '@ninodes/kernels'; const y = await ${linearCall}; console.log(JSON.stringify([...y.data]));`]);
    expect(r.status, r.output).toBe(0);
    expectLinear(r.stdout);
  });

  it('runs a linear through require (CJS) and mixes both builds', () => {
    // The tensor comes from the CJS build, the safetensors writer uses the ESM build of kernels.
    const script = `const k = require('@ninodes/kernels');
      (async () => {
        const y = await ${linearCall};
        const { writeSafetensors, tensorSources } = await import('@ninodes/memory');
        await writeSafetensors('y.safetensors', tensorSources({ y }));
        console.log(JSON.stringify([...y.data]));
      })();`;
    const r = run(process.execPath, ['-e', script]);
    expect(r.status, r.output).toBe(0);
    expectLinear(r.stdout);
    const file = readFileSync(join(project, 'y.safetensors'));
    const body = file.subarray(8 + Number(file.readBigUInt64LE(0)));
    expectLinear(JSON.stringify([...new Float32Array(body.buffer.slice(body.byteOffset, body.byteOffset + body.byteLength))]));
  });

  it('runs `ninodes run --preset h3-tiny`', () => {
    const r = run(join(project, 'node_modules/.bin/ninodes'), ['run', '--preset', 'h3-tiny', '--steps', '1', '--out', join(tmp, 'run')]);
    expect(r.status, r.output).toBe(0);
    const report = JSON.parse(readFileSync(join(tmp, 'run', 'report.json'), 'utf8')) as Record<string, unknown>;
    expect(report).toBeTypeOf('object');
    expect(existsSync(join(tmp, 'run', 'latent.safetensors'))).toBe(true);
  }, SLOW);

  it('reports an unloadable bundled library as ADDON_LOAD_FAILED, naming it and how to reinstall', () => {
    truncateSync(join(project, `node_modules/${PREBUILT}/libdnnl.so.2`), 0);
    const r = run(join(project, 'node_modules/.bin/ninodes'), ['run', '--preset', 'h3-tiny', '--steps', '1', '--out', join(tmp, 'run2')]);
    expect(r.status).not.toBe(0);
    expect(r.stderr).toContain('ADDON_LOAD_FAILED');
    expect(r.stderr).toContain('libdnnl.so.2: file too short');
    expect(r.stderr).toContain(`node_modules/${PREBUILT}`);
    expect(r.stderr).not.toContain('INTERNAL');
    expect(r.stderr).not.toContain('scripts/setup.sh');
  });

  it('reports a missing addon as ADDON_MISSING with the npm line that installs it', () => {
    rmSync(join(project, `node_modules/${PREBUILT}`), { recursive: true });
    const r = run(process.execPath, ['-e', "require('@ninodes/kernels').buildInfo()"]);
    expect(r.status).not.toBe(0);
    expect(r.stderr).toContain('ADDON_MISSING');
    expect(r.stderr).toContain(`npm install ${PREBUILT}`);
    // The source build is an install script npm may skip as unapproved: the hint approves it first.
    expect(r.stderr).toContain('npm approve-scripts @ninodes/native && npm rebuild @ninodes/native');
  });
});

describe('the build from source of @ninodes/native', () => {
  it('configures against node-api-headers, with no nodedir and no Node headers download', () => {
    // No npm config of this machine (its nodedir points at the system headers), an empty HOME (no
    // ~/.cmake-js cache) and an unreachable proxy: cmake-js must not need the network.
    const home = join(tmp, 'configure-home');
    mkdirSync(home);
    const r = spawnSync(process.execPath, [join(root, 'node_modules/cmake-js/bin/cmake-js'), 'print-configure', '--out', join(tmp, 'configure-build')], {
      cwd: join(root, 'native'),
      env: { PATH: process.env.PATH, HOME: home, HTTPS_PROXY: 'http://127.0.0.1:9', HTTP_PROXY: 'http://127.0.0.1:9' },
      encoding: 'utf8',
      timeout: HANG_MS,
    });
    const output = `${r.stdout}\n${r.stderr}`;
    expect(r.status, output).toBe(0);
    expect(output).toContain(join('node-api-headers', 'include'));
    expect(output).not.toContain('nodejs.org');
    expect(existsSync(join(home, '.cmake-js'))).toBe(false);
  });
});
