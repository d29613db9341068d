import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { defaultCacheDir, deviceIds, enumerateDevices, formatDeviceId, parseDeviceId } from '@ninodes/device';
import { StagedSource, StreamingExecutor, computeAccount, computeDeviceBytes, computeLoadAccount, estimateActivationBytes, formatAllocationBytes, latentTokens, opGroupLoader, planPlacement } from '@ninodes/distorch';
import { NinodesError, buildInfo, int8Backend, openVulkanDevice, setThreads, terminalSafe } from '@ninodes/kernels';
import { MemoryPressureMonitor, mallocTrim, parseByteSize, tensorSources, verifyCheckpoint, writeSafetensors } from '@ninodes/memory';
import { formatBytes } from '@ninodes/device';
import { type OpenedH3Model, SAMPLER_DEFAULTS, SAMPLER_LIMITS, ensureSyntheticCheckpoint, flowSigmas, layoutOf, openH3Model, runSampler, samplerHints, shapesModelPath } from '@ninodes/models';
import { COMPUTE_MODES, type ComputeMode, detectFormats, deviceLinearProvider, floatPrecision, isPreparedLinearOp, openCheckpoint } from '@ninodes/quant';
import { shardPlan } from '@ninodes/tp';
import { cpus } from 'node:os';
import { z } from 'zod';
import { type CommandContext, defineCommand } from '../command.js';
import { writeNewFile } from '../write-new-file.js';
import { checkRunFits } from '../run-size.js';
import { readLatentFile } from '../latent-file.js';
import { audioFileShape, contextFileShape, readAudioFile, readContextFile } from '../stream-inputs.js';
import { stageOutput } from '../output-dir.js';
import { samplePeakMemory } from '../peak-memory.js';
import { latentPreviewPng } from '../preview.js';
import { type LoadedLoras, describeLoras, loadLoras, loraReport, parseLoraOption } from '../lora-option.js';
import { type RunReport, runReportSchema, steadyStepMean } from '../run-report.js';
import { DEFAULT_TP_TIMEOUT_MS, tpRankEnv } from '../tp-env.js';
import { launchTensorParallel } from '../tp-launch.js';
import { checkRanksAgree } from '../tp-fingerprint.js';
import { type TpRankModel, openTpRank } from '../tp-rank.js';
import { RunnerError, type RunnerThrownCode } from '../error-codes.js';
import { describeLinearFormats } from '../model-line.js';

const positiveInt = z.coerce.number().int().positive();

/** Everything `run` writes into --out; an existing --out holding anything else is never replaced. */
/** Every file a run may write into --out (audio only for audio-video checkpoints). */
export const RUN_FILES = ['latent.safetensors', 'audio.safetensors', 'preview.png', 'report.json'] as const;

export const runSchema = z
  .object({
    model: z.string().min(1).optional(),
    preset: z.enum(['h3-tiny', 'h3-small']).optional(),
    latent: z.string().min(1).optional(),
    // Unset: the checkpoint's `ninodes.sampler` metadata (the trained default model has it), else SAMPLER_DEFAULTS.
    frames: positiveInt.optional(),
    height: positiveInt.optional(),
    width: positiveInt.optional(),
    steps: positiveInt.max(SAMPLER_LIMITS.steps).optional(),
    shift: z.coerce.number().positive().max(SAMPLER_LIMITS.shift).optional(),
    seed: z.coerce.number().int().nonnegative().max(2 ** 32 - 1).default(145),
    // auto: each layer computes in the format stored in the file (as ComfyUI runs a quantized layer).
    quant: z.enum(COMPUTE_MODES as [ComputeMode, ...ComputeMode[]]).default('auto'),
    // Unset: bf16 with --quant bf16 on a CPU with bf16 units (PyTorch's bf16 SDPA), else f32.
    attention: z.enum(['f32', 'bf16']).optional(),
    threads: z.coerce.number().int().nonnegative().max(1024).default(0),
    out: z.string().min(1).default('ninodes-run'),
    device: z.string().min(1).default('cpu'),
    alloc: z.string().min(1).optional(),
    budget: z.string().min(1).optional(),
    prefetch: z.coerce.number().int().nonnegative().max(64).default(1),
    tp: positiveInt.max(256).default(1),
    'tp-timeout': positiveInt.max(86_400_000).default(DEFAULT_TP_TIMEOUT_MS),
    'tp-pin': z.boolean().default(false),
    force: z.boolean().default(false),
    json: z.boolean().default(false),
    context: z.string().min(1).optional(),
    audio: z.string().min(1).optional(),
    // Flags as typed (kebab-case): parseArgs keys values by the flag's own name.
    'audio-frames': positiveInt.optional(),
    'start-step': z.coerce.number().int().nonnegative().optional(),
    'end-step': z.coerce.number().int().positive().optional(),
    lora: z.array(z.string()).default([]),
    positionals: z.array(z.string()).length(0),
  })
  .refine((a) => !(a.model && a.preset), { message: '--model and --preset are exclusive', path: ['model'] })
  // H3 patches the latent 2x2: an odd side would lose its last row or column.
  .refine((a) => (a.height ?? 0) % 2 === 0, { message: 'must be even (H3 patches the latent 2x2), got an odd number', path: ['height'] })
  .refine((a) => (a.width ?? 0) % 2 === 0, { message: 'must be even (H3 patches the latent 2x2), got an odd number', path: ['width'] })
  // A device run keeps every weight on the device: streaming into device slots and TP ranks on devices are not built yet.
  .refine((a) => a.device.trim().toLowerCase() === 'cpu' || (a.tp === 1 && a.alloc === undefined && a.budget === undefined), {
    message: '--device other than cpu cannot be combined with --tp, --alloc or --budget yet',
    path: ['device'],
  })
  .refine((a) => !(a.alloc && a.budget), { message: '--alloc and --budget are exclusive (--budget B is --alloc "cpu,B;disk,*")', path: ['alloc'] })
  // Streaming placement and tensor parallelism do not compose yet: each rank would need its own plan.
  .refine((a) => a.tp === 1 || (a.alloc === undefined && a.budget === undefined), { message: '--tp cannot be combined with --alloc or --budget yet', path: ['tp'] })
  // The ranks open their shards through their own provider, which takes no patches yet.
  .refine((a) => a.tp === 1 || a.lora.length === 0, { message: '--tp cannot be combined with --lora yet (merge the LoRA first: ninodes merge)', path: ['lora'] })
  .refine((a) => !(a.audio && a['audio-frames']), { message: '--audio and --audio-frames are exclusive', path: ['audio'] })
  // --steps may come from the checkpoint: the end is checked against it once the model is open.
  .refine((a) => (a['start-step'] ?? 0) < (a['end-step'] ?? a.steps ?? Number.POSITIVE_INFINITY) && (a['end-step'] ?? 0) <= (a.steps ?? Number.POSITIVE_INFINITY), { message: 'need 0 ≤ --start-step < --end-step ≤ --steps', path: ['start-step'] });

export type RunArgs = z.infer<typeof runSchema>;

/**
 * --device: 'cpu', or the Vulkan device it names opened and registered on the kernels seam (its
 * name, 'vk:N'). An id this machine lacks is DEVICE_NOT_FOUND listing the ones it has; a Vulkan
 * device that cannot open is VULKAN_UNAVAILABLE.
 */
function computeDevice(text: string): string {
  const id = parseDeviceId(text, { available: deviceIds(enumerateDevices({ includeDisk: false })), where: '--device' });
  if (id.kind === 'cpu') return 'cpu';
  if (id.kind !== 'vk') {
    throw new RunnerError('RUN_DEVICE_UNSUPPORTED', `--device ${formatDeviceId(id)}: ninodes run computes on the CPU or a Vulkan device (vk:N)`, {
      value: text,
      where: '--device',
      hint: "use --device vk:N for this GPU's Vulkan device (ninodes devices lists it), or cpu",
    });
  }
  return openVulkanDevice(id.index).name;
}

/**
 * --alloc / --budget: plan the checkpoint's groups on cpu and the mapped file, and stream the groups
 * placed on disk through the model's hooks (this runner computes on the CPU only).
 */
function streamingExecutor(opened: OpenedH3Model, staged: StagedSource, args: RunArgs, latent: { frames: number; height: number; width: number }): { executor: StreamingExecutor<void>; allocation: string; budgetBytes: number; warnings: readonly string[]; close: () => Promise<void> } {
  const layout = layoutOf(opened.source);
  const plan = (allocation: string) =>
    planPlacement({
      layout,
      allocation,
      devices: enumerateDevices({ includeDisk: false }).devices,
      compute: 'cpu',
      account: computeAccount(args.quant),
      // The staging reserve holds a streamed group converting (the executor counts its loads so).
      loadAccount: computeLoadAccount(args.quant),
      activationBytes: estimateActivationBytes(layout, latentTokens(latent)),
      prefetch: args.prefetch,
    });
  // --budget B is everything the run may hold: the planner's quotas are for weights and its
  // reserve (activations + staging for the streamed groups) comes on top, so the weights kept
  // resident get B less that reserve.
  const budget = args.budget === undefined ? undefined : parseBudget(args.budget);
  if (budget !== undefined) {
    // The least this run can hold: every group streamed, only what must stay (norms, islands) and
    // the reserve (activations, staging for the streamed groups) resident. Below it the budget would
    // be a wish, not a promise: refuse now, naming the number that works.
    const least = plan('cpu,0;disk,*');
    const need = computeDeviceBytes(least);
    if (budget < need) {
      const r = least.reserve;
      throw new RunnerError('BUDGET_TOO_SMALL', `--budget ${args.budget} (${formatBytes(budget)}) cannot hold this run: it needs at least ${formatBytes(need)} (activations ${formatBytes(r.activationBytes)}, staging ${formatBytes(r.stagingBytes)} for the streamed groups, ${formatBytes(need - r.activationBytes - r.stagingBytes)} of norms and islands kept resident)`, {
        value: args.budget,
        where: '--budget',
        hint: `use --budget ${formatAllocationBytes(Math.ceil(need / 2 ** 20) * 2 ** 20)} or more, or a smaller latent (--frames/--height/--width)`,
      });
    }
  }
  let placement = plan(args.alloc ?? `cpu,${formatAllocationBytes(budget as number)};disk,*`);
  if (budget !== undefined) {
    const r = placement.reserve;
    placement = plan(`cpu,${formatAllocationBytes(Math.max(0, budget - r.activationBytes - r.stagingBytes))};disk,*`);
  }
  const allocation = placement.allocation;
  const elsewhere = placement.groups.find((g) => g.device !== 'cpu' && g.device !== 'disk');
  if (elsewhere !== undefined) {
    throw new RunnerError('RUN_DEVICE_UNSUPPORTED', `the allocation places '${elsewhere.name}' on ${elsewhere.device}, but ninodes run computes on the CPU only`, {
      value: allocation,
      where: '--alloc',
      hint: 'use cpu and disk: --alloc "cpu,2gb;disk,*" (or --budget 2gb)',
    });
  }
  const all = opened.model.allLinears();
  const ops = all.filter(isPreparedLinearOp);
  if (ops.length !== all.length) throw new RunnerError('INTERNAL', 'the model\'s linear ops cannot be prepared ahead of use', { where: '--alloc' });
  // The executor counts it on the process's measured resident bytes over what it held before:
  // --budget B, or what the plan puts on the cpu (weights within its quota, plus the reserve).
  const budgetBytes = budget ?? computeDeviceBytes(placement);
  // Streamed weights to convert are read off the JS thread into pooled buffers and staged for the
  // ops; those run as stored are used from the mapping (no copy).
  const loader = opGroupLoader(layout, ops, opened.source, { staged });
  const executor = new StreamingExecutor({ layout, placement, loader, budgetBytes, prefetch: args.prefetch });
  return {
    executor,
    allocation: placement.allocation,
    budgetBytes,
    warnings: placement.warnings,
    close: async () => {
      await executor.close();
      await loader.close();
    },
  };
}

/** --budget needs a unit: `--budget 150` meaning 150 bytes is never what was meant. */
function parseBudget(text: string): number {
  if (/^\s*[0-9.]+\s*$/.test(text)) {
    throw new RunnerError('CLI_INVALID_OPTION', `--budget ${text} has no unit`, { value: text, where: '--budget', hint: `write the unit: --budget ${text.trim()}mb or ${text.trim()}gb (binary: 1gb = 2^30 bytes)` });
  }
  return parseByteSize(text);
}

export const run = defineCommand({
  name: 'run',
  summary: 'run the denoising loop on a DiT checkpoint and write latent, preview and report',
  usage:
    'ninodes run [--model <ckpt> | --preset h3-tiny|h3-small] [--latent <file>] [--frames N --height N --width N] [--steps N] [--shift S] [--seed N] [--quant auto|f32|bf16|int8_convrot|f8_e4m3fn] [--threads N] [--device cpu|vk:N] [--alloc "cpu,2gb;disk,*" | --budget 2gb] [--prefetch N] [--tp N [--tp-timeout ms] [--tp-pin]] [--out <dir>] [--force] [--json] [--context <file>] [--audio <file> | --audio-frames T] [--start-step N] [--end-step N] [--lora <file[:strength]>]...',
  options: {
    model: { type: 'string', value: '<ckpt>', description: 'checkpoint: .safetensors, .safetensors.index.json or .gguf (exclusive with --preset)' },
    preset: { type: 'string', value: '<name>', description: 'generate (once, cached in $NINODES_CACHE) a synthetic model: h3-tiny or h3-small (random weights, for speed and memory work); with neither --model nor --preset the trained h3-shapes model runs' },
    latent: { type: 'string', value: '<file>', description: "safetensors file with the starting noise as 'latent' [1, C, T, H, W] (else seeded noise)" },
    frames: { type: 'string', value: 'N', description: "latent frames [default: the checkpoint's ninodes.sampler metadata, else 3]" },
    height: { type: 'string', value: 'N', description: "latent height (even) [default: the checkpoint's ninodes.sampler metadata, else 32]" },
    width: { type: 'string', value: 'N', description: "latent width (even) [default: the checkpoint's ninodes.sampler metadata, else 32]" },
    steps: { type: 'string', value: 'N', description: "denoising steps, 1 to 1000 [default: the checkpoint's ninodes.sampler metadata, else 8]" },
    shift: { type: 'string', value: 'S', description: "flow-matching time shift, refused if it collapses the schedule [default: the checkpoint's ninodes.sampler metadata, else 12]" },
    seed: { type: 'string', value: 'N', description: 'seed of the starting noise, 0 to 2^32-1' },
    quant: { type: 'string', value: '<mode>', description: 'compute format of the linears: auto (each layer as stored in the file: int8, fp8 and GGUF layers stay quantized, float layers compute in f32), or f32, bf16, int8_convrot, f8_e4m3fn to convert every layer' },
    attention: { type: 'string', value: '<precision>', description: 'attention precision: f32 or bf16 (q, k, v rounded to bf16; needs AVX512_BF16) [default: bf16 with --quant bf16 or int8_convrot where the CPU has bf16 units, else f32]' },
    threads: { type: 'string', value: 'N', description: 'native threads (0: one per core)' },
    device: { type: 'string', value: '<id>', description: 'where the linears compute: cpu, or a Vulkan device vk:N (ninodes devices lists them; weights stay resident there, the other ops run on the CPU) [default: cpu]' },
    alloc: { type: 'string', value: '<alloc>', description: 'DisTorch-style placement, e.g. "cpu,2gb;disk,*": groups past the budget stream from the mapped file' },
    budget: { type: 'string', value: '<bytes>', description: 'everything the run may hold in RAM (measured): the weights kept resident get it less the reserve for activations and streaming, the rest streams from disk (exclusive with --alloc)' },
    prefetch: { type: 'string', value: 'N', description: 'streamed groups read ahead of the one computing' },
    tp: { type: 'string', value: 'N', description: 'split the model over N tensor-parallel rank processes on this machine (Gloo)' },
    'tp-timeout': { type: 'string', value: 'ms', description: 'deadline of the rendezvous and of each collective' },
    'tp-pin': { type: 'boolean', description: 'pin each rank to its own cores (taskset)' },
    out: { type: 'string', value: '<dir>', description: 'directory for latent.safetensors, preview.png and report.json, written as a whole' },
    force: { type: 'boolean', description: 'replace the outputs of an earlier run in --out' },
    json: { type: 'boolean', description: 'print the report as JSON on stdout' },
    context: { type: 'string', value: '<file>', description: "safetensors file with text-encoder states 'context' [1, L, text_dim] (or [1, L, hidden], which skip the refiner)" },
    audio: { type: 'string', value: '<file>', description: "safetensors file with the starting audio latent 'audio' [1, 32, 2, T] (audio-video checkpoints)" },
    'audio-frames': { type: 'string', value: 'T', description: 'seeded audio noise of T frames instead of --audio' },
    'start-step': { type: 'string', value: 'N', description: 'first step of the --steps schedule to run (KSamplerAdvanced start_at_step) [default: 0]' },
    'end-step': { type: 'string', value: 'N', description: 'step to stop at, returning the leftover noise (end_at_step) [default: --steps]' },
    lora: { type: 'string', multiple: true, value: '<file[:strength]>', description: 'apply a LoRA (kohya/ComfyUI or diffusers/peft keys) at this strength [default: 1], patched in fp32 before each weight is quantized or streamed' },
  },
  examples: [
    'ninodes run --preset h3-tiny --steps 8 --out runs/tiny',
    'ninodes run --model model.safetensors --quant int8_convrot --frames 3 --height 32 --width 32 --out runs/int8 --force',
    'ninodes run --model model.gguf --latent noise.safetensors --json',
    'ninodes run --preset h3-tiny --device vk:0 --out runs/vulkan',
    'ninodes run --model model.safetensors --lora style.safetensors:0.8 --lora detail.safetensors --budget 2gb',
  ],
  positionals: [0, 0],
  schema: runSchema,
  async run(args, context) {
    const rank = tpRankEnv(context.env);
    if (rank === undefined && args.tp > 1) return launch(args, context);
    if (rank !== undefined && args.tp !== 1 && args.tp !== rank.size) {
      throw new RunnerError('CLI_TP_MISMATCH', `--tp ${args.tp} but this process is rank ${rank.rank} of ${rank.size} (NINODES_TP_SIZE)`, {
        value: args.tp,
        where: '--tp',
        hint: 'a rank started by hand takes its world from the environment: drop --tp',
      });
    }
    const started = performance.now();
    // Parsed before any work: a malformed --lora fails now.
    const loraOptions = args.lora.map(parseLoraOption);
    const threads = setThreads(args.threads);
    // Rank 0 writes the run's files; the other ranks only report their latent hash to it. Taken
    // before any work: a busy or unusable --out fails now, not after the run.
    const writes = rank === undefined || rank.rank === 0;
    const stage = writes ? stageOutput(args.out, { force: args.force, ownFiles: RUN_FILES }) : undefined;
    const memory = samplePeakMemory();
    // A rank stopped by the launcher leaves no staging directory behind.
    const onSignal = (signal: NodeJS.Signals): void => {
      stage?.discard();
      process.exit(signal === 'SIGINT' ? 130 : 143);
    };
    if (rank !== undefined) {
      process.once('SIGINT', onSignal);
      process.once('SIGTERM', onSignal);
    }
    let opened: OpenedH3Model | undefined;
    let pressure: MemoryPressureMonitor | undefined;
    let streamed: ReturnType<typeof streamingExecutor> | undefined;
    let tp: TpRankModel | undefined;
    let loras: LoadedLoras | undefined;
    let linearDevice = 'cpu';
    try {
      // No model and no preset: the trained h3-shapes model shipped with @ninodes/models.
      const modelPath = args.model ?? (args.preset === undefined ? shapesModelPath() : await syntheticModel(args.preset, context));
      // fp32 islands (patch embedding, time embedder, output head) run as stored, as in ComfyUI.
      const streaming = args.alloc !== undefined || args.budget !== undefined;
      let staged: StagedSource | undefined;
      if (rank === undefined) {
        linearDevice = computeDevice(args.device);
        const device = linearDevice;
        opened = openH3Model(modelPath, {
          compute: args.quant,
          ...(device === 'cpu' ? {} : { wrapProvider: (p) => deviceLinearProvider(p, device) }),
          ...(args.attention === undefined ? {} : { attentionPrecision: args.attention }),
          ...(streaming ? { wrapSource: (s) => (staged = new StagedSource(s)) } : {}),
          ...(loraOptions.length === 0
            ? {}
            : {
                patcher: (source) => {
                  loras = loadLoras(source, loraOptions);
                  return loras.patcher;
                },
              }),
        });
        if (loras !== undefined) context.stderr.write(`${describeLoras(loras.applied).join('\n')}\n`);
      } else {
        tp = await openTpRank(modelPath, args.quant, rank, args.attention);
        opened = tp.opened;
      }
      const { model } = opened;
      const hints = samplerHints(opened.source);
      const sampler = {
        frames: args.frames ?? hints?.frames ?? SAMPLER_DEFAULTS.frames,
        height: args.height ?? hints?.height ?? SAMPLER_DEFAULTS.height,
        width: args.width ?? hints?.width ?? SAMPLER_DEFAULTS.width,
        steps: args.steps ?? hints?.steps ?? SAMPLER_DEFAULTS.steps,
        shift: args.shift ?? hints?.shift ?? SAMPLER_DEFAULTS.shift,
      };
      const unused = model.unusedKeys();
      if (unused.length > 0 && writes) context.stderr.write(`note: ${unused.length} tensors of the checkpoint are not used by the video path (e.g. ${terminalSafe(unused.slice(0, 3).join(', '))})\n`);
      const latentIn = args.latent === undefined ? undefined : readLatentFile(args.latent, model.latentChannels);
      const executor = !streaming || staged === undefined ? undefined : streamingExecutor(opened, staged, args, sampler);
      streamed = executor;
      if (executor !== undefined) {
        for (const w of executor.warnings) context.stderr.write(`warning: ${w}\n`);
        model.setHooks(executor.executor);
        // When the machine runs low, streamed groups are given back (read again when needed).
        pressure = new MemoryPressureMonitor({ onPressure: (bytes) => (executor.executor.shrink(bytes) > 0 ? mallocTrim() : undefined) });
        pressure.start();
      }
      // The schedule is checked before the first step (a collapsing --shift is refused up front).
      flowSigmas(sampler.steps, sampler.shift);
      if ((args['end-step'] ?? 0) > sampler.steps || (args['start-step'] ?? 0) >= (args['end-step'] ?? sampler.steps)) {
        throw new RunnerError('CLI_OUT_OF_RANGE', `need 0 ≤ --start-step < --end-step ≤ --steps (${sampler.steps})`, { value: { start: args['start-step'], end: args['end-step'] }, where: '--start-step', hint: `the schedule has ${sampler.steps} steps` });
      }
      const { audioChannels, textDim, hidden } = model.config;
      if ((args.audio !== undefined || args['audio-frames'] !== undefined) && audioChannels === undefined) {
        throw new RunnerError('INVALID_ARGUMENT', `${modelPath} has no audio stream (no audio_patch_proj / final_layer.audio_out)`, { value: args.audio ?? args['audio-frames'], where: '--audio', hint: 'run it without --audio / --audio-frames' });
      }
      const textWidths = textDim === undefined ? [hidden] : [textDim, hidden];
      // Sized from the headers before anything is read: a million text states fail here, not in the kernel's OOM killer.
      checkRunFits(model.config, latentIn?.shape ?? [1, model.latentChannels, sampler.frames, sampler.height, sampler.width], {
        ...(args.context === undefined ? {} : { context: contextFileShape(args.context, textWidths) }),
        ...(args.audio !== undefined ? { audioFrames: audioFileShape(args.audio, audioChannels as number)[3] } : args['audio-frames'] !== undefined ? { audioFrames: args['audio-frames'] } : {}),
      });
      const audioIn = args.audio === undefined ? undefined : readAudioFile(args.audio, audioChannels as number);
      const contextIn = args.context === undefined ? undefined : readContextFile(args.context, textWidths);
      if (tp !== undefined) {
        // What must be the same on every rank; the rank itself and where it writes are not.
        const settings = { ...sampler, seed: args.seed, quant: args.quant, attention: args.attention, startStep: args['start-step'], endStep: args['end-step'], audioFrames: args['audio-frames'], size: tp.comm.size };
        await checkRanksAgree(tp.comm, opened.source, settings, [latentIn, contextIn, audioIn]);
      }
      const loadSeconds = (performance.now() - started) / 1000;
      memory.sample();

      const steps = context.progress.task('steps', (args['end-step'] ?? sampler.steps) - (args['start-step'] ?? 0));
      const ran: { step: number; sigma: number; sigmaNext: number }[] = [];
      const result = await runSampler(model, {
        ...(latentIn === undefined ? {} : { latent: latentIn }),
        ...(audioIn === undefined ? {} : { audio: audioIn }),
        ...(args['audio-frames'] === undefined ? {} : { audioFrames: args['audio-frames'] }),
        ...(contextIn === undefined ? {} : { context: contextIn }),
        ...(args['start-step'] === undefined ? {} : { startStep: args['start-step'] }),
        ...(args['end-step'] === undefined ? {} : { endStep: args['end-step'] }),
        seed: args.seed,
        ...sampler,
        onStep: (s) => {
          ran.push({ step: s.step, sigma: s.sigma, sigmaNext: s.sigmaNext });
          memory.sample();
          steps.tick(`sigma ${s.sigma.toFixed(3)} ${s.seconds.toFixed(2)}s`);
        },
      });
      steps.done();
      // Resident weights are views of the mapped file: one rewritten in place during the run (even
      // with its size and mtime put back) fails it here rather than passing off mixed weights.
      verifyCheckpoint(opened.source);
      const latentSha256 = createHash('sha256').update(result.latent.bytes()).digest('hex');
      const tpReport = tp === undefined ? undefined : await gatherRanks(tp, latentSha256, memory.stop());
      if (stage === undefined) {
        context.stderr.write(`rank ${rank?.rank} of ${rank?.size}: latent sha256 ${latentSha256}\n`);
        return 0;
      }

      const latentPath = join(stage.dir, 'latent.safetensors');
      await writeSafetensors(latentPath, tensorSources({ latent: result.latent }), {
        metadata: { producer: 'ninodes run', quant: args.quant, seed: String(args.seed), steps: String(sampler.steps) },
      });
      if (result.audio !== undefined) {
        await writeSafetensors(join(stage.dir, 'audio.safetensors'), tensorSources({ audio: result.audio }), {
          metadata: { producer: 'ninodes run', quant: args.quant, seed: String(args.seed), steps: String(sampler.steps) },
        });
      }
      writeNewFile(join(stage.dir, 'preview.png'), latentPreviewPng(result.latent, hints === undefined ? 'stretch' : 'true'));
      const peak = memory.stop();
      const info = buildInfo();
      const report: RunReport = runReportSchema.parse({
        schema: 'ninodes.run-report/1',
        config: {
          model: modelPath,
          architecture: 'h3',
          quant: args.quant,
          device: linearDevice,
          frames: result.latent.shape[2],
          height: result.latent.shape[3],
          width: result.latent.shape[4],
          latentShape: [...result.latent.shape],
          steps: sampler.steps,
          startStep: args['start-step'] ?? 0,
          endStep: args['end-step'] ?? sampler.steps,
          shift: sampler.shift,
          seed: args.seed,
          threads,
        },
        timing: {
          stepSeconds: result.stepSeconds,
          steps: ran,
          meanStepSeconds: steadyStepMean(result.stepSeconds),
          loadSeconds,
          endToEndSeconds: (performance.now() - started) / 1000,
        },
        memory: peak,
        ...(executor === undefined ? {} : { offload: { allocation: executor.allocation, budgetBytes: executor.budgetBytes, steps: executor.executor.stats() } }),
        output: {
          latentSha256,
          files: RUN_FILES.filter((f) => f !== 'audio.safetensors' || result.audio !== undefined),
        },
        env: { node: process.version, simd: info.simd, onednn: info.onednn, int8Backend: int8Backend(), computePrecision: floatPrecision(args.quant), attentionPrecision: model.attentionPrecision, cpu: cpus()[0]?.model ?? 'unknown' },
        ...(tpReport === undefined ? {} : { tp: tpReport }),
        ...(loras === undefined ? {} : { lora: loraReport(loras.applied) }),
      });
      writeNewFile(join(stage.dir, 'report.json'), `${JSON.stringify(report, null, 2)}\n`);
      await executor?.close();
      const files = stage.commit();
      if (context.json) {
        context.stdout.write(`${JSON.stringify({ ...report, files })}\n`);
      } else {
        const mib = (b: number) => `${(b / 2 ** 20).toFixed(1)} MiB`;
        context.stdout.write(
          [
            `model      ${terminalSafe(modelPath)} (--quant ${args.quant}): linears ${describeLinearFormats(model.allLinears(), detectFormats(opened.source))}`,
            `latent     [${result.latent.shape.join(', ')}], ${sampler.steps} steps, shift ${sampler.shift}, seed ${args.seed}`,
            `steps      ${result.stepSeconds.map((s) => s.toFixed(2)).join(' ')} s (steady mean ${report.timing.meanStepSeconds.toFixed(3)} s)`,
            `total      ${report.timing.endToEndSeconds.toFixed(2)} s (load ${loadSeconds.toFixed(2)} s)`,
            `peak mem   ${mib(peak.peakAnonBytes)} anonymous, ${mib(peak.peakFileBytes)} file-backed`,
            ...(executor === undefined ? [] : [budgetLine(executor.budgetBytes, executor.executor.stats())]),
            `sha256     ${report.output.latentSha256}`,
            ...(tpReport === undefined
              ? []
              : [
                  `tp         ${tpReport.size} ranks, latents ${tpReport.ranks.every((r) => r.latentSha256 === latentSha256) ? 'identical' : 'DIFFER'}; weights per rank ${mib(tpReport.weightBytesPerRank)} of ${mib(tpReport.singleRankWeightBytes)}; rank 0 spent ${tpReport.ranks[0]?.commSeconds.toFixed(2)} s in ${tpReport.ranks[0]?.collectives} collectives`,
                ]),
            ...files.map((f) => `wrote      ${terminalSafe(f)}`),
            '',
          ].join('\n'),
        );
      }
      return 0;
    } catch (error) {
      memory.stop();
      throw error;
    } finally {
      pressure?.stop();
      // After a failure too: reads in flight settle and the loader's file handles close (the error
      // that got here is the one reported).
      if (streamed !== undefined) await streamed.close().catch(() => undefined);
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
      // After a commit this only releases the lock; otherwise it removes the staging directory.
      stage?.discard();
      if (tp !== undefined) await tp.close();
      else opened?.close();
    }
  },
});


/**
 * What the budget covered: the process's resident memory above its baseline when the model was
 * opened (Node, the addon, the model's skeleton — not counted), measured at each streamed load.
 */
function budgetLine(budgetBytes: number, steps: readonly { peakMeasuredBytes: number; baselineBytes: number; overBudgetLoads: number }[]): string {
  const peak = Math.max(0, ...steps.map((s) => s.peakMeasuredBytes));
  const over = steps.reduce((a, s) => a + s.overBudgetLoads, 0);
  const baseline = steps[0]?.baselineBytes ?? 0;
  return `budget     ${formatBytes(budgetBytes)} above a ${formatBytes(baseline)} baseline (Node, the addon, the model's skeleton: not counted); held at most ${formatBytes(peak)} of it${over === 0 ? '' : `; ${over} loads went over it (the machine's other memory use; see report.json offload.steps)`}`;
}

/** The synthetic checkpoint of `preset`, generated into the cache on first use. */
async function syntheticModel(preset: 'h3-tiny' | 'h3-small', context: CommandContext): Promise<string> {
  const gen = context.progress.task(`generating ${preset}`, 10);
  let last = 0;
  const cached = await ensureSyntheticCheckpoint({
    dir: defaultCacheDir(context.env),
    onWait: (owner) => context.stderr.write(`waiting for process ${owner.pid}, which is generating ${preset}\n`),
    preset,
    onProgress: (done, total) => {
      const pct = total > 0 ? Math.floor((done / total) * 100) : 100;
      // Ten ticks, not a hundred: plain logs get a line per 10 %.
      while (last + 10 <= pct) {
        last += 10;
        gen.tick();
      }
    },
  });
  gen.done(cached.reused ? 'cached (hash verified)' : 'written');
  return cached.path;
}

/** `ninodes run --tp N`: the checkpoint is made once here, then N ranks run the same command on it. */
async function launch(args: RunArgs, context: CommandContext): Promise<number> {
  const modelPath = args.model ?? (args.preset === undefined ? shapesModelPath() : await syntheticModel(args.preset, context));
  // Whether the model splits over N ranks is known from the headers: fail once, here, naming the layer.
  const source = openCheckpoint(modelPath);
  try {
    const layout = layoutOf(source);
    try {
      shardPlan(layout, args.tp, { compute: args.quant, sequence: true });
    } catch (error) {
      if (!(error instanceof NinodesError)) throw error;
      // Say which sizes would work instead of leaving the user to search.
      const works = Array.from({ length: 16 }, (_, i) => i + 1).filter((n) => {
        try {
          shardPlan(layout, n, { compute: args.quant, sequence: true });
          return true;
        } catch {
          return false;
        }
      });
      throw new RunnerError(error.code as RunnerThrownCode, error.message, { value: args.tp, where: '--tp', hint: `sizes up to 16 that split this model${args.quant === 'auto' ? '' : ` with --quant ${args.quant}`}: ${works.join(', ')}`, cause: error });
    }
  } finally {
    source.close();
  }
  if (args.tp > cpus().length) context.stderr.write(`warning: --tp ${args.tp} on ${cpus().length} cores: ranks share cores, so this runs slower than fewer ranks would\n`);
  const argv = ['run', '--model', modelPath];
  for (const key of ['latent', 'context', 'audio', 'audio-frames', 'start-step', 'end-step'] as const) if (args[key] !== undefined) argv.push(`--${key}`, String(args[key]));
  for (const key of ['frames', 'height', 'width', 'steps', 'shift', 'seed', 'quant', 'attention', 'out'] as const) if (args[key] !== undefined) argv.push(`--${key}`, String(args[key]));
  if (args.json) argv.push('--json');
  if (args.force) argv.push('--force');
  // Threads split evenly: --threads T over N ranks, or every core when T is 0.
  const total = args.threads > 0 ? args.threads : cpus().length;
  return launchTensorParallel({ size: args.tp, argv, threadsPerRank: Math.max(1, Math.floor(total / args.tp)), timeoutMs: args['tp-timeout'], pin: args['tp-pin'], context });
}

/** Every rank's latent hash and peak memory, gathered on every rank (so all agree on the report). */
async function gatherRanks(tp: TpRankModel, latentSha256: string, peak: { peakAnonBytes: number; peakFileBytes: number }): Promise<NonNullable<RunReport['tp']>> {
  const W = 12;
  const mine = new Int32Array(W);
  const hash = Buffer.from(latentSha256, 'hex');
  for (let i = 0; i < 8; i++) mine[i] = hash.readInt32LE(i * 4);
  // KiB fit an int32 up to 2 TiB, milliseconds up to 24 days.
  mine[8] = Math.ceil(peak.peakAnonBytes / 1024);
  mine[9] = Math.ceil(peak.peakFileBytes / 1024);
  const comm = tp.comm.stats();
  mine[10] = Math.round(comm.seconds * 1000);
  mine[11] = comm.collectives;
  const all = await tp.comm.allgather(mine);
  const ranks = Array.from({ length: tp.comm.size }, (_, r) => {
    const words = all.subarray(r * W, (r + 1) * W);
    const bytes = Buffer.alloc(32);
    for (let i = 0; i < 8; i++) bytes.writeInt32LE(words[i] as number, i * 4);
    return {
      rank: r,
      latentSha256: bytes.toString('hex'),
      peakAnonBytes: (words[8] as number) * 1024,
      peakFileBytes: (words[9] as number) * 1024,
      commSeconds: (words[10] as number) / 1000,
      collectives: words[11] as number,
    };
  });
  const planned = tp.plan.ranks[tp.comm.rank];
  return { size: tp.comm.size, ranks, weightBytesPerRank: planned?.totalBytes ?? 0, singleRankWeightBytes: tp.plan.singleRankBytes };
}
