// The Gloo communicator with real processes: N node children meet through a FileStore in a temp dir
// or a redis-server this test starts, run every collective, and print what they got; the values
// are checked here against float64 / exact integer computations of the same inputs. Failure cases
// kill or silence one rank and check that the others fail with a coded error naming it.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, readdirSync } from 'node:fs';
import { createServer, createConnection } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { createCommunicator } from './comm.js';

const HANG_MS = Number(process.env.NINODES_TEST_HANG_MS ?? 900_000); // the shared hang guard (vitest.shared.ts)

const dist = fileURLToPath(new URL('../dist/index.js', import.meta.url));
const worker = fileURLToPath(new URL('./test-support/comm-rank.mjs', import.meta.url));

const f32Input = (rank: number, n: number): Float32Array =>
  Float32Array.from({ length: n }, (_, i) => (((i * 7919 + rank * 104729) % 2001) - 1000) / 37);
const i32Input = (rank: number, n: number): Int32Array =>
  Int32Array.from({ length: n }, (_, i) => ((i * 31 + rank * 1_000_003) % 200_003) - 100_000);
const i8Input = (rank: number, n: number): Int8Array => Int8Array.from({ length: n }, (_, i) => ((i * 13 + rank * 71) % 255) - 127);

interface RankResult {
  rank: number;
  pid: number;
  ok: boolean;
  connected?: boolean;
  error?: { code: string; message: string; ranks: number[] };
  [key: string]: unknown;
}

interface Exit {
  result: RankResult | undefined;
  code: number | null;
  signal: NodeJS.Signals | null;
  pid: number;
  stderr: string;
}

const spawned: ChildProcess[] = [];
const tempDirs: string[] = [];

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'ninodes-comm-'));
  tempDirs.push(dir);
  return dir;
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Starts one child per rank in `ranks` and resolves when all have exited (killed by the hang guard at the latest). */
function runRanks(job: Record<string, unknown>, ranks: number[]): Promise<Exit[]> {
  return Promise.all(
    ranks.map(
      (rank) =>
        new Promise<Exit>((resolve) => {
          const child = spawn(process.execPath, [worker], {
            env: { ...process.env, NINODES_COMM_JOB: JSON.stringify({ ...job, rank, dist }) },
            stdio: ['ignore', 'pipe', 'pipe'],
          });
          spawned.push(child);
          let stdout = '';
          let stderr = '';
          child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
          child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
          const killer = setTimeout(() => {
            stderr += `\n[killed by the test's hang guard after ${HANG_MS} ms]`;
            child.kill('SIGKILL');
          }, HANG_MS);
          child.on('exit', (code, signal) => {
            clearTimeout(killer);
            const line = stdout.trim().split('\n').pop() ?? '';
            let result: RankResult | undefined;
            try {
              result = JSON.parse(line) as RankResult;
            } catch {
              result = undefined;
            }
            resolve({ result, code, signal, pid: child.pid ?? -1, stderr });
          });
        }),
    ),
  );
}

const decode = {
  f32: (b64: unknown) => {
    const b = Buffer.from(b64 as string, 'base64');
    return new Float32Array(b.buffer, b.byteOffset, b.byteLength / 4);
  },
  i32: (b64: unknown) => {
    const b = Buffer.from(b64 as string, 'base64');
    return new Int32Array(b.buffer, b.byteOffset, b.byteLength / 4);
  },
  i8: (b64: unknown) => {
    const b = Buffer.from(b64 as string, 'base64');
    return new Int8Array(b.buffer, b.byteOffset, b.byteLength);
  },
};

/** The first few indices where `got` and `want` differ, a length difference included (cheap on millions of elements). */
function firstDifferences(got: ArrayLike<number>, want: ArrayLike<number>): number[] {
  const wrong: number[] = [];
  for (let i = 0; i < Math.max(got.length, want.length) && wrong.length < 5; i++) if (got[i] !== want[i]) wrong.push(i);
  return wrong;
}

/**
 * Checks reduceScatter, allgatherInto and allToAll (comm-rank's 'segmented' mode): each rank's reduced
 * segment has the bytes of its segment of an allreduce of the same inputs in the same run, and equals
 * the sum computed here in rank order (fp32 rounding after each addition, exact for i32); every
 * rank's gathered buffer is the concatenation of the segments the ranks put in; every rank's
 * all-to-all buffer is, rank by rank, the segment each rank addressed to it.
 */
function checkSegmented(exits: Exit[], size: number, countSets: number[][], i8Counts: number[]): void {
  for (const exit of exits) expect(exit.result, exit.stderr).toMatchObject({ ok: true });
  const results = exits.map((e) => e.result as RankResult);
  for (const [k, counts] of countSets.entries()) {
    const total = counts.reduce((a, b) => a + b, 0);
    const inputs = { f32: Array.from({ length: size }, (_, r) => f32Input(r, total)), i32: Array.from({ length: size }, (_, r) => i32Input(r, total)) };
    for (const [rank, result] of results.entries()) {
      const set = (result.sets as Record<string, string>[])[k]!;
      const start = counts.slice(0, rank).reduce((a, b) => a + b, 0);
      for (const dtype of ['f32', 'i32'] as const) {
        expect(set[`rs_${dtype}`], `${dtype} reduceScatter vs allreduce, counts ${counts}, rank ${rank}`).toBe(set[`ar_${dtype}`]);
        const got = decode[dtype](set[`rs_${dtype}`]);
        expect(got.length).toBe(counts[rank]);
        const want = Array.from({ length: counts[rank]! }, (_, i) => {
          let acc = inputs[dtype][0]![start + i]!;
          for (let r = 1; r < size; r++) acc = dtype === 'f32' ? Math.fround(acc + inputs[dtype][r]![start + i]!) : acc + inputs[dtype][r]![start + i]!;
          return acc;
        });
        // Counted, not asserted per element (600k elements).
        const wrong = want.flatMap((w, i) => (got[i] === w ? [] : [i]));
        expect(wrong.slice(0, 5), `${dtype} reduceScatter, counts ${counts}, rank ${rank}`).toEqual([]);
      }
      const concat = <T extends number>(input: (r: number, n: number) => ArrayLike<T>): T[] => counts.flatMap((n, r) => Array.from(input(r + 10, n)));
      expect(firstDifferences(decode.f32(set.ag_f32), concat(f32Input)), `f32 allgatherInto, counts ${counts}`).toEqual([]);
      expect(firstDifferences(decode.i32(set.ag_i32), concat(i32Input)), `i32 allgatherInto, counts ${counts}`).toEqual([]);
      const addressed = <T extends number>(input: (r: number, n: number) => ArrayLike<T>): T[] =>
        Array.from({ length: size }, (_, q) => Array.from(input(q + 20, total)).slice(start, start + counts[rank]!)).flat();
      expect(firstDifferences(decode.f32(set.a2a_f32), addressed(f32Input)), `f32 allToAll, counts ${counts}, rank ${rank}`).toEqual([]);
      expect(firstDifferences(decode.i32(set.a2a_i32), addressed(i32Input)), `i32 allToAll, counts ${counts}, rank ${rank}`).toEqual([]);
    }
  }
  const i8Want = i8Counts.flatMap((n, r) => Array.from(i8Input(r, n)));
  const i8Total = i8Counts.reduce((a, b) => a + b, 0);
  for (const result of results) {
    expect(firstDifferences(decode.i8(result.ag_i8), i8Want), 'i8 allgatherInto').toEqual([]);
    const start = i8Counts.slice(0, result.rank).reduce((a, b) => a + b, 0);
    const i8Addressed = Array.from({ length: size }, (_, q) => Array.from(i8Input(q + 30, i8Total)).slice(start, start + i8Counts[result.rank]!)).flat();
    expect(firstDifferences(decode.i8(result.a2a_i8), i8Addressed), `i8 allToAll, rank ${result.rank}`).toEqual([]);
    // Per count set: 2 reduceScatters and 2 allreduces (input buffers), 2 allgatherIntos (own
    // segment), 2 allToAlls (what went to peers); then the i8 allgatherInto (own segment, one byte
    // an element) and the i8 allToAll.
    const own = (counts: number[]): number => counts[result.rank]!;
    const sum = (counts: number[]): number => counts.reduce((a, b) => a + b, 0);
    const bytes = countSets.reduce((acc, c) => acc + 4 * (4 * sum(c) + 2 * own(c) + 2 * (sum(c) - own(c))), 0) + own(i8Counts) + (i8Total - own(i8Counts));
    expect(result.stats).toMatchObject({ collectives: 8 * countSets.length + 2, bytes });
  }
}

/** Checks every collective's output against an independent computation of the same inputs. */
function checkCollectives(exits: Exit[], size: number, n: number, gather = 5): void {
  for (const exit of exits) expect(exit.result, exit.stderr).toMatchObject({ ok: true });
  const results = exits.map((e) => e.result as RankResult);
  // Every rank holds the same bytes after each collective.
  for (const key of ['sum', 'max', 'isum', 'imax', 'bcast', 'gathered']) {
    for (const r of results) expect(r[key], key).toBe(results[0]![key]);
  }
  const r0 = results[0]!;
  const sum = decode.f32(r0.sum);
  const max = decode.f32(r0.max);
  const isum = decode.i32(r0.isum);
  const imax = decode.i32(r0.imax);
  const inputs = Array.from({ length: size }, (_, r) => f32Input(r, n));
  const iinputs = Array.from({ length: size }, (_, r) => i32Input(r, n));
  let worst = 0;
  const wrong: number[] = [];
  for (let i = 0; i < n; i++) {
    let s = 0;
    let m = -Infinity;
    let is = 0;
    let im = -Infinity;
    let absSum = 0;
    for (let r = 0; r < size; r++) {
      s += inputs[r]![i]!;
      absSum += Math.abs(inputs[r]![i]!);
      m = Math.max(m, inputs[r]![i]!);
      is += iinputs[r]![i]!;
      im = Math.max(im, iinputs[r]![i]!);
    }
    // fp32 sums of `size` terms: a few ulps of the absolute sum.
    worst = Math.max(worst, Math.abs(sum[i]! - s) / Math.max(absSum, 1e-30));
    // ...summed in rank order on every rank, whatever the world size (the same bytes everywhere).
    let ordered = inputs[0]![i]!;
    for (let r = 1; r < size; r++) ordered = Math.fround(ordered + inputs[r]![i]!);
    // Counted, not asserted per element (600k elements).
    if (sum[i] !== ordered || max[i] !== m || isum[i] !== is || imax[i] !== im) wrong.push(i);
  }
  expect(wrong.slice(0, 5)).toEqual([]);
  expect(worst).toBeLessThan(size * 2 ** -23);
  expect(Array.from(decode.f32(r0.bcast))).toEqual(Array.from(f32Input(size - 1, n)));
  const expectedGather = Array.from({ length: size }, (_, r) => Array.from(i32Input(r, gather))).flat();
  expect(Array.from(decode.i32(r0.gathered))).toEqual(expectedGather);
  // 4 allreduces and a broadcast of n elements, an allgather of `gather`, a barrier (4 bytes each).
  for (const r of results) {
    expect(r.stats).toMatchObject({ collectives: 7, bytes: 4 * (5 * n + gather) });
    expect((r.stats as { seconds: number }).seconds).toBeGreaterThan(0);
  }
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

function waitForPort(port: number, limitMs: number): Promise<void> {
  const deadline = Date.now() + limitMs;
  return new Promise((resolve, reject) => {
    const attempt = (): void => {
      const socket = createConnection({ port, host: '127.0.0.1' });
      socket.once('connect', () => {
        socket.destroy();
        resolve();
      });
      socket.once('error', () => {
        socket.destroy();
        if (Date.now() > deadline) reject(new Error(`redis-server did not listen on ${port}`));
        else setTimeout(attempt, 50);
      });
    };
    attempt();
  });
}

afterAll(() => {
  for (const child of spawned) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  for (const dir of tempDirs) rmSync(dir, { recursive: true, force: true });
});

describe('createCommunicator (Gloo over TCP, real processes)', () => {
  it('3 ranks meet through a FileStore: allreduce sum/max f32/i32, broadcast, allgather, barrier', async () => {
    const dir = tempDir();
    // Over two 256 Ki-element chunks and a tail: the native side moves collectives in 1 MiB
    // messages, exchanged pair by pair past 128 KiB (the gather's 160 KB too), all at once below.
    const n = 600_001;
    const exits = await runRanks({ mode: 'collectives', size: 3, n, gather: 40_000, store: { kind: 'file', path: dir }, prefix: 'run1', timeoutMs: 30_000 }, [0, 1, 2]);
    checkCollectives(exits, 3, n, 40_000);
    for (const e of exits) expect(e.code).toBe(0);
  });

  it('3 ranks: reduceScatter, allgatherInto and allToAll with unequal, empty and multi-chunk segments', async () => {
    const dir = tempDir();
    // An empty segment, a 5-element one and one over two 256 Ki-element chunks (1 MiB messages);
    // then three non-empty segments of different lengths, one of them just past the 128 KiB that a
    // message may have to be sent all at once (32762 elements after the header), so in one round
    // some ranks' messages are small and others' large, and every rank must pick the pairwise order.
    // i8 chunks are 1 Mi elements: 1100001 spans two.
    const counts = [
      [5, 0, 600_001],
      [33_000, 70_001, 2],
    ];
    const i8Counts = [1_100_001, 0, 384 * 1536 + 7];
    const exits = await runRanks({ mode: 'segmented', size: 3, counts, i8Counts, store: { kind: 'file', path: dir }, prefix: 'seg3', timeoutMs: 30_000 }, [0, 1, 2]);
    checkSegmented(exits, 3, counts, i8Counts);
  });

  it('2 ranks: reduceScatter, allgatherInto and allToAll with unequal segments', async () => {
    const dir = tempDir();
    const counts = [
      [70_001, 3],
      [0, 40_000],
    ];
    const i8Counts = [17, 200_000];
    const exits = await runRanks({ mode: 'segmented', size: 2, counts, i8Counts, store: { kind: 'file', path: dir }, prefix: 'seg2', timeoutMs: 30_000 }, [0, 1]);
    checkSegmented(exits, 2, counts, i8Counts);
  });

  it('ranks that pass different segment counts fail with COMM_MISMATCH naming each other', async () => {
    const dir = tempDir();
    const exits = await runRanks({ mode: 'segmentMismatch', size: 2, store: { kind: 'file', path: dir }, prefix: 'segmismatch', timeoutMs: 20_000 }, [0, 1]);
    expect(exits[0]!.result).toMatchObject({ ok: false, error: { code: 'COMM_MISMATCH', ranks: [1] } });
    expect(exits[0]!.result!.error!.message).toMatch(/rank 1 issued collective #1, reduceScatter of 8 f32, where this rank issued #1, reduceScatter of 8 f32, with other segment counts/);
    expect(exits[1]!.result).toMatchObject({ ok: false, error: { code: 'COMM_MISMATCH', ranks: [0] } });
  });

  it('2 ranks meet through a redis-server started for the test', async () => {
    const found = spawnSync('redis-server', ['--version'], { encoding: 'utf8' });
    if (found.error !== undefined) throw new Error('redis-server is not installed: apt-get install redis-server (scripts/setup.sh installs it)');
    const port = await freePort();
    const redis = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
    spawned.push(redis);
    try {
      await waitForPort(port, 10_000);
      const n = 4099;
      const exits = await runRanks({ mode: 'collectives', size: 2, n, store: { kind: 'redis', host: '127.0.0.1', port }, prefix: 'redis-run', timeoutMs: 30_000 }, [0, 1]);
      checkCollectives(exits, 2, n);
      // A finished run leaves no keys in the shared server: each rank deleted its rendezvous keys.
      const keys = (): string[] => spawnSync('redis-cli', ['-p', String(port), '--raw', 'KEYS', '*'], { encoding: 'utf8' }).stdout.split('\n').filter((k) => k !== '').sort();
      expect(keys()).toEqual([]);
      // A failed run neither: the survivor's "alive" key goes when it closes (the killed rank's
      // rendezvous keys went after connecting).
      const died = await runRanks({ mode: 'die', victim: 1, size: 2, store: { kind: 'redis', host: '127.0.0.1', port }, prefix: 'redis-die', timeoutMs: 20_000, graceMs: 500 }, [0, 1]);
      expect(died[0]!.result).toMatchObject({ ok: false, error: { code: 'COMM_PEER_LOST', ranks: [1] } });
      expect(keys()).toEqual([]);
      // A survivor killed after its diagnosis (before its close could delete its "alive" and
      // "diagnosed" keys): the other survivor deletes them when it closes.
      const killed = await runRanks({ mode: 'die', victim: 2, killedAfterFailure: 1, size: 3, store: { kind: 'redis', host: '127.0.0.1', port }, prefix: 'redis-killed', timeoutMs: 20_000, graceMs: 1000 }, [0, 1, 2]);
      expect(killed[0]!.result).toMatchObject({ ok: false, error: { code: 'COMM_PEER_LOST', ranks: [2] } });
      expect(killed[1]!.result).toMatchObject({ ok: false, error: { code: 'COMM_PEER_LOST', ranks: [2] } });
      expect(killed[1]!.signal).toBe('SIGKILL');
      expect(keys()).toEqual([]);
      // A run whose prefix is in use (its keys exist) is refused instead of mixing two runs, and
      // deletes nothing it did not write.
      spawnSync('redis-cli', ['-p', String(port), 'SET', 'redis-busy/rank_0', 'other-run']);
      const reused = await runRanks({ mode: 'collectives', size: 1, n: 1, store: { kind: 'redis', host: '127.0.0.1', port }, prefix: 'redis-busy', timeoutMs: 5000 }, [0]);
      expect(reused[0]!.result?.error?.code).toBe('COMM_STORE');
      expect(keys()).toEqual(['redis-busy/rank_0']);
    } finally {
      redis.kill('SIGTERM');
      await new Promise<void>((resolve) => (redis.exitCode !== null || redis.signalCode !== null ? resolve() : redis.once('exit', () => resolve())));
    }
    expect(isAlive(redis.pid!)).toBe(false);
  });

  it('a redis-server that takes connections and never answers (SIGSTOPped): every rank fails COMM_STORE near its deadline', async () => {
    const port = await freePort();
    const redis = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
    spawned.push(redis);
    try {
      await waitForPort(port, 10_000);
      // Stopped, the server's kernel still completes TCP handshakes: commands then go unanswered.
      redis.kill('SIGSTOP');
      const started = Date.now();
      const exits = await runRanks({ mode: 'collectives', size: 2, n: 1, store: { kind: 'redis', host: '127.0.0.1', port }, prefix: 'paused', timeoutMs: 2000, graceMs: 500 }, [0, 1]);
      for (const e of exits) {
        expect(e.result, e.stderr).toMatchObject({ ok: false, error: { code: 'COMM_STORE' } });
        expect(e.result!.error!.message).toMatch(new RegExp(`redis store 127\\.0\\.0\\.1:${port} did not answer a command within 2000 ms`));
      }
      // The deadline is the point here: each rank's first unanswered command ends it (the later ones
      // fail at once), so a 2 s deadline ends well before the hang guard.
      expect(Date.now() - started).toBeLessThan(15_000);
    } finally {
      redis.kill('SIGKILL');
    }
  });

  it('a killed rank makes the others fail with COMM_PEER_LOST naming it; no process is left', async () => {
    const dir = tempDir();
    // Rank 1 meets the failure 400 ms after rank 2 (as a rank still computing would): rank 2 must
    // keep its sign of life until rank 1 has read it, or rank 1 would name rank 2 as lost too.
    const exits = await runRanks({ mode: 'die', victim: 0, late: 1, lateMs: 400, size: 3, store: { kind: 'file', path: dir }, prefix: 'die', timeoutMs: 20_000, graceMs: 1500 }, [0, 1, 2]);
    expect(exits[0]!.signal).toBe('SIGKILL');
    for (const rank of [1, 2]) {
      const r = exits[rank]!.result;
      expect(r, exits[rank]!.stderr).toMatchObject({ ok: false, error: { code: 'COMM_PEER_LOST', ranks: [0] } });
      expect(r!.error!.message).toMatch(/rank 0 was lost/);
    }
    for (const e of exits) expect(isAlive(e.pid)).toBe(false);
  });

  it('a rank that never joins: the others fail with COMM_TIMEOUT naming it', async () => {
    const dir = tempDir();
    const exits = await runRanks({ mode: 'collectives', n: 1, size: 3, store: { kind: 'file', path: dir }, prefix: 'absent', timeoutMs: 5000 }, [0, 1]);
    // Rank 0 waits for rank 2's address; rank 1 waits for rank 0 or 2: either way rank 2 is named.
    for (const e of exits) {
      expect(e.result).toMatchObject({ ok: false, error: { code: 'COMM_TIMEOUT' } });
      expect(e.result!.error!.ranks).toContain(2);
      expect(e.result!.error!.ranks).not.toContain(e.result!.rank);
    }
  });

  it('ranks that issue different collectives fail at once with COMM_MISMATCH naming each other', async () => {
    const dir = tempDir();
    const exits = await runRanks({ mode: 'mismatch', size: 2, store: { kind: 'file', path: dir }, prefix: 'mismatch', timeoutMs: 20_000 }, [0, 1]);
    expect(exits[0]!.result).toMatchObject({ ok: false, error: { code: 'COMM_MISMATCH', ranks: [1] } });
    expect(exits[0]!.result!.error!.message).toMatch(/rank 1 issued collective #1, allgather of 8 f32, where this rank issued #1, allreduce of 16 f32 \(sum\)/);
    expect(exits[1]!.result).toMatchObject({ ok: false, error: { code: 'COMM_MISMATCH', ranks: [0] } });
  });

  it('a rank alive but silent past the timeout is named by COMM_TIMEOUT', async () => {
    const dir = tempDir();
    const exits = await runRanks({ mode: 'silent', victim: 1, sleepMs: 6000, size: 2, store: { kind: 'file', path: dir }, prefix: 'silent', timeoutMs: 1000, graceMs: 500 }, [0, 1]);
    expect(exits[0]!.result).toMatchObject({ ok: false, error: { code: 'COMM_TIMEOUT', ranks: [1] } });
    // The late rank then finds its peer gone, which is alive and reported: nobody to blame.
    expect(exits[1]!.result?.ok).toBe(false);
  });

  it('rejects a missing store directory, a bad rank, an unknown interface and an unreachable Redis with codes', async () => {
    await expect(createCommunicator({ rank: 0, size: 1, store: { kind: 'file', path: '/nonexistent/ninodes' }, timeoutMs: 1000 })).rejects.toMatchObject({ code: 'COMM_STORE' });
    const dir = tempDir();
    await expect(createCommunicator({ rank: 2, size: 2, store: { kind: 'file', path: dir }, timeoutMs: 1000 })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    await expect(createCommunicator({ rank: 0, size: 1, store: { kind: 'file', path: dir }, iface: 'nosuchif0', timeoutMs: 1000 })).rejects.toMatchObject({ code: 'COMM_INTERFACE' });
    // Nothing listens on a port just freed.
    const closed = await freePort();
    await expect(createCommunicator({ rank: 0, size: 2, store: { kind: 'redis', host: '127.0.0.1', port: closed }, timeoutMs: 1000 })).rejects.toMatchObject({
      code: 'COMM_STORE',
      message: expect.stringMatching(/Connection refused/),
    });
    // A world of one needs no peers; its collectives are identities, then close is final.
    const solo = await createCommunicator({ rank: 0, size: 1, store: { kind: 'file', path: dir }, prefix: 'solo', timeoutMs: 1000 });
    const data = Float32Array.of(1.5, -2);
    await solo.allreduce(data, 'sum');
    expect(Array.from(data)).toEqual([1.5, -2]);
    // Segmented collectives: a world of one keeps its data; the wrapper checks counts and types.
    const seg = Int32Array.of(4, -7, 9);
    await solo.reduceScatter(seg, [3]);
    await solo.allgatherInto(Int8Array.of(1, 2), [2]);
    expect(Array.from(seg)).toEqual([4, -7, 9]);
    const recv = new Int32Array(3);
    await solo.allToAll(seg, recv, [3]);
    expect(Array.from(recv)).toEqual([4, -7, 9]);
    expect(() => solo.allToAll(seg, new Int32Array(2), [3])).toThrow(expect.objectContaining({ code: 'SHAPE_MISMATCH', where: 'allToAll recv' }));
    expect(() => solo.allToAll(seg, new Float32Array(3), [3])).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT', where: 'allToAll recv' }));
    expect(() => solo.allToAll(seg, seg.subarray(1), [3])).toThrow(expect.objectContaining({ code: 'SHAPE_MISMATCH' }));
    expect(() => solo.allToAll(seg, new Int32Array(seg.buffer), [3])).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT', message: expect.stringMatching(/overlap/) }));
    expect(() => solo.reduceScatter(seg, [1, 2])).toThrow(expect.objectContaining({ code: 'SHAPE_MISMATCH' }));
    expect(() => solo.reduceScatter(seg, [2])).toThrow(expect.objectContaining({ code: 'SHAPE_MISMATCH' }));
    expect(() => solo.allgatherInto(seg, [-1])).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
    expect(() => solo.allgatherInto(seg, [1.5])).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
    expect(() => solo.reduceScatter(Int8Array.of(1) as unknown as Int32Array, [1])).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
    expect(() => solo.allgatherInto(Float64Array.of(1) as unknown as Int8Array, [1])).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
    await solo.close();
    await expect(solo.barrier()).rejects.toMatchObject({ code: 'COMM_CLOSED' });
    await expect(solo.reduceScatter(seg, [3])).rejects.toMatchObject({ code: 'COMM_CLOSED' });
    // Its rendezvous keys were files in the store directory: deleted once connected.
    expect(readdirSync(dir)).toEqual([]);
  });
});
