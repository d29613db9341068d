// `ninodes run --tp N` end to end, as a user runs it (the built CLI in child processes): TP2 and TP4
// ranks write identical latents; with int8 convrot weights those equal the single-rank run's bytes,
// with fp32 weights they are within 1e-6 relative; a killed rank or a SIGTERM stops every process
// and leaves no files behind.
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { createConnection, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { openSafetensors, writeSafetensors } from '@ninodes/memory';
import { H3_DEFAULTS, gaussianNoise, writeSyntheticH3Checkpoint } from '@ninodes/models';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runReportSchema } from './run-report.js';

const HANG_MS = Number(process.env.NINODES_TEST_HANG_MS ?? 900_000); // the shared hang guard (vitest.shared.ts)

const cli = fileURLToPath(new URL('../dist/cli.js', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'ninodes-tp-run-'));
const ckpt = join(dir, 'h3-tp.safetensors');
// The launcher's rendezvous directories go here (TMPDIR), so the tests can see they are removed.
const tmp = join(dir, 'tmp');
// 16 heads of 64 and an MLP of 1024: row-parallel inputs of 1024 split into 256-column convrot
// groups over 2 and 4 ranks.
const config = { ...H3_DEFAULTS, layers: 2, hidden: 256, heads: 16, headDim: 64, ffn: 1024, tDim: 256, timeHidden: 256, ropeLen: 8 };
const LATENT = ['--steps', '2', '--frames', '1', '--height', '8', '--width', '8'];
const started: ChildProcess[] = [];

interface CliRun {
  status: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  pid: number;
}

/** Runs the CLI; once it ends, nothing of it is left in TMPDIR (unless `leaves`: a SIGKILLed launcher). */
function startCli(argv: string[], onStderr?: (text: string, child: ChildProcess) => void, extraEnv: NodeJS.ProcessEnv = {}, leaves = false): Promise<CliRun> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [cli, ...argv], { env: { ...process.env, NINODES_CACHE: join(dir, 'cache'), TMPDIR: tmp, ...extraEnv }, stdio: ['ignore', 'pipe', 'pipe'] });
    started.push(child);
    let stdout = '';
    let stderr = '';
    child.stdout!.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr!.on('data', (d: Buffer) => {
      stderr += d.toString();
      onStderr?.(stderr, child);
    });
    const killer = setTimeout(() => {
      stderr += `\n[killed by the test's hang guard after ${HANG_MS} ms]`;
      child.kill('SIGKILL');
    }, HANG_MS);
    child.on('close', (status, signal) => {
      clearTimeout(killer);
      if (!leaves) expect(readdirSync(tmp)).toEqual([]);
      resolve({ status, signal, stdout, stderr, pid: child.pid ?? -1 });
    });
  });
}

const isAlive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};
const rankPids = (stderr: string): number[] => [...stderr.matchAll(/\[tp\] rank \d+: pid (\d+)/g)].map((m) => Number(m[1]));

/** The tensor `name` of the `name`.safetensors a run wrote into `out` (latent, audio). */
function outputOf(out: string, name: 'latent' | 'audio'): Float32Array {
  const f = openSafetensors(join(out, `${name}.safetensors`));
  try {
    return f.tensor(name).copy().data as Float32Array;
  } finally {
    f.close();
  }
}
const latentOf = (out: string): Float32Array => outputOf(out, 'latent');
const audioOf = (out: string): Float32Array => outputOf(out, 'audio');

/**
 * `ninodes run` with `args` on one rank and on `n`, for int8 convrot and fp32 weights: the ranks
 * agree; int8 convrot latent and audio bytes equal one rank's, fp32 within 1e-6 relative.
 */
async function expectStreamsAsOneRank(args: string[], n: number, tag: string): Promise<void> {
  for (const quant of ['int8_convrot', 'f32'] as const) {
    const one = await startCli([...args, '--quant', quant, '--out', join(dir, `${tag}-${quant}-1`), '--json']);
    expect(one.status, one.stderr).toBe(0);
    const r = await startCli([...args, '--quant', quant, '--tp', String(n), '--out', join(dir, `${tag}-${quant}-${n}`), '--json']);
    expect(r.status, r.stderr).toBe(0);
    const report = runReportSchema.parse(JSON.parse(r.stdout));
    expect(report.tp!.ranks).toHaveLength(n);
    expect(new Set(report.tp!.ranks.map((x) => x.latentSha256)).size).toBe(1);
    const [v1, vn] = [latentOf(join(dir, `${tag}-${quant}-1`)), latentOf(join(dir, `${tag}-${quant}-${n}`))];
    const [a1, an] = [audioOf(join(dir, `${tag}-${quant}-1`)), audioOf(join(dir, `${tag}-${quant}-${n}`))];
    if (quant === 'int8_convrot') {
      expect(report.output.latentSha256).toBe(runReportSchema.parse(JSON.parse(one.stdout)).output.latentSha256);
      expect(Buffer.from(an.buffer).equals(Buffer.from(a1.buffer))).toBe(true);
    } else {
      expect(relFrobenius(vn, v1)).toBeLessThanOrEqual(1e-6);
      expect(relFrobenius(an, a1)).toBeLessThanOrEqual(1e-6);
    }
  }
}

function relFrobenius(a: Float32Array, b: Float32Array): number {
  let d = 0;
  let n = 0;
  for (let i = 0; i < a.length; i++) {
    d += (a[i]! - b[i]!) ** 2;
    n += b[i]! ** 2;
  }
  return Math.sqrt(d / n);
}

beforeAll(async () => {
  mkdirSync(tmp);
  await writeSyntheticH3Checkpoint(ckpt, { config, seed: 11 });
});
afterAll(() => {
  for (const c of started) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
});

describe('ninodes run --tp', () => {
  it('int8 convrot: TP2 and TP4 ranks write the single-rank latent, byte for byte', async () => {
    const one = await startCli(['run', '--model', ckpt, ...LATENT, '--quant', 'int8_convrot', '--out', join(dir, 'i8-1'), '--json']);
    expect(one.status, one.stderr).toBe(0);
    const single = runReportSchema.parse(JSON.parse(one.stdout));
    for (const n of [2, 4]) {
      const r = await startCli(['run', '--model', ckpt, ...LATENT, '--quant', 'int8_convrot', '--tp', String(n), '--out', join(dir, `i8-${n}`), '--json']);
      expect(r.status, r.stderr).toBe(0);
      const report = runReportSchema.parse(JSON.parse(r.stdout));
      expect(report.tp?.size).toBe(n);
      expect(report.tp?.ranks.map((x) => x.rank)).toEqual(Array.from({ length: n }, (_, i) => i));
      // Per step and block (sequence parallel): int8 qkv and fc1 gather the ranks' quantized rows
      // and their scales, out_proj and fc2 reduce a scale (MAX) and reduce-scatter accumulators, the
      // adaLN rows are gathered; then the hidden rows are gathered and the final layer's adaLN rows.
      // One more before step 1: the ranks' fingerprint handshake.
      for (const rank of report.tp!.ranks) expect(rank.collectives).toBe(2 * (config.layers * (4 * 2 + 1) + 2) + 1);
      for (const rank of report.tp!.ranks) expect(rank.latentSha256).toBe(single.output.latentSha256);
      expect(report.output.latentSha256).toBe(single.output.latentSha256);
      expect(Buffer.from(latentOf(join(dir, `i8-${n}`)).buffer).equals(Buffer.from(latentOf(join(dir, 'i8-1')).buffer))).toBe(true);
      // Each rank holds 1/N of the split weights plus the replicated ones.
      expect(report.tp!.weightBytesPerRank).toBeLessThan(report.tp!.singleRankWeightBytes);
      for (const pid of rankPids(r.stderr)) expect(isAlive(pid)).toBe(false);
    }
  });

  it('fp32: TP2 and TP4 ranks agree and are within 1e-6 relative of one rank', async () => {
    const one = await startCli(['run', '--model', ckpt, ...LATENT, '--quant', 'f32', '--out', join(dir, 'f32-1')]);
    expect(one.status, one.stderr).toBe(0);
    for (const n of [2, 4]) {
      const r = await startCli(['run', '--model', ckpt, ...LATENT, '--quant', 'f32', '--tp', String(n), '--out', join(dir, `f32-${n}`), '--json']);
      expect(r.status, r.stderr).toBe(0);
      const report = runReportSchema.parse(JSON.parse(r.stdout));
      expect(report.tp!.ranks).toHaveLength(n);
      expect(new Set(report.tp!.ranks.map((x) => x.latentSha256)).size).toBe(1);
      const diff = relFrobenius(latentOf(join(dir, `f32-${n}`)), latentOf(join(dir, 'f32-1')));
      expect(diff).toBeLessThanOrEqual(1e-6);
    }
  });

  it('with the text and audio streams (--context, --audio-frames): int8 convrot TP2 gives the single-rank latent and audio bytes, fp32 within 1e-6', async () => {
    const av = join(dir, 'h3-tp-av.safetensors');
    // textDim differs from hidden, so the context runs condition_proj and the 2-block token refiner.
    await writeSyntheticH3Checkpoint(av, { config: { ...config, audioChannels: 32, textDim: 512, refinerLayers: 2 }, seed: 12 });
    const ctx = join(dir, 'tp-context.safetensors');
    await writeSafetensors(ctx, [{ name: 'context', dtype: 'f32', shape: [1, 3, 512], data: () => gaussianNoise([1, 3, 512], 4).bytes() }]);
    await expectStreamsAsOneRank(['run', '--model', av, ...LATENT, '--context', ctx, '--audio-frames', '2'], 2, 'av');
  });

  it('three ranks on 256 video tokens with text and audio rows (389 rows, modalities crossing the ranks\' row boundaries): int8 convrot bytes equal one rank, fp32 within 1e-6', async () => {
    // 12 heads and an MLP of 1536 split over 3 ranks; out_proj's and fc2's input slices (768 / 3,
    // 1536 / 3) are whole 256-column convrot groups. 3 text + 130 audio + 256 video rows: sequence
    // parallelism gives the ranks rows [0, 129), [129, 259), [259, 389), so the audio rows cross
    // the first boundary and the video rows the second.
    const av3 = join(dir, 'h3-tp3-av.safetensors');
    await writeSyntheticH3Checkpoint(av3, { config: { ...config, hidden: 768, heads: 12, headDim: 64, ffn: 1536, audioChannels: 32, textDim: 512, refinerLayers: 2 }, seed: 13 });
    const ctx = join(dir, 'tp3-context.safetensors');
    await writeSafetensors(ctx, [{ name: 'context', dtype: 'f32', shape: [1, 3, 512], data: () => gaussianNoise([1, 3, 512], 5).bytes() }]);
    await expectStreamsAsOneRank(['run', '--model', av3, '--steps', '2', '--frames', '1', '--height', '32', '--width', '32', '--context', ctx, '--audio-frames', '65'], 3, 'tp3');
  });

  it('ranks started by hand with NINODES_TP_* meet through a redis-server and write the single-rank latent', async () => {
    const port = await new Promise<number>((resolve, reject) => {
      const server = createServer();
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => {
        const a = server.address();
        server.close(() => resolve(typeof a === 'object' && a !== null ? a.port : 0));
      });
    });
    if (spawnSync('redis-server', ['--version']).error !== undefined) throw new Error('redis-server is not installed: apt-get install redis-server (scripts/setup.sh installs it)');
    const redis = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
    started.push(redis);
    try {
      await new Promise<void>((resolve, reject) => {
        const deadline = Date.now() + 10_000;
        const attempt = (): void => {
          const s = createConnection({ port, host: '127.0.0.1' });
          s.once('connect', () => (s.destroy(), resolve()));
          s.once('error', () => (s.destroy(), Date.now() > deadline ? reject(new Error('redis-server did not start (apt-get install redis-server)')) : setTimeout(attempt, 50)));
        };
        attempt();
      });
      const one = await startCli(['run', '--model', ckpt, ...LATENT, '--quant', 'int8_convrot', '--out', join(dir, 'redis-1'), '--json']);
      expect(one.status, one.stderr).toBe(0);
      const env = (rank: number): NodeJS.ProcessEnv => ({
        NINODES_TP_RANK: String(rank),
        NINODES_TP_SIZE: '2',
        NINODES_TP_STORE: `redis://127.0.0.1:${port}`,
        NINODES_TP_PREFIX: 'by-hand-1',
        NINODES_TP_ADDRESS: '127.0.0.1',
        NINODES_TP_TIMEOUT_MS: '30000',
      });
      const [r0, r1] = await Promise.all([0, 1].map((rank) => startCli(['run', '--model', ckpt, ...LATENT, '--quant', 'int8_convrot', '--out', join(dir, 'redis-2'), '--json'], undefined, env(rank))));
      expect(r0!.status, r0!.stderr).toBe(0);
      expect(r1!.status, r1!.stderr).toBe(0);
      const single = runReportSchema.parse(JSON.parse(one.stdout)).output.latentSha256;
      const report = runReportSchema.parse(JSON.parse(r0!.stdout));
      expect(report.tp!.ranks.map((r) => r.latentSha256)).toEqual([single, single]);
      expect(r1!.stderr).toContain(`rank 1 of 2: latent sha256 ${single}`);
      expect(r1!.stdout).toBe('');
      // The run left no keys in the shared server.
      expect(spawnSync('redis-cli', ['-p', String(port), '--raw', 'KEYS', '*'], { encoding: 'utf8' }).stdout.trim()).toBe('');
    } finally {
      redis.kill('SIGTERM');
      await new Promise<void>((resolve) => (redis.exitCode !== null || redis.signalCode !== null ? resolve() : redis.once('close', () => resolve())));
    }
  });

  it('ranks started by hand on two checkpoints of the same shapes, or with another --seed, refuse before step 1 naming the rank', async () => {
    const other = join(dir, 'h3-tp-other.safetensors');
    await writeSyntheticH3Checkpoint(other, { config, seed: 12 });
    const store = join(dir, 'by-hand-store');
    mkdirSync(store, { recursive: true });
    const env = (rank: number, prefix: string): NodeJS.ProcessEnv => ({
      NINODES_TP_RANK: String(rank),
      NINODES_TP_SIZE: '2',
      NINODES_TP_STORE: store,
      NINODES_TP_PREFIX: prefix,
      NINODES_TP_TIMEOUT_MS: '30000',
    });
    for (const [prefix, argsOf, what] of [
      ['two-models', (rank: number) => ['--model', rank === 0 ? ckpt : other], /rank 1 opened another checkpoint/],
      ['two-seeds', (rank: number) => ['--model', ckpt, '--seed', String(rank === 0 ? 1 : 2)], /rank 1 runs with other settings or inputs/],
    ] as const) {
      const ranks = await Promise.all([0, 1].map((rank) => startCli(['run', ...argsOf(rank), ...LATENT, '--quant', 'int8_convrot', '--out', join(dir, `disagree-${prefix}`)], undefined, env(rank, prefix))));
      for (const r of ranks) {
        expect(r.stderr).toContain('error TP_RANKS_DISAGREE:');
        expect(r.stderr).toMatch(what);
        expect(r.stderr).not.toMatch(/steps: 1\//);
        expect(r.status).toBe(1);
      }
      expect(existsSync(join(dir, `disagree-${prefix}`))).toBe(false);
    }
  });

  it('text and audio streams (fixtures/h3av/full, text refiner gathered): TP2 ranks agree and stay within 1e-5 of the float64 reference step', async () => {
    const v = join(process.env.NINODES_FIXTURES ?? '', 'h3av', 'full');
    const inputs = join(v, 'inputs.safetensors');
    const out = join(dir, 'av-tp2');
    const r = await startCli(['run', '--model', join(v, 'model.safetensors'), '--latent', inputs, '--audio', inputs, '--context', inputs, '--steps', '8', '--shift', '12', '--start-step', '1', '--end-step', '2', '--tp', '2', '--out', out, '--json']);
    expect(r.status, r.stderr).toBe(0);
    const report = runReportSchema.parse(JSON.parse(r.stdout));
    expect(new Set(report.tp!.ranks.map((x) => x.latentSha256)).size).toBe(1);
    const expected = openSafetensors(join(v, 'expect.safetensors'));
    try {
      const want = expected.tensor('latent_step1').copy().data as Float32Array;
      const got = latentOf(out);
      let num = 0;
      let den = 0;
      for (let i = 0; i < want.length; i++) {
        num = Math.max(num, Math.abs(got[i]! - want[i]!));
        den = Math.max(den, Math.abs(want[i]!));
      }
      expect(num / den).toBeLessThan(1e-5);
    } finally {
      expected.close();
    }
  });

  it('--tp-pin pins each rank to its own core (taskset); too few cores is a coded error', async () => {
    // This process's allowed CPUs, expanded from Linux's list form ("0-3,8").
    const list = /^Cpus_allowed_list:\s*(\S+)/m.exec(readFileSync('/proc/self/status', 'utf8'))![1]!;
    const allowed = list.split(',').flatMap((p) => {
      const [a, b] = p.split('-').map(Number);
      return Array.from({ length: (b ?? a!) - a! + 1 }, (_, i) => a! + i);
    });
    const seen: string[] = [];
    const r = await startCli(['run', '--model', ckpt, ...LATENT, '--tp', '2', '--threads', '2', '--tp-pin', '--out', join(dir, 'pinned')], (text) => {
      if (seen.length === 0 && /\[rank 1\] steps: 1\//.test(text)) {
        for (const pid of rankPids(text)) seen.push(/^Cpus_allowed_list:\s*(\S+)/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]!);
      }
    });
    expect(r.status, r.stderr).toBe(0);
    expect(seen).toEqual([String(allowed[0]), String(allowed[1])]);
    expect(r.stderr).toMatch(new RegExp(`\\[tp\\] rank 1: pid \\d+, cores ${allowed[1]}`));
    const tooMany = await startCli(['run', '--model', ckpt, ...LATENT, '--tp', '2', '--threads', '1024', '--tp-pin', '--out', join(dir, 'pinned-2')]);
    expect(tooMany.status).toBe(2); // a command-line error
    expect(tooMany.stderr).toMatch(/CLI_TP_PIN: --tp-pin: 2 ranks of 512 threads need 1024 cores/);
  });

  it('refuses up front a split that cuts the convrot groups, naming the layer, before starting ranks', async () => {
    const r = await startCli(['run', '--model', ckpt, ...LATENT, '--quant', 'int8_convrot', '--tp', '8', '--out', join(dir, 'i8-8')]);
    expect(r.status).toBe(1);
    expect(r.stderr).toMatch(/SHARD_NOT_GROUP_ALIGNED: layer 'blocks\.0\.attn\.out_proj'/);
    expect(rankPids(r.stderr)).toEqual([]);
    expect(existsSync(join(dir, 'i8-8'))).toBe(false);
  });

  it('a rank killed mid-run: the launcher exits non-zero naming it, the survivors name it too, nothing is left', async () => {
    const out = join(dir, 'killed');
    let killed = false;
    const r = await startCli(['run', '--model', ckpt, '--steps', '40', '--frames', '1', '--height', '8', '--width', '8', '--tp', '2', '--tp-timeout', '20000', '--out', out], (text) => {
      // Kill rank 1 once both ranks are stepping.
      if (!killed && /\[rank 1\] steps: 2\//.test(text)) {
        killed = true;
        process.kill(rankPids(text)[1]!, 'SIGKILL');
      }
    });
    expect(killed).toBe(true);
    expect(r.status).toBe(1);
    expect(r.stderr).toMatch(/TP_RANK_FAILED: rank 1 of 2 was killed by SIGKILL/);
    // Rank 0's own error names rank 1 (its collective failed when rank 1's sockets closed).
    expect(r.stderr).toMatch(/\[rank 0\] error COMM_PEER_LOST: rank 0 of 2: (allreduce|allgather|allgatherInto|reduceScatter) failed: rank 1 was lost/);
    for (const pid of rankPids(r.stderr)) expect(isAlive(pid)).toBe(false);
    expect(existsSync(out)).toBe(false);
    expect(readdirSync(dir).filter((n) => n.includes('staging'))).toEqual([]);
  });

  it('a launcher killed outright (SIGKILL) leaves its rendezvous directory to the next launch, which sweeps it', async () => {
    let sent = false;
    const r = await startCli(['run', '--model', ckpt, '--steps', '40', '--frames', '1', '--height', '8', '--width', '8', '--tp', '2', '--out', join(dir, 'sigkilled')], (text, child) => {
      if (!sent && /\[rank 0\] steps: 2\//.test(text)) {
        sent = true;
        child.kill('SIGKILL');
      }
    }, {}, true);
    expect(sent).toBe(true);
    expect(r.signal).toBe('SIGKILL');
    // Its ranks may still be running (nothing killed them); stop them so the next launch's sweep is the only remover.
    for (const pid of rankPids(r.stderr)) if (isAlive(pid)) process.kill(pid, 'SIGKILL');
    expect(readdirSync(tmp)).toHaveLength(1);
    const next = await startCli(['run', '--model', ckpt, ...LATENT, '--tp', '2', '--out', join(dir, 'after-sigkill')]);
    expect(next.status, next.stderr).toBe(0);
  });

  it('a rank that stops answering (SIGSTOP) is the one named, not the rank that timed out waiting for it', async () => {
    let stopped = 0;
    const r = await startCli(['run', '--model', ckpt, '--steps', '40', '--frames', '1', '--height', '8', '--width', '8', '--tp', '2', '--tp-timeout', '3000', '--out', join(dir, 'stopped')], (text) => {
      if (stopped === 0 && /\[rank 1\] steps: 2\//.test(text)) {
        stopped = rankPids(text)[1]!;
        process.kill(stopped, 'SIGSTOP');
      }
    });
    expect(stopped).toBeGreaterThan(0);
    expect(r.status).toBe(1);
    expect(r.stderr).toMatch(/error TP_RANK_FAILED: rank 1 of 2 stopped answering: rank 0, waiting on it in a collective, exited with status 1 \(at rank 1\)/);
    // The launcher's SIGKILL ends the stopped rank too.
    expect(isAlive(stopped)).toBe(false);
  });

  it('SIGTERM to the launcher stops every rank and leaves no staging directory', async () => {
    const out = join(dir, 'terminated');
    let sent = false;
    const r = await startCli(['run', '--model', ckpt, '--steps', '40', '--frames', '1', '--height', '8', '--width', '8', '--tp', '2', '--out', out], (text, child) => {
      if (!sent && /\[rank 0\] steps: 2\//.test(text)) {
        sent = true;
        child.kill('SIGTERM');
      }
    });
    expect(sent).toBe(true);
    expect(r.status).toBe(143);
    expect(r.stderr).toMatch(/\[tp\] stopped by SIGTERM/);
    for (const pid of rankPids(r.stderr)) expect(isAlive(pid)).toBe(false);
    expect(existsSync(out)).toBe(false);
    expect(readdirSync(dir).filter((n) => n.includes('staging'))).toEqual([]);
    expect(readFileSync(ckpt).length).toBeGreaterThan(0);
  });
});
