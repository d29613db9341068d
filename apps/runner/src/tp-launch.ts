// `ninodes run --tp N` on one machine: starts N rank processes of this CLI (threads split evenly,
// optionally each pinned to its own cores),
// streams their output with a rank prefix, and makes sure none outlives the run: when one rank fails
// the others get a moment to report (their collectives fail naming it), then are terminated; SIGINT
// and SIGTERM are passed on. The rendezvous directory is removed at the end; it is a kernels
// temporary named for this process, so one left by a SIGKILLed launcher is swept by the next launch.
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { fileURLToPath } from 'node:url';
import { allowedCpus, cpuSlices, hasTaskset } from '@ninodes/device';
import { createTempDir, removeTemp } from '@ninodes/kernels';
import { RunnerError } from './error-codes.js';
import type { CommandContext } from './command.js';
import { TP_ENV } from './tp-env.js';

export interface LaunchOptions {
  readonly size: number;
  /** The command line every rank runs, e.g. ['run', '--preset', 'h3-tiny', ...] (no --tp). */
  readonly argv: readonly string[];
  readonly threadsPerRank: number;
  readonly timeoutMs: number;
  /** Pin rank i to its own `threadsPerRank` cores of the ones this process may use (taskset). */
  readonly pin?: boolean;
  readonly context: CommandContext;
}

/** Per rank, the cores it is pinned to: consecutive slices of the allowed CPUs. */
function pinPlan(size: number, threadsPerRank: number): string[] {
  if (!hasTaskset()) {
    throw new RunnerError('TP_PIN_UNAVAILABLE', '--tp-pin needs taskset, which is not installed', { where: '--tp-pin', hint: 'apt-get install util-linux' });
  }
  const cpus = allowedCpus();
  const slices = cpuSlices(cpus, size, threadsPerRank);
  if (slices === undefined) {
    throw new RunnerError('CLI_TP_PIN', `--tp-pin: ${size} ranks of ${threadsPerRank} threads need ${size * threadsPerRank} cores, this process may use ${cpus.length}`, {
      value: { ranks: size, threadsPerRank, cores: cpus.length },
      where: '--tp-pin',
      hint: 'lower --threads or --tp, or drop --tp-pin',
    });
  }
  return slices;
}

/** The CLI entry the ranks run: this bundle (dist/cli.js) or, from sources under test, the built one. */
function cliEntry(env: NodeJS.ProcessEnv): string {
  const candidates = [env.NINODES_CLI, fileURLToPath(new URL('./cli.js', import.meta.url)), fileURLToPath(new URL('../dist/cli.js', import.meta.url))];
  const found = candidates.find((c): c is string => c !== undefined && c.endsWith('.js') && existsSync(c));
  if (found === undefined) {
    throw new RunnerError('TP_CLI_NOT_FOUND', 'cannot find the ninodes CLI to start the ranks with', { hint: 'build apps/runner (npm run build) or set NINODES_CLI to its dist/cli.js' });
  }
  return found;
}

/** Writes each complete line of a stream with a prefix. */
function prefixLines(stream: NodeJS.ReadableStream, prefix: string, write: (s: string) => void): () => void {
  let pending = '';
  stream.on('data', (chunk: Buffer) => {
    pending += chunk.toString();
    const lines = pending.split('\n');
    pending = lines.pop() ?? '';
    for (const line of lines) write(`${prefix}${line}\n`);
  });
  return () => {
    if (pending !== '') write(`${prefix}${pending}\n`);
    pending = '';
  };
}

interface RankExit {
  rank: number;
  code: number | null;
  signal: NodeJS.Signals | null;
}

const describeExit = (e: RankExit): string => (e.signal !== null ? `was killed by ${e.signal}` : `exited with status ${e.code}`);

export async function launchTensorParallel(options: LaunchOptions): Promise<number> {
  const { size, context } = options;
  const cli = cliEntry(context.env);
  const pins = options.pin === true ? pinPlan(size, options.threadsPerRank) : undefined;
  const storeDir = createTempDir(tmpdir(), 'ninodes-tp');
  const prefix = `run-${process.pid}-${randomBytes(6).toString('hex')}`;
  const children: ChildProcess[] = [];
  const exits: (RankExit | undefined)[] = Array.from({ length: size }, () => undefined);
  let firstFailure: RankExit | undefined;
  let interrupted: NodeJS.Signals | undefined;
  const timers: NodeJS.Timeout[] = [];
  let rankZeroOut = '';
  // The ranks a rank's own COMM_TIMEOUT names as silent: a rank that stops answering (SIGSTOP, a
  // hung host) is not the first to exit, the one waiting on it is. (A dead rank exits first itself.)
  const blamed: (number[] | undefined)[] = Array.from({ length: size }, () => undefined);

  const terminate = (signal: NodeJS.Signals): void => {
    for (const [rank, child] of children.entries()) if (exits[rank] === undefined) child.kill(signal);
  };
  // After a failure the others normally exit on their own within the grace (their next collective
  // fails naming the lost rank); whoever is still running then is terminated, then killed.
  const windDown = (): void => {
    const grace = Math.min(options.timeoutMs, 10_000);
    timers.push(setTimeout(() => terminate('SIGTERM'), grace), setTimeout(() => terminate('SIGKILL'), grace + 3000));
  };
  const onSignal = (signal: NodeJS.Signals): void => {
    interrupted ??= signal;
    context.stderr.write(`[tp] ${signal}: stopping ${size} ranks\n`);
    terminate('SIGTERM');
    timers.push(setTimeout(() => terminate('SIGKILL'), 3000));
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);

  try {
    const done = Array.from({ length: size }, (_, rank) => {
      const args = [cli, ...options.argv, '--threads', String(options.threadsPerRank)];
      const pinned = pins?.[rank];
      const [command, commandArgs] = pinned === undefined ? [process.execPath, args] : ['taskset', ['-c', pinned, process.execPath, ...args]];
      const child = spawn(command, commandArgs, {
        env: {
          ...context.env,
          [TP_ENV.rank]: String(rank),
          [TP_ENV.size]: String(size),
          [TP_ENV.store]: storeDir,
          [TP_ENV.prefix]: prefix,
          [TP_ENV.timeoutMs]: String(options.timeoutMs),
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      children.push(child);
      context.stderr.write(`[tp] rank ${rank}: pid ${child.pid}${pinned === undefined ? '' : `, cores ${pinned}`}\n`);
      const tag = `[rank ${rank}] `;
      // Rank 0's standard output is the run's (summary or --json document), passed on once the whole
      // run succeeded (a failed run prints one error, the launcher's); the others' are logs.
      const flushOut = rank === 0 ? prefixLines(child.stdout!, '', (s) => (rankZeroOut += s)) : prefixLines(child.stdout!, tag, (s) => context.stderr.write(s));
      const flushErr = prefixLines(child.stderr!, tag, (s) => {
        const m = /^\[rank \d+\] error COMM_TIMEOUT: rank \d+ of \d+: .*?\branks? ([\d, ]+) (?:did not answer|did not join)/.exec(s);
        if (m !== null) blamed[rank] ??= m[1]!.split(',').map((r) => Number(r.trim()));
        context.stderr.write(s);
      });
      return new Promise<void>((resolve) => {
        child.on('error', (error) => {
          context.stderr.write(`${tag}cannot start: ${error.message}\n`);
        });
        child.on('close', (code, signal) => {
          flushOut();
          flushErr();
          const exit = { rank, code, signal };
          exits[rank] = exit;
          if ((code !== 0 || signal !== null) && firstFailure === undefined && interrupted === undefined) {
            firstFailure = exit;
            context.stderr.write(`[tp] rank ${rank} ${describeExit(exit)}; stopping the other ranks\n`);
            windDown();
          }
          resolve();
        });
      });
    });
    await Promise.all(done);
  } finally {
    for (const t of timers) clearTimeout(t);
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    for (const [rank, child] of children.entries()) if (exits[rank] === undefined) child.kill('SIGKILL');
    removeTemp(storeDir);
  }
  const succeeded = interrupted === undefined && firstFailure === undefined;
  if (succeeded) context.stdout.write(rankZeroOut);
  else if (rankZeroOut !== '') context.stderr.write(rankZeroOut.replace(/^(?=.)/gm, '[rank 0] '));
  if (interrupted !== undefined) {
    context.stderr.write(`[tp] stopped by ${interrupted}\n`);
    return interrupted === 'SIGINT' ? 130 : 143;
  }
  if (firstFailure !== undefined) {
    const cause = blamed[firstFailure.rank]?.filter((r) => r !== firstFailure!.rank);
    if (cause !== undefined && cause.length > 0) {
      const who = `rank${cause.length > 1 ? 's' : ''} ${cause.join(', ')}`;
      throw new RunnerError('TP_RANK_FAILED', `${who} of ${size} stopped answering: rank ${firstFailure.rank}, waiting on ${cause.length > 1 ? 'them' : 'it'} in a collective, ${describeExit(firstFailure)}`, {
        value: { rank: cause[0], waiting: firstFailure.rank, code: firstFailure.code, signal: firstFailure.signal },
        where: who,
        hint: `${who} was alive but silent (stopped, swapping, a hung host or network); the lines prefixed [rank ${firstFailure.rank}] above say what it waited for`,
      });
    }
    const others = exits.filter((e): e is RankExit => e !== undefined && e.rank !== firstFailure!.rank && (e.code !== 0 || e.signal !== null));
    throw new RunnerError('TP_RANK_FAILED', `rank ${firstFailure.rank} of ${size} ${describeExit(firstFailure)}${others.length > 0 ? `; then ${others.map((e) => `rank ${e.rank} ${describeExit(e)}`).join(', ')}` : ''}`, {
      value: { rank: firstFailure.rank, code: firstFailure.code, signal: firstFailure.signal },
      where: `rank ${firstFailure.rank}`,
      hint: `the lines prefixed [rank ${firstFailure.rank}] above say why`,
    });
  }
  return 0;
}
