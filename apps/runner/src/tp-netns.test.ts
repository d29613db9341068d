// Two "hosts" for real: a TP2 run whose ranks sit in two network namespaces joined only by a veth
// pair, meeting through a redis-server in the first namespace, as users start ranks on two machines
// (NINODES_TP_* by hand). Its latent must equal, byte for byte, the loopback `--tp 2` run's and (int8
// convrot) the single-rank run's. The /30 between the namespaces exists only inside them: nothing
// this test sends leaves the two namespaces it created. Needs root (or CAP_NET_ADMIN
// and CAP_SYS_ADMIN: `ip netns add`, `ip netns exec`); skipped, saying why, where that is not permitted.
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { openSafetensors } from '@ninodes/memory';
import { H3_DEFAULTS, writeSyntheticH3Checkpoint } from '@ninodes/models';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runReportSchema } from './run-report.js';

const HANG_MS = Number(process.env.NINODES_TEST_HANG_MS ?? 900_000); // the shared hang guard (vitest.shared.ts)

const cli = fileURLToPath(new URL('../dist/cli.js', import.meta.url));
// Names unique to this process: other test runs on the machine may hold namespaces of their own.
const tag = `${process.pid}`;
const ns = [`ninodes-tp-${tag}-a`, `ninodes-tp-${tag}-b`] as const;
// The veth ends are created inside the namespaces, so their names never meet the host's interfaces.
const veth = ['nntp0', 'nntp1'] as const;
const addr = [`10.231.${process.pid % 250}.1`, `10.231.${process.pid % 250}.2`] as const;
const REDIS_PORT = 6379; // free: the namespace is new
// 16 heads of 64 and an MLP of 1024, as in tp-run.test.ts: row-parallel inputs split into whole
// 256-column convrot groups over 2 ranks.
const config = { ...H3_DEFAULTS, layers: 2, hidden: 256, heads: 16, headDim: 64, ffn: 1024, tDim: 256, timeHidden: 256, ropeLen: 8 };
const LATENT = ['--steps', '2', '--frames', '1', '--height', '8', '--width', '8', '--quant', 'int8_convrot'];

const dir = mkdtempSync(join(tmpdir(), 'ninodes-tp-netns-'));
const ckpt = join(dir, 'h3-tp.safetensors');
const tmp = join(dir, 'tmp');
const started: ChildProcess[] = [];
const createdNs: string[] = [];

function ip(args: string[]): { ok: boolean; why: string } {
  const r = spawnSync('ip', args, { encoding: 'utf8', timeout: 10_000 });
  if (r.error !== undefined) return { ok: false, why: `ip ${args.join(' ')}: ${r.error.message}` };
  return r.status === 0 ? { ok: true, why: '' } : { ok: false, why: `ip ${args.join(' ')}: ${r.stderr.trim() || `exit ${r.status}`}` };
}

function must(args: string[]): void {
  const r = ip(args);
  if (!r.ok) throw new Error(r.why);
}

/** Creates the two namespaces and the veth pair; the reason it could not where that is not permitted. */
function createHosts(): string | undefined {
  if (spawnSync('ip', ['-V']).error !== undefined) return 'iproute2 (`ip`) is not installed: apt-get install iproute2 (scripts/setup.sh test installs it)';
  for (const n of ns) {
    const r = ip(['netns', 'add', n]);
    if (!r.ok) return `creating a network namespace needs root or CAP_NET_ADMIN + CAP_SYS_ADMIN (${r.why})`;
    createdNs.push(n);
  }
  // Entering one also remounts /sys in a new mount namespace, which some containers refuse.
  const enter = ip(['netns', 'exec', ns[0], 'true']);
  if (!enter.ok) return `entering a network namespace is not permitted here (${enter.why})`;
  must(['-n', ns[0], 'link', 'add', veth[0], 'type', 'veth', 'peer', 'name', veth[1], 'netns', ns[1]]);
  for (const i of [0, 1] as const) {
    must(['-n', ns[i], 'addr', 'add', `${addr[i]}/30`, 'dev', veth[i]]);
    must(['-n', ns[i], 'link', 'set', veth[i], 'up']);
    must(['-n', ns[i], 'link', 'set', 'lo', 'up']);
  }
  return undefined;
}

interface Run {
  status: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** Runs a command (in namespace `inNs` when given), killed by the hang guard at the latest. */
function start(cmd: string, argv: string[], extraEnv: NodeJS.ProcessEnv, inNs?: string, onStdout?: (text: string) => void): { child: ChildProcess; done: Promise<Run> } {
  const [file, args] = inNs === undefined ? [cmd, argv] : ['ip', ['netns', 'exec', inNs, cmd, ...argv]];
  // `ip netns exec` execs the command itself, so this pid is the command's: killing it leaves nothing.
  const child = spawn(file, args, { env: { ...process.env, NINODES_CACHE: join(dir, 'cache'), TMPDIR: tmp, ...extraEnv }, stdio: ['ignore', 'pipe', 'pipe'] });
  started.push(child);
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (d: Buffer) => {
    stdout += d.toString();
    onStdout?.(stdout);
  });
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  const killer = setTimeout(() => {
    stderr += `\n[killed by the test's hang guard after ${HANG_MS} ms]`;
    child.kill('SIGKILL');
  }, HANG_MS);
  const done = new Promise<Run>((resolve) => {
    child.on('close', (status, signal) => {
      clearTimeout(killer);
      resolve({ status, signal, stdout, stderr });
    });
  });
  return { child, done };
}

const runCli = (argv: string[], env: NodeJS.ProcessEnv = {}, inNs?: string): Promise<Run> => start(process.execPath, [cli, ...argv], env, inNs).done;

function latentBytes(out: string): Buffer {
  const f = openSafetensors(join(out, 'latent.safetensors'));
  try {
    const t = f.tensor('latent').copy().data as Float32Array;
    return Buffer.from(t.buffer, t.byteOffset, t.byteLength);
  } finally {
    f.close();
  }
}

function vethRxBytes(inNs: string, dev: string): number {
  const r = spawnSync('ip', ['-n', inNs, '-s', '-j', 'link', 'show', dev], { encoding: 'utf8', timeout: 10_000 });
  if (r.status !== 0) throw new Error(`ip -n ${inNs} -s link show ${dev}: ${r.stderr}`);
  return (JSON.parse(r.stdout) as { stats64: { rx: { bytes: number } } }[])[0]!.stats64.rx.bytes;
}

let skipReason: string | undefined;

beforeAll(async () => {
  mkdirSync(tmp);
  skipReason = createHosts();
  if (skipReason !== undefined) return;
  if (spawnSync('redis-server', ['--version']).error !== undefined) throw new Error('redis-server is not installed: apt-get install redis-server (scripts/setup.sh test installs it)');
  await writeSyntheticH3Checkpoint(ckpt, { config, seed: 11 });
});

afterAll(async () => {
  // Whatever happened: every process started here, then the namespaces (deleting one deletes its
  // veth end, and with it the pair), then the files.
  const live = started.filter((c) => c.exitCode === null && c.signalCode === null);
  for (const c of live) c.kill('SIGKILL');
  await Promise.all(live.map((c) => new Promise<void>((resolve) => (c.exitCode !== null || c.signalCode !== null ? resolve() : c.once('close', () => resolve())))));
  for (const n of createdNs) ip(['netns', 'delete', n]);
  rmSync(dir, { recursive: true, force: true });
});

describe('ninodes run: TP2 across two network namespaces', () => {
  it('ranks on two "hosts" (veth + redis rendezvous) write the loopback TP2 latent and the single-rank latent', async (ctx) => {
    if (skipReason !== undefined) return ctx.skip(skipReason);
    // The loopback references, on the host.
    const one = await runCli(['run', '--model', ckpt, ...LATENT, '--out', join(dir, 'one'), '--json']);
    expect(one.status, one.stderr).toBe(0);
    const loop = await runCli(['run', '--model', ckpt, ...LATENT, '--tp', '2', '--out', join(dir, 'loop'), '--json']);
    expect(loop.status, loop.stderr).toBe(0);
    const singleSha = runReportSchema.parse(JSON.parse(one.stdout)).output.latentSha256;
    const loopSha = runReportSchema.parse(JSON.parse(loop.stdout)).output.latentSha256;

    // The store: a redis-server on the first namespace's veth address only. Redis refuses clients
    // from other hosts unless protected mode is off (or a password is set, which the store does not
    // speak): as on two real machines, the second namespace is another host to it.
    let ready: () => void = () => {};
    const up = new Promise<void>((resolve) => (ready = resolve));
    const redis = start('redis-server', ['--port', String(REDIS_PORT), '--bind', addr[0], '--protected-mode', 'no', '--save', '', '--appendonly', 'no'], {}, ns[0], (text) => {
      if (text.includes('Ready to accept connections')) ready();
    });
    const exited = redis.done.then((r) => {
      throw new Error(`redis-server in ${ns[0]} exited before it was ready: ${r.stdout}${r.stderr}`);
    });
    await Promise.race([up, exited]);
    exited.catch(() => {}); // it exits (killed) in afterAll, after the test no longer waits on it

    // Rank 0 names its interface, rank 1 its address: the two ways a user picks the network.
    const env = (rank: 0 | 1): NodeJS.ProcessEnv => ({
      NINODES_TP_RANK: String(rank),
      NINODES_TP_SIZE: '2',
      NINODES_TP_STORE: `redis://${addr[0]}:${REDIS_PORT}`,
      NINODES_TP_PREFIX: `netns-${tag}`,
      ...(rank === 0 ? { NINODES_TP_IFACE: veth[0] } : { NINODES_TP_ADDRESS: addr[1] }),
      NINODES_TP_TIMEOUT_MS: '60000',
    });
    const out = join(dir, 'netns');
    const [r0, r1] = await Promise.all(([0, 1] as const).map((rank) => runCli(['run', '--model', ckpt, ...LATENT, '--out', out, '--json'], env(rank), ns[rank])));
    expect(r0!.status, r0!.stderr).toBe(0);
    expect(r1!.status, r1!.stderr).toBe(0);
    const report = runReportSchema.parse(JSON.parse(r0!.stdout));
    expect(report.tp?.size).toBe(2);
    expect(report.tp!.ranks.map((r) => r.latentSha256)).toEqual([loopSha, loopSha]);
    expect(r1!.stderr).toContain(`rank 1 of 2: latent sha256 ${loopSha}`);
    expect(latentBytes(out).equals(latentBytes(join(dir, 'loop')))).toBe(true);
    // int8 convrot: the split is exact, so all three are the single rank's bytes.
    expect(loopSha).toBe(singleSha);
    expect(latentBytes(out).equals(latentBytes(join(dir, 'one')))).toBe(true);
    // The collectives crossed the veth: rank 1's end received at least the int8 accumulators of one
    // row-parallel reduce (tokens × hidden int32, 16 video tokens of a 1×8×8 latent in 1×2×2
    // patches), far more than the store's replies; 8 such reduces run in this run.
    expect(vethRxBytes(ns[1], veth[1])).toBeGreaterThan(16 * config.hidden * 4);
    expect(readdirSync(tmp)).toEqual([]);
  });
});
