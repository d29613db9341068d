import { type Stats, lstatSync } from 'node:fs';
import { resolve } from 'node:path';
import { fsError } from '@ninodes/kernels';
import { RunnerError } from '../error-codes.js';
import { formatBytes } from '@ninodes/device';
import { openCheckpoint, quantize as quantizeCheckpoint } from '@ninodes/quant';
import { z } from 'zod';
import { defineCommand } from '../command.js';

export const quantize = defineCommand({
  name: 'quantize',
  summary: 'convert a checkpoint to int8 convrot or fp8, in the layout ComfyUI loads',
  usage: 'ninodes quantize <in> <out> --format int8_convrot|int8_rowwise|fp8_e4m3fn|fp8_e5m2 [--skip <layer>]... [--force] [--json]',
  arguments: [
    { name: 'in', description: 'checkpoint to convert (.safetensors, .safetensors.index.json or .gguf)' },
    { name: 'out', description: 'the new .safetensors file, written through a temporary and renamed only on success' },
  ],
  options: {
    format: { type: 'string', value: '<format>', description: 'required: int8_convrot, int8_rowwise, fp8_e4m3fn or fp8_e5m2' },
    skip: { type: 'string', multiple: true, value: '<layer>', description: 'keep this layer (or name prefix) as it is' },
    force: { type: 'boolean', description: 'replace <out> if it exists' },
    json: { type: 'boolean', description: 'print the conversion report as JSON on stdout' },
  },
  positionals: [2, 2],
  examples: [
    'ninodes quantize model.safetensors model-int8.safetensors --format int8_convrot',
    'ninodes quantize model.safetensors model-fp8.safetensors --format fp8_e4m3fn --skip final_layer --force',
  ],
  schema: z.object({
    format: z.enum(['int8_convrot', 'int8_rowwise', 'fp8_e4m3fn', 'fp8_e5m2'], { message: 'required: int8_convrot, int8_rowwise, fp8_e4m3fn or fp8_e5m2' }),
    skip: z.array(z.string()).default([]),
    force: z.boolean().default(false),
    json: z.boolean().default(false),
    positionals: z.tuple([z.string().min(1), z.string().min(1)]),
  }),
  async run(args, context) {
    const [input, output] = args.positionals;
    if (resolve(input) === resolve(output)) {
      throw new RunnerError('QUANTIZE_SAME_FILE', 'input and output are the same file', { value: output, hint: 'write the quantized checkpoint to a new path' });
    }
    let existing: Stats | undefined;
    try {
      existing = lstatSync(output);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw fsError(error, output, 'cannot use', '<out>');
    }
    if (existing?.isDirectory()) {
      throw new RunnerError('PATH_IS_DIRECTORY', `${output} is a directory`, { value: output, where: '<out>', hint: 'name the new .safetensors file, e.g. <dir>/model-int8.safetensors' });
    }
    if (existing !== undefined && !args.force) {
      throw new RunnerError('OUTPUT_EXISTS', `${output} exists`, { value: output, where: '<out>', hint: 'pass --force to replace it (it is replaced atomically, only on success)' });
    }
    const source = openCheckpoint(input);
    try {
      const task = context.progress.task('quantizing', source.entries().length);
      const format = args.format === 'fp8_e4m3fn' ? 'f8_e4m3fn' : args.format === 'fp8_e5m2' ? 'f8_e5m2' : args.format;
      const report = await quantizeCheckpoint(source, output, {
        format,
        skip: args.skip,
        onProgress: (e) => task.tick(e.kind === 'quantized' ? e.name : undefined),
      });
      task.done();
      if (context.json) {
        context.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
      } else {
        const rotatedOff = report.layers.filter((l) => (l as { note?: string }).note);
        context.stdout.write(
          [
            `wrote      ${report.path} (${args.format})`,
            `layers     ${report.layers.length} quantized, ${report.kept.length} tensors kept as they were`,
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
