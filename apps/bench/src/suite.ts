/**
 * What a benchmark suite is. A suite is one file in `src/suites/` exporting a `Suite`, plus one line
 * in `src/suites/index.ts`. It calls the packages' public APIs only; the harness does warm-up,
 * repetition, interleaving, statistics, environment capture and the three outputs.
 */
import type { PeakMemory, PeakMemoryResult } from './peak-memory.js';

/** Parameter values of one case instance; they label results and chart axes. */
export type ParamValue = string | number | boolean;
export type Params = Readonly<Record<string, ParamValue>>;

/** Work done by one run, so the harness can report throughput (GB/s and/or GFLOP/s). */
export interface Work {
  /** Bytes moved by one run (read + written), used for GB/s and the memcpy bound. */
  bytes?: number;
  /** Floating-point (or integer multiply-add x2) operations of one run, used for GFLOP/s. */
  flops?: number;
}

/**
 * Something timed against "ours" in the same rounds. Exactly one of:
 * - `run`: an in-process function; the harness times it (awaits a returned promise).
 * - `time`: self-timed runs (a peer process): does `runs` back-to-back runs, resolves to their total seconds.
 * - `missing`: the peer is not on this machine; recorded as missing, never replaced.
 */
export type Contender =
  | { run: () => unknown; dispose?: () => void | Promise<void> }
  | { time: (runs: number) => Promise<number>; dispose?: () => void | Promise<void> }
  | { missing: string };

/** Kind of a contender, for the report: a physical bound, an alternative of ours, or a peer library. */
export type ContenderKind = 'bound' | 'baseline' | 'peer';

/** A scalar measured once per case instance (error against a reference, peak RSS, file size...). */
export interface Metric {
  value: number;
  /** Display unit, e.g. 'bytes', 'rel_error', 's'. */
  unit: string;
  /** Which direction is good; drives the summary wording. */
  better?: 'lower' | 'higher';
}

/** Where a target's measured value comes from. */
export type TargetOn =
  /** Median per-pair time ratio ours / contender (below 1 means ours is faster). */
  | { ratio: string }
  /** A metric returned by `CaseInstance.metrics`. */
  | { metric: string }
  /** Median seconds of one run of ours. */
  | { time: 'median' }
  /** Throughput of ours from `work`: 'GB/s' or 'GFLOP/s'. */
  | { throughput: 'GB/s' | 'GFLOP/s' };

/** A goal set by an issue, checked on every instance of the case it belongs to. */
export interface Target {
  /** Where the target was set, e.g. 'issue 3'. */
  source: string;
  /** Human wording, e.g. 'int8 linear at least as fast as torch._int_mm'. */
  description: string;
  on: TargetOn;
  op: '<=' | '>=';
  value: number;
  /** Only check instances whose parameters match these values (e.g. the large size only). */
  when?: Params;
}

/** Handed to `BenchCase.setup`. */
export interface CaseContext {
  quick: boolean;
  /** Intra-op threads ours runs on (the addon's pool); give peers the same count. */
  threads: number;
  /** Scratch directory for this run (removed afterwards); write test files here. */
  tmpDir: string;
  peers: Peers;
  /** Peak memory of a separate child process, measured by the OS. */
  peakMemory: PeakMemory;
  /** Evicts a file from the page cache so the next read is cold (GNU dd iflag=nocache). */
  dropFileCache: (file: string) => Promise<void>;
  /** Peak memory of a fresh Node process running an ES module source that imports @ninodes/* packages. */
  peakMemoryOfScript: (source: string) => Promise<PeakMemoryResult>;
}

/** Peer contenders. Each resolves to `{ missing }` when the peer is not on this machine. */
export interface Peers {
  /** A job of the Python peer (`peers/python_peer.py`), e.g. 'torch.linear', 'torch.int_mm', 'torch.sdpa', 'safetensors.load'. */
  python(kind: string, params: Record<string, unknown>): Promise<Contender>;
  /** Plain memcpy of `bytes` (TypedArray.set, which V8 lowers to memmove): the bound for memory-bound ops. */
  memcpy(bytes: number): Contender;
  /** `cat file > /dev/null`, timed per run (includes process start). */
  cat(file: string): Promise<Contender>;
  /** `dd if=file of=/dev/null bs=<blockSize>`, timed per run (includes process start). */
  dd(file: string, blockSize?: string): Promise<Contender>;
}

/** One prepared case instance: ours, what it is compared with, and one-off metrics. */
export interface CaseInstance {
  /** One run of ours. Return a promise for async work; the harness awaits it inside the timing. */
  run: () => unknown;
  /** Named contenders timed in the same rounds as ours, interleaved (e.g. { memcpy, torch }). */
  against?: Readonly<Record<string, { kind: ContenderKind; contender: Contender }>>;
  /** Scalars measured once after timing (e.g. quantization error, peak RSS via ctx.peakMemory). */
  metrics?: () => Promise<Record<string, Metric>> | Record<string, Metric>;
  /** Frees what setup made. */
  dispose?: () => void | Promise<void>;
}

export interface BenchCase {
  /** Case name, unique in the suite, snake_case, e.g. 'linear_f32'. */
  name: string;
  description: string;
  /** Instances to run: `full` normally, `quick` under `--quick` (small sizes; all suites in < 3 min). */
  params: { full: readonly Params[]; quick: readonly Params[] };
  /** Work of one run for throughput; omit when throughput is meaningless. */
  work?: (params: Params) => Work;
  targets?: readonly Target[];
  /** Overrides of the harness's repetition budget for this case. */
  budget?: Partial<Budget>;
  setup: (params: Params, ctx: CaseContext) => Promise<CaseInstance> | CaseInstance;
}

/** A chart the report draws from this suite's results (see charts.ts). */
export type ChartRequest =
  /** Throughput of ours and every contender per instance (GB/s, or GFLOP/s when flops are given). */
  | { kind: 'throughput'; title: string; cases?: readonly string[] }
  /** Median per-pair time ratio ours / contender per instance, with 1.0 marked. */
  | { kind: 'ratio'; title: string; cases?: readonly string[] }
  /** Median time of ours (quartile whiskers), x and colour from parameters (e.g. model, format). */
  | { kind: 'time'; title: string; cases?: readonly string[]; x?: string; color?: string }
  /** A metric per instance, x and colour from parameters (e.g. peak RSS per model and format). */
  | { kind: 'metric'; title: string; metric: string; cases?: readonly string[]; x?: string; color?: string };

export interface Suite {
  /** CLI name: `--suite <name>`. */
  name: string;
  description: string;
  cases: readonly BenchCase[];
  /** Charts for the report; when omitted, throughput (or time) plus one chart per metric. */
  charts?: readonly ChartRequest[];
}

/** Repetition budget of one case instance. */
export interface Budget {
  /** Untimed rounds first (JIT, caches, page faults). */
  warmup: number;
  /** Timed rounds at least... */
  minRuns: number;
  /** ...and at most. */
  maxRuns: number;
  /** Stop after this many seconds of timed rounds once `minRuns` is reached. */
  seconds: number;
  /** Back-to-back runs per sample (a sample is their mean), for ops too short to time one by one. */
  inner: number;
}

export const FULL_BUDGET: Budget = { warmup: 3, minRuns: 7, maxRuns: 1000, seconds: 3, inner: 1 };
export const QUICK_BUDGET: Budget = { warmup: 1, minRuns: 3, maxRuns: 50, seconds: 0.3, inner: 1 };
