import { defaultCacheDir, devicesCommand } from '@ninodes/device';
import { z } from 'zod';
import { defineCommand } from '../command.js';

export const devices = defineCommand({
  name: 'devices',
  summary: 'list compute devices, their memory and bandwidth',
  usage: 'ninodes devices [--json] [--verbose]',
  options: {
    json: { type: 'boolean', description: 'print the devices as JSON on stdout' },
    verbose: { type: 'boolean', description: 'also show probe notes (what was looked for and not found)' },
  },
  positionals: [0, 0],
  examples: ['ninodes devices', 'ninodes devices --json'],
  schema: z.object({ json: z.boolean().default(false), verbose: z.boolean().default(false), positionals: z.array(z.string()) }),
  async run(args, context) {
    // NINODES_CACHE moves the measured bandwidth (bandwidth.json) with the rest of the cache.
    const out = devicesCommand({ json: args.json, verbose: args.verbose, bandwidth: { cacheDir: defaultCacheDir(context.env) } });
    context.stdout.write(out.stdout.endsWith('\n') ? out.stdout : `${out.stdout}\n`);
    for (const line of out.stderr) context.stderr.write(`${line}\n`);
    return 0;
  },
});
