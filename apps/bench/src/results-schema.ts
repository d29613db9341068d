/** The shape of results.json, validated on write and when read back as a `--compare` baseline. */
import { z } from 'zod';

const num = z.number();
const nullableNum = z.number().nullable();

export const StatsSchema = z.object({
  n: z.number().int().nonnegative(),
  median: nullableNum,
  min: nullableNum,
  max: nullableNum,
  mean: nullableNum,
  mad: nullableNum,
  q25: nullableNum,
  q75: nullableNum,
  iqr: nullableNum,
  spread: nullableNum,
});

export const ParamsSchema = z.record(z.string(), z.union([z.string(), z.number(), z.boolean()]));

const PeerAvailabilitySchema = z.object({ available: z.boolean(), version: z.string().optional(), reason: z.string().optional() });

export const EnvSchema = z.object({
  capturedAt: z.string(),
  hostname: z.string(),
  platform: z.string(),
  cpu: z.object({ model: z.string(), logicalCores: num, availableParallelism: num, flags: z.array(z.string()) }),
  memory: z.object({ totalBytes: num, freeBytesAtStart: num }),
  threads: z.object({ env: z.record(z.string(), z.string()), addonThreads: nullableNum, torchThreads: nullableNum }),
  versions: z.object({ node: z.string(), v8: z.string(), python: z.string().nullable() }),
  addon: z.discriminatedUnion('ok', [
    z.object({
      ok: z.literal(true),
      kernelsVersion: z.string().nullable(),
      compiler: z.string(),
      onednn: z.string(),
      onednnCpuRuntime: num,
      gloo: z.string(),
      simd: z.string(),
      threads: num,
      napiVersion: num,
      buildType: z.string(),
      modules: z.array(z.string()),
    }),
    z.object({ ok: z.literal(false), error: z.string() }),
  ]),
  git: z.object({ commit: z.string().nullable(), dirty: z.boolean().nullable() }),
  peers: z.record(z.string(), PeerAvailabilitySchema),
  peakMemoryMethod: z.enum(['gnu-time', 'proc-vmhwm']).nullable(),
});
export type BenchEnv = z.infer<typeof EnvSchema>;

export const ThroughputSchema = z.object({ value: num, unit: z.enum(['GB/s', 'GFLOP/s']) });

export const ContenderResultSchema = z.object({
  name: z.string(),
  kind: z.enum(['ours', 'bound', 'baseline', 'peer']),
  status: z.enum(['ok', 'missing', 'failed']),
  reason: z.string().optional(),
  /** Seconds per run, in round order (index i of every contender is the same round). */
  samples: z.array(num),
  stats: StatsSchema.nullable(),
  throughput: z.array(ThroughputSchema),
});
export type ContenderResult = z.infer<typeof ContenderResultSchema>;

export const RatioSchema = z.object({
  /** Contender the ratio is against. */
  against: z.string(),
  /** Per-round time ratio ours / against: below 1 means ours is faster. */
  timeRatio: StatsSchema,
});
export type RatioResult = z.infer<typeof RatioSchema>;

export const MetricSchema = z.object({ value: num, unit: z.string(), better: z.enum(['lower', 'higher']).optional() });

export const TargetResultSchema = z.object({
  source: z.string(),
  description: z.string(),
  on: z.union([
    z.object({ ratio: z.string() }),
    z.object({ metric: z.string() }),
    z.object({ time: z.literal('median') }),
    z.object({ throughput: z.enum(['GB/s', 'GFLOP/s']) }),
  ]),
  op: z.enum(['<=', '>=']),
  value: num,
  /** null when the measured side is missing or failed: then `met` is null too (unknown, not failed). */
  measured: nullableNum,
  met: z.boolean().nullable(),
  note: z.string().optional(),
});
export type TargetResult = z.infer<typeof TargetResultSchema>;

export const ComparisonSchema = z.object({
  baselineMedian: num,
  currentMedian: num,
  /** current / baseline median time. */
  ratio: num,
  /** Relative noise allowed: current spread + baseline spread (IQR / median of each). */
  noise: num,
  verdict: z.enum(['slower', 'faster', 'same']),
});
export type Comparison = z.infer<typeof ComparisonSchema>;

export const CaseResultSchema = z.object({
  suite: z.string(),
  case: z.string(),
  /** `case[param=value,...]`, unique per run; the key `--compare` matches on. */
  key: z.string(),
  description: z.string(),
  parameters: ParamsSchema,
  work: z.object({ bytes: num.optional(), flops: num.optional() }).nullable(),
  /** Ours first. */
  contenders: z.array(ContenderResultSchema),
  ratios: z.array(RatioSchema),
  metrics: z.record(z.string(), MetricSchema),
  targets: z.array(TargetResultSchema),
  comparison: ComparisonSchema.optional(),
  seconds: num,
  error: z.string().optional(),
});
export type CaseResult = z.infer<typeof CaseResultSchema>;

const ChartRequestSchema = z.union([
  z.object({ kind: z.literal('throughput'), title: z.string(), cases: z.array(z.string()).optional() }),
  z.object({ kind: z.literal('ratio'), title: z.string(), cases: z.array(z.string()).optional() }),
  z.object({ kind: z.literal('time'), title: z.string(), cases: z.array(z.string()).optional(), x: z.string().optional(), color: z.string().optional() }),
  z.object({ kind: z.literal('metric'), title: z.string(), metric: z.string(), cases: z.array(z.string()).optional(), x: z.string().optional(), color: z.string().optional() }),
]);

export const ResultsSchema = z.object({
  schemaVersion: z.literal(1),
  startedAt: z.string(),
  finishedAt: z.string(),
  options: z.object({ suites: z.array(z.string()), quick: z.boolean(), compare: z.string().nullable() }),
  env: EnvSchema,
  suites: z.array(z.object({ name: z.string(), description: z.string(), charts: z.array(ChartRequestSchema) })),
  cases: z.array(CaseResultSchema),
});
export type Results = z.infer<typeof ResultsSchema>;
