import { formatBytes } from '@ninodes/device';
import { openCheckpoint, quantize as quantizeCheckpoint } from '@ninodes/quant';
import { z } from 'zod';
import { defineCommand } from '../command.js';
import { checkNewOutputFile } from '../new-output-file.js';

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
    checkNewOutputFile(output, [input], { force: args.force, sameFileCode: 'QUANTIZE_SAME_FILE' });
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
