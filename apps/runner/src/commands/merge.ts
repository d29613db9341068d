import { formatBytes } from '@ninodes/device';
import { terminalSafe } from '@ninodes/kernels';
import { MERGE_FORMATS, type MergeFormat, mergeLora, openCheckpoint } from '@ninodes/quant';
import { z } from 'zod';
import { defineCommand } from '../command.js';
import { describeLoras, loadLoras, loraReport, parseLoraOption } from '../lora-option.js';
import { checkNewOutputFile } from '../new-output-file.js';
import { checkpointFiles } from '@ninodes/memory';

export const merge = defineCommand({
  name: 'merge',
  summary: 'merge LoRAs into a checkpoint, layer by layer, optionally re-quantized',
  usage: `ninodes merge <ckpt> --lora <file[:strength]>... --out <file> [--format ${MERGE_FORMATS.join('|')}] [--force] [--json]`,
  arguments: [{ name: 'ckpt', description: 'checkpoint to patch (.safetensors, .safetensors.index.json or .gguf)' }],
  options: {
    lora: { type: 'string', multiple: true, value: '<file[:strength]>', description: 'required: a LoRA (kohya/ComfyUI or diffusers/peft keys) and its strength [default: 1]' },
    out: { type: 'string', value: '<file>', description: 'required: the new .safetensors file, written through a temporary and renamed only on success' },
    format: {
      type: 'string',
      value: '<format>',
      description: 'keep (each layer as stored; patched quantized layers requantized with new scales), f32 or bf16 (every linear weight), or a quantize target',
    },
    force: { type: 'boolean', description: 'replace <out> if it exists' },
    json: { type: 'boolean', description: 'print the merge report as JSON on stdout' },
  },
  positionals: [1, 1],
  examples: [
    'ninodes merge model.safetensors --lora style.safetensors:0.8 --out model-style.safetensors',
    'ninodes merge model.safetensors --lora a.safetensors --lora b.safetensors:0.5 --out model-ab-int8.safetensors --format int8_convrot',
  ],
  schema: z.object({
    lora: z.array(z.string()).min(1, { message: 'required: at least one --lora <file[:strength]>' }),
    out: z.string({ message: 'required: --out <file>' }).min(1),
    format: z.enum(MERGE_FORMATS as [MergeFormat, ...MergeFormat[]], { message: `one of ${MERGE_FORMATS.join(', ')}` }).default('keep'),
    force: z.boolean().default(false),
    json: z.boolean().default(false),
    positionals: z.tuple([z.string().min(1)]),
  }),
  async run(args, context) {
    const [input] = args.positionals;
    const loraOptions = args.lora.map(parseLoraOption);
    const source = openCheckpoint(input);
    try {
      checkNewOutputFile(args.out, [...checkpointFiles(source), ...loraOptions.map((l) => l.path)], { force: args.force });
      const { patcher, applied } = loadLoras(source, loraOptions);
      context.stderr.write(`${describeLoras(applied).join('\n')}\n`);
      const task = context.progress.task('merging', source.entries().length);
      const report = await mergeLora(source, args.out, {
        patcher,
        format: args.format,
        metadata: { 'ninodes.merged_loras': JSON.stringify(loraOptions) },
        onProgress: () => task.tick(),
      });
      task.done();
      if (context.json) {
        context.stdout.write(`${JSON.stringify({ ...report, loras: loraReport(applied) }, null, 2)}\n`);
      } else {
        context.stdout.write(
          [
            `wrote      ${terminalSafe(report.path)} (${args.format})`,
            `patched    ${report.patched.length} layers`,
            `bytes      ${formatBytes(report.sourceBytes)} -> ${formatBytes(report.bytesWritten)}`,
            `held       at most ${formatBytes(report.peakHeldBytes)} of computed tensors at once (${report.seconds.toFixed(2)} s)`,
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
