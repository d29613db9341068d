// The header soak: mutations run in batches, each batch in a child process with a heap limit and a
// timeout, so a crash (signal, abort, out of memory) or a hang is observed instead of taking the
// soak down. Every mutation must end in a parse or a coded NinodesError.
import { spawnSync } from 'node:child_process';
import { type HeaderSample, mutate } from './header-mutations.js';
import { parseHeaderSample } from './parse-header-sample.js';

export interface HeaderSoakOptions {
  /** Mutations to run (default 10,000). */
  count?: number;
  seed?: number;
  /** Mutations per child process (default 1,000). */
  batch?: number;
  /** V8 heap limit of each child, MiB (default 256): a header needing more is a crash. */
  heapMb?: number;
  /** Wall-clock limit of each child, ms (default 60,000): exceeding it is a hang. */
  timeoutMs?: number;
  /** The script that runs a batch: node <entry> --child <fixtures> <seed> <start> <end>. */
  entry: string;
  fixtures: string;
}

export interface SoakIncident {
  readonly index: number;
  readonly sample: string;
  readonly ops: readonly string[];
  readonly detail: string;
}

export interface HeaderSoakReport {
  readonly mutations: number;
  readonly seed: number;
  /** Still valid after damage (parsed and detected). */
  readonly parsed: number;
  /** Refused with a NinodesError, by code. */
  readonly coded: Readonly<Record<string, number>>;
  /** Thrown as something other than a coded NinodesError (a TypeError, a RangeError, INTERNAL). */
  readonly uncoded: readonly SoakIncident[];
  readonly crashes: readonly SoakIncident[];
  readonly hangs: readonly SoakIncident[];
  readonly seconds: number;
}

/**
 * Runs mutations [start, end) in this process, writing one line before each parse (`<i>`) and one
 * after it (`<i> ok`, `<i> <CODE>`, `<i> ! <error>`): a parent sees every result up to a crash and
 * the mutation the crash happened in.
 */
export function runHeaderBatch(samples: readonly HeaderSample[], seed: number, start: number, end: number, write: (line: string) => void): void {
  for (let i = start; i < end; i++) {
    write(`${i}`);
    const r = parseHeaderSample(mutate(samples, seed, i).sample);
    write(r.kind === 'ok' ? `${i} ok` : r.kind === 'coded' ? `${i} ${r.code}` : `${i} ! ${r.error.replace(/\n/g, ' ')}`);
  }
}

export function runHeaderSoak(samples: readonly HeaderSample[], options: HeaderSoakOptions): HeaderSoakReport {
  const count = options.count ?? 10_000;
  const seed = options.seed ?? 1;
  const batch = options.batch ?? 1000;
  const t0 = performance.now();
  let parsed = 0;
  const coded: Record<string, number> = {};
  const uncoded: SoakIncident[] = [];
  const crashes: SoakIncident[] = [];
  const hangs: SoakIncident[] = [];
  const incident = (index: number, detail: string): SoakIncident => {
    const m = mutate(samples, seed, index);
    return { index, sample: m.sample.name, ops: m.ops, detail };
  };
  for (let from = 0; from < count; from += batch) {
    const to = Math.min(count, from + batch);
    let start = from;
    while (start < to) {
      const r = spawnSync(
        process.execPath,
        [`--max-old-space-size=${options.heapMb ?? 256}`, options.entry, '--child', options.fixtures, String(seed), String(start), String(to)],
        { encoding: 'utf8', timeout: options.timeoutMs ?? 60_000, maxBuffer: 64 << 20 },
      );
      let culprit: number | undefined;
      let next = start;
      for (const line of (r.stdout ?? '').split('\n')) {
        const m = /^(\d+)(?: (!) (.*)| (\S+))?$/.exec(line);
        if (m === null) continue;
        const i = Number(m[1]);
        if (m[2] === undefined && m[4] === undefined) {
          culprit = i;
          continue;
        }
        culprit = undefined;
        next = i + 1;
        if (m[2] === '!') uncoded.push(incident(i, m[3] as string));
        else if (m[4] === 'ok') parsed++;
        else coded[m[4] as string] = (coded[m[4] as string] ?? 0) + 1;
      }
      if (r.status === 0 && culprit === undefined && next === to) break;
      // The child died or hung: the index it started and did not finish is the culprit.
      if (culprit === undefined) {
        throw new Error(`header soak: the batch child stopped at ${next} without a culprit (status ${r.status}, signal ${r.signal}): ${(r.stderr ?? '').slice(-500)}`);
      }
      const timedOut = (r.error as NodeJS.ErrnoException | undefined)?.code === 'ETIMEDOUT';
      const detail = timedOut ? `no result within ${options.timeoutMs ?? 60_000} ms` : `exit ${r.status}, signal ${r.signal}: ${(r.stderr ?? '').trim().split('\n').slice(-3).join(' | ')}`;
      (timedOut ? hangs : crashes).push(incident(culprit, detail));
      start = culprit + 1;
    }
  }
  return { mutations: count, seed, parsed, coded, uncoded, crashes, hangs, seconds: (performance.now() - t0) / 1000 };
}
