import { devicesCommand } from '@ninodes/device';
import { z } from 'zod';
import { defineCommand } from '../command.js';

export const devices = defineCommand({
  name: 'devices',
  summary: 'list compute devices, their memory and bandwidth',
  usage: 'ninodes devices [--json] [--verbose]',
  options: { json: { type: 'boolean' }, verbose: { type: 'boolean' } },
  positionals: [0, 0],
  schema: z.object({ json: z.boolean().default(false), verbose: z.boolean().default(false), positionals: z.array(z.string()) }),
  async run(args, context) {
    const out = devicesCommand({ json: args.json, verbose: args.verbose });
    context.stdout.write(out.stdout.endsWith('\n') ? out.stdout : `${out.stdout}\n`);
    for (const line of out.stderr) context.stderr.write(`${line}\n`);
    return 0;
  },
});
