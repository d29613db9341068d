// report.json of `ninodes run`: what was run, how long each step took, what memory it needed and a
// hash of what it produced. Validated before it is written so a report never lies about its shape.
import { COMPUTE_MODES, type ComputeMode } from '@ninodes/quant';
import { z } from 'zod';

export const runReportSchema = z.object({
  schema: z.literal('ninodes.run-report/1'),
  config: z.object({
    model: z.string(),
    architecture: z.string(),
    quant: z.enum(COMPUTE_MODES as [ComputeMode, ...ComputeMode[]]),
    /** Where the linears computed (--device): 'cpu' or 'vk:N'. */
    device: z.string(),
    frames: z.number().int().positive(),
    height: z.number().int().positive(),
    width: z.number().int().positive(),
    latentShape: z.array(z.number().int().nonnegative()),
    /** Length of the sigma schedule (--steps). */
    steps: z.number().int().positive(),
    /** The range of that schedule run, [startStep, endStep) (--start-step / --end-step; 0 and steps by default). */
    startStep: z.number().int().nonnegative(),
    endStep: z.number().int().positive(),
    shift: z.number().positive(),
    seed: z.number().int().nonnegative(),
    threads: z.number().int().positive(),
  }),
  timing: z.object({
    /** Seconds of each sampler step, in order. */
    stepSeconds: z.array(z.number().nonnegative()),
    /** The steps actually run, in order (0-based indices into the schedule), with their sigmas: one per stepSeconds entry. */
    steps: z.array(z.object({ step: z.number().int().nonnegative(), sigma: z.number().nonnegative(), sigmaNext: z.number().nonnegative() })),
    /** Mean of steps 2..N-1 (1-based), the steady state without warm-up and the last step; all steps when N < 3. */
    meanStepSeconds: z.number().nonnegative(),
    loadSeconds: z.number().nonnegative(),
    endToEndSeconds: z.number().nonnegative(),
  }),
  memory: z.object({
    /** Peak resident bytes the process owned (anonymous: heap, native buffers). */
    peakAnonBytes: z.number().int().nonnegative(),
    /** Peak resident bytes mapped from files (the page cache backing mmap'd weights). */
    peakFileBytes: z.number().int().nonnegative(),
    samples: z.number().int().nonnegative(),
  }),
  /** --alloc / --budget: what streamed, per sampler pass of the model (distorch StepStats). */
  offload: z
    .object({
      allocation: z.string(),
      /** Resident bytes the run may hold over its baseline (the cpu's share of the allocation), measured. */
      budgetBytes: z.number().int().nonnegative(),
      steps: z.array(
        z.object({
          step: z.number().int().nonnegative(),
          bytesStreamed: z.number().int().nonnegative(),
          bytesLoaded: z.number().int().nonnegative(),
          loads: z.number().int().nonnegative(),
          hits: z.number().int().nonnegative(),
          evictions: z.number().int().nonnegative(),
          overBudgetLoads: z.number().int().nonnegative(),
          waitSeconds: z.number().nonnegative(),
          loadSeconds: z.number().nonnegative(),
          blockingSeconds: z.number().nonnegative(),
          // Loading (reads, populated pages, conversions) hidden behind compute, and waited for or blocked by.
          hiddenSeconds: z.number().nonnegative(),
          exposedSeconds: z.number().nonnegative(),
          bytesPopulated: z.number().int().nonnegative(),
          overlap: z.number().min(0).max(1),
          // Accounted (what the loaders report) and measured (RSS: anonymous + file-backed).
          peakHeldBytes: z.number().int().nonnegative(),
          peakResidentBytes: z.number().int().nonnegative(),
          peakAnonymousBytes: z.number().int().nonnegative(),
          peakFileBackedBytes: z.number().int().nonnegative(),
          peakMeasuredBytes: z.number().int().nonnegative(),
          baselineBytes: z.number().int().nonnegative(),
          budgetBytes: z.number().int().nonnegative(),
        }),
      ),
    })
    .optional(),
  /** --lora: each LoRA, its strength, how many layers it patched and the modules that named no layer. */
  lora: z
    .array(
      z.object({
        path: z.string(),
        strength: z.number(),
        layers: z.number().int().nonnegative(),
        unmapped: z.array(z.string()),
        unsupported: z.array(z.string()),
      }),
    )
    .optional(),
  output: z.object({
    latentSha256: z.string().regex(/^[0-9a-f]{64}$/),
    files: z.array(z.string()),
  }),
  /** Tensor-parallel runs: every rank's latent hash and peak memory, and the plan's weight bytes. */
  tp: z
    .object({
      size: z.number().int().positive(),
      ranks: z.array(
        z.object({
          rank: z.number().int().nonnegative(),
          latentSha256: z.string().regex(/^[0-9a-f]{64}$/),
          peakAnonBytes: z.number().int().nonnegative(),
          peakFileBytes: z.number().int().nonnegative(),
          /** Seconds the rank spent in collectives during the run (waiting for the others included). */
          commSeconds: z.number().nonnegative(),
          collectives: z.number().int().nonnegative(),
        }),
      ),
      weightBytesPerRank: z.number().int().nonnegative(),
      singleRankWeightBytes: z.number().int().nonnegative(),
    })
    .optional(),
  env: z.object({
    node: z.string(),
    simd: z.string(),
    onednn: z.string(),
    /** The int8 GEMM that int8 layers ran on (amx, vnni, onednn or native). */
    int8Backend: z.enum(['amx', 'vnni', 'onednn', 'native']),
    /** What float linears multiply in: 'bf16' only for --quant bf16 on a CPU with bf16 units (PyTorch's bf16 mode). */
    computePrecision: z.enum(['f32', 'bf16']),
    /** What attention computed in: 'bf16' (kernels' bf16 attention) by default for --quant bf16 on a CPU with bf16 units, or as --attention asked. */
    attentionPrecision: z.enum(['f32', 'bf16']),
    cpu: z.string(),
  }),
});

export type RunReport = z.infer<typeof runReportSchema>;

/**
 * Mean of steps 2..N-1 (1-based): drops the first (warm-up: weights materialize, pages fault in)
 * and the last; of two steps, the second. One step is all there is.
 */
export function steadyStepMean(stepSeconds: readonly number[]): number {
  const core = stepSeconds.length >= 3 ? stepSeconds.slice(1, -1) : stepSeconds.length === 2 ? stepSeconds.slice(1) : stepSeconds;
  if (core.length === 0) return 0;
  return core.reduce((a, b) => a + b, 0) / core.length;
}
