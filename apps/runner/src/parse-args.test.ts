import { isNinodesError } from '@ninodes/kernels';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineCommand } from './command.js';
import { parseCommandArgs } from './parse-args.js';

const command = defineCommand({
  name: 'run',
  summary: 'test command',
  usage: 'ninodes run [--steps N] [--json]',
  options: { steps: { type: 'string' }, json: { type: 'boolean' } },
  positionals: [0, 1],
  schema: z.object({
    steps: z.coerce.number().int().positive().default(8),
    json: z.boolean().default(false),
    positionals: z.array(z.string()),
  }),
  async run() {
    return 0;
  },
});

function error(argv: string[]) {
  try {
    parseCommandArgs(command, argv);
  } catch (e) {
    if (isNinodesError(e)) return e;
    throw e;
  }
  throw new Error('expected an error');
}

describe('parseCommandArgs', () => {
  it('types valid flags and applies defaults', () => {
    expect(parseCommandArgs(command, ['--steps', '4'])).toEqual({ steps: 4, json: false, positionals: [] });
    expect(parseCommandArgs(command, ['ckpt', '--json'])).toEqual({ steps: 8, json: true, positionals: ['ckpt'] });
  });

  it('names an unknown flag and lists the valid ones', () => {
    const e = error(['--stpes', '4']);
    expect(e.code).toBe('CLI_UNKNOWN_OPTION');
    expect(e.value).toBe('--stpes');
    expect(e.hint).toContain('--steps');
  });

  it('names the flag and value that fail validation', () => {
    const e = error(['--steps=-3']);
    expect(e.code).toBe('CLI_INVALID_OPTION');
    expect(e.message).toContain('--steps');
    expect(e.value).toBe('-3');
  });

  it('rejects extra positional arguments', () => {
    const e = error(['a', 'b']);
    expect(e.code).toBe('CLI_ARGUMENT_COUNT');
    expect(e.value).toEqual(['a', 'b']);
  });
});
