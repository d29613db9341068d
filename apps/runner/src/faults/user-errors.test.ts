// Every file-system mistake and every input that cannot give a meaningful result is a coded error
// with a hint, refused before work where it can be: never INTERNAL, never a raw RangeError.
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Tensor } from '@ninodes/kernels';
import { buildHeader, openSafetensors, tensorSources, writeSafetensors } from '@ninodes/memory';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { main } from '../main.js';
import { canChattr, checkRunOutput, dirDigest, leftovers, microCheckpoint, mountTmpfs, runCli, unmount } from './harness.js';
import { inProcessCli } from '../test-support/in-process-cli.js';

const dir = mkdtempSync(join(tmpdir(), 'ninodes-user-errors-'));
const ckpt = join(dir, 'micro.safetensors');
const mounts: string[] = [];

const cli = inProcessCli(dir);

function expectCoded(r: { status: number; stderr: string }, code: string): void {
  expect(r.stderr).not.toContain('INTERNAL');
  expect(r.stderr).toContain(`error ${code}:`);
  expect(r.stderr).toContain('hint:');
  expect(r.status).toBe(code.startsWith('CLI_') ? 2 : 1);
}

const tiny = ['--frames', '1', '--height', '8', '--width', '8', '--steps', '1', '--threads', '1'];

beforeAll(async () => {
  await microCheckpoint(ckpt);
});
afterAll(() => {
  for (const m of mounts) unmount(m);
  rmSync(dir, { recursive: true, force: true });
});

describe('file-system mistakes are coded errors', () => {
  it('inspect of a directory: PATH_IS_DIRECTORY', async () => {
    expectCoded(await cli('inspect', dir), 'PATH_IS_DIRECTORY');
  });

  it('run --out naming an existing file: PATH_NOT_DIRECTORY, the file untouched', async () => {
    const file = join(dir, 'a-file');
    writeFileSync(file, 'keep');
    expectCoded(await cli('run', '--model', ckpt, ...tiny, '--out', file), 'PATH_NOT_DIRECTORY');
    expect(readFileSync(file, 'utf8')).toBe('keep');
    expect(leftovers(dir)).toEqual([]);
  });

  it('run --out under a file: PATH_NOT_DIRECTORY; under /proc: a coded error', async () => {
    expectCoded(await cli('run', '--model', ckpt, ...tiny, '--out', join(dir, 'a-file', 'sub', 'out')), 'PATH_NOT_DIRECTORY');
    expectCoded(await cli('run', '--model', ckpt, ...tiny, '--out', '/proc/nope'), 'OUT_DIR_UNWRITABLE');
  });

  it('quantize into a directory: PATH_IS_DIRECTORY before any work', async () => {
    const target = join(dir, 'a-dir');
    mkdirSync(target, { recursive: true });
    expectCoded(await cli('quantize', ckpt, target, '--format', 'f8_e4m3fn', '--force'), 'PATH_IS_DIRECTORY');
  });

  it('a .gguf without the GGUF magic is called a damaged GGUF, not a safetensors problem', async () => {
    const bad = join(dir, 'bad.gguf');
    writeFileSync(bad, Buffer.from('GGUX\x03\x00\x00\x00 and then nothing useful'));
    const r = await cli('inspect', bad);
    expectCoded(r, 'GGUF_BAD_MAGIC');
    expect(r.stderr).not.toMatch(/safetensors/i);
  });
});

describe('inputs that cannot give a meaningful result are refused up front', () => {
  it('--height 100000 --width 100000: RUN_TOO_LARGE, not "Invalid typed array length"', async () => {
    const out = join(dir, 'huge');
    const r = await cli('run', '--model', ckpt, '--frames', '1', '--height', '100000', '--width', '100000', '--out', out);
    expectCoded(r, 'RUN_TOO_LARGE');
    expect(readdirSync(dir)).not.toContain('huge');
    expect(leftovers(dir)).toEqual([]);
  });

  it('a --context of 10^8 text states (a sparse file of tens of GB) or 10^8 audio frames: RUN_TOO_LARGE naming the stream, before anything is read', async () => {
    const model = join(process.env.NINODES_FIXTURES ?? '', 'h3av', 'full', 'model.safetensors');
    const inputs = openSafetensors(join(process.env.NINODES_FIXTURES ?? '', 'h3av', 'full', 'inputs.safetensors'));
    const width = inputs.entry('context').shape[2]!;
    inputs.close();
    // Hundreds of GB of activations even for the fixture's small widths: more than any test machine holds.
    const states = 100_000_000;
    const shape = [1, states, width];
    const { json } = buildHeader([{ name: 'context', dtype: 'f32', shape, data: () => new Uint8Array(0) }], undefined);
    const file = join(dir, 'huge-context.safetensors');
    const len = Buffer.alloc(8);
    len.writeBigUInt64LE(BigInt(json.byteLength));
    writeFileSync(file, Buffer.concat([len, json]));
    truncateSync(file, 8 + json.byteLength + 4 * states * width);
    const r = await cli('run', '--model', model, ...tiny, '--context', file, '--out', join(dir, 'huge-context'));
    expectCoded(r, 'RUN_TOO_LARGE');
    expect(r.stderr).toContain(`${states} text states (--context)`);
    expect(r.stderr).toContain('(at --context)');
    const audio = await cli('run', '--model', model, ...tiny, '--audio-frames', '100000000', '--out', join(dir, 'huge-audio'));
    expectCoded(audio, 'RUN_TOO_LARGE');
    expect(audio.stderr).toContain('(at --audio)');
    expect(leftovers(dir)).toEqual([]);
  });

  it('a NaN or Inf in the starting latent: LATENT_NOT_FINITE', async () => {
    for (const bad of [Number.NaN, Number.POSITIVE_INFINITY]) {
      const latent = Tensor.zeros('f32', [1, 24, 1, 8, 8]);
      latent.data[5] = bad;
      const file = join(dir, 'nan-latent.safetensors');
      await writeSafetensors(file, tensorSources({ latent }));
      expectCoded(await cli('run', '--model', ckpt, '--latent', file, '--steps', '1', '--out', join(dir, 'nan-out')), 'LATENT_NOT_FINITE');
      expect(readdirSync(dir)).not.toContain('nan-out');
    }
  });

  it('--shift 1e308 is out of range; a shift that collapses the schedule is refused before a step', async () => {
    expectCoded(await cli('run', '--model', ckpt, ...tiny, '--shift', '1e308', '--out', join(dir, 's1')), 'CLI_OUT_OF_RANGE');
    const r = await cli('run', '--model', ckpt, '--frames', '1', '--height', '8', '--width', '8', '--steps', '8', '--shift', '100000', '--out', join(dir, 's2'));
    expectCoded(r, 'SHIFT_OUT_OF_RANGE');
    expect(r.stderr).not.toMatch(/steps: 1\//);
  });
});

describe('inspect at scale', () => {
  it('a checkpoint with 130k tensors is listed without overflowing the stack', async () => {
    const names = Array.from({ length: 130_000 }, (_, i) => ({ name: `t${i}.weight_scale`, dtype: 'f32' as const, shape: [0] }));
    const { json } = buildHeader(names.map((n) => ({ ...n, data: () => new Uint8Array(0) })), undefined);
    const file = join(dir, 'many.safetensors');
    const len = Buffer.alloc(8);
    len.writeBigUInt64LE(BigInt(json.byteLength));
    writeFileSync(file, Buffer.concat([len, json]));
    const r = await cli('inspect', file);
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    expect(r.stdout).toContain('tensors       130000');
  });
});

describe('file systems that refuse (root and tmpfs mounts where the machine allows them)', () => {
  it('--out on a full file system: NO_SPACE, nothing left behind', async (ctx) => {
    const mnt = join(dir, 'full');
    const m = mountTmpfs(mnt, 'size=64k');
    if (!m.ok) return ctx.skip(m.why);
    mounts.push(mnt);
    const out = join(mnt, 'out');
    const r = await cli('run', '--model', ckpt, '--frames', '3', '--height', '32', '--width', '32', '--steps', '1', '--threads', '1', '--out', out);
    expectCoded(r, 'NO_SPACE');
    expect(readdirSync(mnt)).toEqual([]);
  });

  it('--out on a read-only file system: READ_ONLY_FILESYSTEM before any work', async (ctx) => {
    const mnt = join(dir, 'ro');
    const m = mountTmpfs(mnt, 'size=1m,ro');
    if (!m.ok) return ctx.skip(m.why);
    mounts.push(mnt);
    const r = await cli('run', '--model', ckpt, ...tiny, '--out', join(mnt, 'out'));
    expectCoded(r, 'READ_ONLY_FILESYSTEM');
    expect(r.stderr).not.toMatch(/steps: 1\//);
  });

  it('a preset cache under a read-only file system: READ_ONLY_FILESYSTEM at NINODES_CACHE, not "no such file"', async (ctx) => {
    const mnt = join(dir, 'ro-cache');
    const m = mountTmpfs(mnt, 'size=1m,ro');
    if (!m.ok) return ctx.skip(m.why);
    mounts.push(mnt);
    const r = await runCli(['run', '--preset', 'h3-tiny', ...tiny, '--out', join(dir, 'ro-cache-out')], { env: { NINODES_CACHE: join(mnt, 'cache', 'presets') }, timeoutMs: 60_000 });
    expectCoded({ status: r.status ?? -1, stderr: r.stderr }, 'READ_ONLY_FILESYSTEM');
    expect(r.stderr).toContain('(at NINODES_CACHE)');
  });

  it('--out that is itself a mount point (a container volume): the rerun commits on its own file system', async (ctx) => {
    const mnt = join(dir, 'volume');
    const m = mountTmpfs(mnt, 'size=4m');
    if (!m.ok) return ctx.skip(m.why);
    mounts.push(mnt);
    const first = await cli('run', '--model', ckpt, ...tiny, '--seed', '1', '--out', mnt);
    expect(first.stderr).not.toContain('error');
    expect(first.status).toBe(0);
    const a = checkRunOutput(mnt);
    // Replacing needs --force, as for quantize.
    expectCoded(await cli('run', '--model', ckpt, ...tiny, '--seed', '2', '--out', mnt), 'OUTPUT_EXISTS');
    const second = await cli('run', '--model', ckpt, ...tiny, '--seed', '2', '--out', mnt, '--force');
    expect(second.stderr).not.toContain('error');
    expect(second.status).toBe(0);
    expect(checkRunOutput(mnt).latentSha256).not.toBe(a.latentSha256);
    expect(leftovers(mnt)).toEqual([]);
    // A new --out on the mounted file system is staged there too.
    const inner = join(mnt, 'inner');
    expect((await cli('run', '--model', ckpt, ...tiny, '--out', inner)).status).toBe(0);
    checkRunOutput(inner);
  });

  it('a volume mounted at --out under a read-only parent (a container with a read-only root) takes runs', async (ctx) => {
    const root = join(dir, 'roroot');
    const m = mountTmpfs(root, 'size=1m');
    if (!m.ok) return ctx.skip(m.why);
    mounts.push(root);
    const vol = join(root, 'vol');
    mkdirSync(vol);
    const ro = spawnSync('mount', ['-o', 'remount,ro', root]);
    if (ro.status !== 0) return ctx.skip('remounting a tmpfs read-only failed');
    const v = mountTmpfs(vol, 'size=4m');
    if (!v.ok) return ctx.skip(v.why);
    mounts.unshift(vol);
    for (const [seed, extra] of [['1', []], ['2', ['--force']]] as const) {
      const r = await cli('run', '--model', ckpt, ...tiny, '--seed', seed, '--out', vol, ...extra);
      expect(r.stderr).not.toContain('error');
      expect(r.status).toBe(0);
      checkRunOutput(vol);
    }
    expect(leftovers(vol)).toEqual([]);
  });

  it('an immutable report.json: the rerun fails coded and the previous output is intact', async (ctx) => {
    const out = join(dir, 'immutable');
    const first = await cli('run', '--model', ckpt, ...tiny, '--seed', '1', '--out', out);
    expect(first.status).toBe(0);
    if (!canChattr(join(out, 'preview.png'))) return ctx.skip('chattr +i needs root on a file system that supports it');
    const before = dirDigest(out);
    spawnSync('chattr', ['+i', join(out, 'report.json')]);
    try {
      const r = await cli('run', '--model', ckpt, ...tiny, '--seed', '2', '--out', out, '--force');
      expectCoded(r, 'PERMISSION_DENIED');
      expect(dirDigest(out)).toBe(before);
      checkRunOutput(out);
      expect(leftovers(out)).toEqual([]);
      expect(leftovers(dir)).toEqual([]);
    } finally {
      spawnSync('chattr', ['-i', join(out, 'report.json')]);
    }
  });
});
