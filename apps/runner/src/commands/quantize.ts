import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { NinodesError } from '@ninodes/kernels';
import { formatBytes as formatByteSize } from '@ninodes/device';
import { openCheckpoint, quantize as quantizeCheckpoint } from '@ninodes/quant';
import { z } from 'zod';
import { defineCommand } from '../command.js';

export const quantize = defineCommand({
  name: 'quantize',
  summary: 'convert a checkpoint to int8 convrot or fp8, in the layout ComfyUI loads',
  usage: 'ninodes quantize <in> <out> --format int8_convrot|int8_rowwise|fp8_e4m3fn|fp8_e5m2 [--skip <layer>]... [--force] [--json]',
  options: { format: { type: 'string' }, skip: { type: 'string', multiple: true }, force: { type: 'boolean' }, json: { type: 'boolean' } },
  positionals: [2, 2],
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
      throw new NinodesError('QUANTIZE_SAME_FILE', 'input and output are the same file', { value: output, hint: 'write the quantized checkpoint to a new path' });
    }
    if (existsSync(output) && !args.force) {
      throw new NinodesError('OUTPUT_EXISTS', `${output} exists`, { value: output, where: '<out>', hint: 'pass --force to replace it (it is replaced atomically, only on success)' });
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
            `bytes      ${formatByteSize(report.sourceBytes)} -> ${formatByteSize(report.bytesWritten)}`,
            `speed      ${(report.sourceBytes / 1e9 / report.seconds).toFixed(2)} GB/s of source, peak held ${formatByteSize(report.peakHeldBytes)}`,
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
