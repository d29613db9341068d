// How a process learns it is one rank of a tensor-parallel run: `ninodes run --tp N` sets these for
// the ranks it starts; across machines the user sets them for each `ninodes run` by hand.
//   NINODES_TP_RANK        this process's rank, 0..size-1
//   NINODES_TP_SIZE        the number of ranks
//   NINODES_TP_STORE       where ranks meet: a directory every rank can reach (one machine), or
//                          redis://host:port (any machines that reach the Redis server)
//   NINODES_TP_PREFIX      a name for the run, the same on every rank and new for every run
//   NINODES_TP_IFACE       optional: the network interface to connect on (else NINODES_TP_ADDRESS,
//   NINODES_TP_ADDRESS     an address of this machine; neither: loopback)
//   NINODES_TP_TIMEOUT_MS  optional: deadline of the rendezvous and of every collective (default 120000)
import { NinodesError, type CommStore } from '@ninodes/kernels';
import { RunnerError } from './error-codes.js';

export interface TpRankEnv {
  readonly rank: number;
  readonly size: number;
  readonly store: CommStore;
  readonly prefix: string;
  readonly iface?: string;
  readonly hostname?: string;
  readonly timeoutMs: number;
}

export const TP_ENV = {
  rank: 'NINODES_TP_RANK',
  size: 'NINODES_TP_SIZE',
  store: 'NINODES_TP_STORE',
  prefix: 'NINODES_TP_PREFIX',
  iface: 'NINODES_TP_IFACE',
  address: 'NINODES_TP_ADDRESS',
  timeoutMs: 'NINODES_TP_TIMEOUT_MS',
} as const;

export const DEFAULT_TP_TIMEOUT_MS = 120_000;

function bad(name: string, value: unknown, why: string, hint: string): NinodesError {
  return new RunnerError('CLI_TP_ENV', `${name}=${JSON.stringify(value)}: ${why}`, { value, where: name, hint });
}

function integer(env: NodeJS.ProcessEnv, name: string, lo: number, hi: number): number {
  const raw = env[name];
  const value = raw === undefined || raw.trim() === '' ? Number.NaN : Number(raw);
  if (!Number.isInteger(value) || value < lo || value > hi) throw bad(name, raw, `must be an integer in ${lo}..${hi}`, `set ${name}`);
  return value;
}

/** `redis://host:port` or a directory path. */
export function parseTpStore(raw: string | undefined): CommStore {
  if (raw === undefined || raw === '') throw bad(TP_ENV.store, raw, 'is not set', 'a directory every rank can reach, or redis://host:port');
  if (raw.startsWith('redis://')) {
    const m = /^redis:\/\/(\[[^\]]+\]|[^:/]+):(\d{1,5})\/?$/.exec(raw);
    const port = m === null ? Number.NaN : Number(m[2]);
    if (m === null || !(port >= 1 && port <= 65535)) throw bad(TP_ENV.store, raw, 'is not redis://host:port', 'e.g. redis://10.0.0.1:6379');
    return { kind: 'redis', host: (m[1] as string).replace(/^\[|\]$/g, ''), port };
  }
  return { kind: 'file', path: raw };
}

/** The rank settings of this process, or undefined when it is not a rank of a tensor-parallel run. */
export function tpRankEnv(env: NodeJS.ProcessEnv): TpRankEnv | undefined {
  if (env[TP_ENV.rank] === undefined && env[TP_ENV.size] === undefined) return undefined;
  const size = integer(env, TP_ENV.size, 1, 4096);
  const rank = integer(env, TP_ENV.rank, 0, size - 1);
  const prefix = env[TP_ENV.prefix];
  if (prefix === undefined || !/^[A-Za-z0-9._-]{1,128}$/.test(prefix)) {
    throw bad(TP_ENV.prefix, prefix, 'must be 1-128 letters, digits, dots, dashes or underscores', 'the same new name on every rank of one run, e.g. run-2026-12-01-a');
  }
  const timeoutMs = env[TP_ENV.timeoutMs] === undefined ? DEFAULT_TP_TIMEOUT_MS : integer(env, TP_ENV.timeoutMs, 1, 86_400_000);
  const iface = env[TP_ENV.iface];
  const hostname = env[TP_ENV.address];
  return {
    rank,
    size,
    store: parseTpStore(env[TP_ENV.store]),
    prefix,
    timeoutMs,
    ...(iface === undefined || iface === '' ? {} : { iface }),
    ...(hostname === undefined || hostname === '' ? {} : { hostname }),
  };
}
