import { formatBytes } from '@ninodes/device';
import { terminalSafe } from '@ninodes/kernels';
import { detectArchitecture } from '@ninodes/models';
import { QUANTIZE_TARGETS, type QuantizeTarget, openCheckpoint, quantize as quantizeCheckpoint } from '@ninodes/quant';
import { z } from 'zod';
import { defineCommand } from '../command.js';
import { checkNewOutputFile } from '../new-output-file.js';
import { checkpointFiles } from '@ninodes/memory';
import { RunnerError } from '../error-codes.js';

/** The container each target is written in: GGUF block formats into .gguf, the rest into safetensors. */
const containerOf = (format: QuantizeTarget): '.gguf' | '.safetensors' => (format === 'q8_0' || format === 'q4_k' ? '.gguf' : '.safetensors');

export const quantize = defineCommand({
  name: 'quantize',
  summary: 'convert a checkpoint to int8 convrot or fp8 (safetensors, as ComfyUI stores them) or GGUF Q8_0 / Q4_K',
  usage: `ninodes quantize <in> <out> --format ${QUANTIZE_TARGETS.join('|')} [--skip <layer>]... [--force] [--json]`,
  arguments: [
    { name: 'in', description: 'checkpoint to convert (.safetensors, .safetensors.index.json or .gguf)' },
    { name: 'out', description: 'the new .safetensors file (.gguf for q8_0 and q4_k; the extension must match the format), written through a temporary and renamed only on success' },
  ],
  options: {
    format: { type: 'string', value: '<format>', description: `required: ${QUANTIZE_TARGETS.join(', ')}` },
    skip: { type: 'string', multiple: true, value: '<layer>', description: 'keep this layer (or name prefix) as it is' },
    force: { type: 'boolean', description: 'replace <out> if it exists' },
    json: { type: 'boolean', description: 'print the conversion report as JSON on stdout' },
  },
  positionals: [2, 2],
  examples: [
    'ninodes quantize model.safetensors model-int8.safetensors --format int8_convrot',
    'ninodes quantize model.safetensors model-fp8.safetensors --format f8_e4m3fn --skip final_layer --force',
    'ninodes quantize model.safetensors model-Q4_K.gguf --format q4_k',
  ],
  schema: z.object({
    format: z.enum(QUANTIZE_TARGETS as [QuantizeTarget, ...QuantizeTarget[]], { message: `required: ${QUANTIZE_TARGETS.join(', ')}` }),
    skip: z.array(z.string()).default([]),
    force: z.boolean().default(false),
    json: z.boolean().default(false),
    positionals: z.tuple([z.string().min(1), z.string().min(1)]),
  }),
  async run(args, context) {
    const [input, output] = args.positionals;
    const source = openCheckpoint(input);
    try {
      checkNewOutputFile(output, checkpointFiles(source), { force: args.force });
      // The extension names the container: a .gguf holding safetensors would be refused by every reader.
      const container = containerOf(args.format);
      if (!output.toLowerCase().endsWith(container)) {
        const stem = output.replace(/\.(gguf|safetensors)$/i, '');
        throw new RunnerError('OUTPUT_CONTAINER_MISMATCH', `--format ${args.format} writes a ${container === '.gguf' ? 'GGUF' : 'safetensors'} file, but <out> ${output} does not end in ${container}`, {
          value: output,
          where: '<out>',
          hint: `name it ${stem}${container}${container === '.gguf' ? '' : ', or pick a GGUF format (q8_0, q4_k) for a .gguf file'}`,
        });
      }
      const task = context.progress.task('quantizing', source.entries().length);
      const format = args.format;
      // GGUF files name their architecture (general.architecture), as ComfyUI-GGUF's loader expects.
      const detected = detectArchitecture(source.entries()).family;
      const report = await quantizeCheckpoint(source, output, {
        format,
        skip: args.skip,
        ...(detected === 'unknown' ? {} : { architecture: detected }),
        onProgress: (e) => task.tick(e.kind === 'quantized' ? e.name : undefined),
      });
      task.done();
      if (context.json) {
        context.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
      } else {
        const rotatedOff = report.layers.filter((l) => (l as { note?: string }).note);
        context.stdout.write(
          [
            `wrote      ${terminalSafe(report.path)} (${args.format})`,
            `layers     ${report.layers.length} quantized, ${report.kept.length} weights not (norms, islands, small or misfit layers: --json says why)`,
            `bytes      ${formatBytes(report.sourceBytes)} -> ${formatBytes(report.bytesWritten)}`,
            `speed      ${(report.sourceBytes / 1e9 / report.seconds).toFixed(2)} GB/s of source, peak held ${formatBytes(report.peakHeldBytes)}`,
            ...rotatedOff.map((l) => `note       ${l.name}: ${(l as { note?: string }).note}`),
            '',
          ].join('\n'),
        );
      }
      return 0;
    } finally {
      source.close();
    }
  },
});
