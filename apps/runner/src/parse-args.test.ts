import { isNinodesError } from '@ninodes/kernels';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineCommand } from './command.js';
import { parseCommandArgs } from './parse-args.js';
import { closest } from '@ninodes/kernels';

const command = defineCommand({
  name: 'run',
  summary: 'test command',
  usage: 'ninodes run [--steps N] [--json]',
  options: {
    steps: { type: 'string', value: 'N', description: 'denoising steps' },
    skip: { type: 'string', multiple: true, description: 'layers to skip' },
    json: { type: 'boolean', description: 'JSON output' },
  },
  positionals: [0, 1],
  examples: ['ninodes run --steps 4'],
  schema: z.object({
    steps: z.coerce.number().int().positive().max(1000).default(8),
    skip: z.array(z.string()).default([]),
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
    expect(parseCommandArgs(command, ['--steps', '4'])).toEqual({ steps: 4, skip: [], json: false, positionals: [] });
    expect(parseCommandArgs(command, ['ckpt', '--json', '--skip', 'a', '--skip=b'])).toEqual({ steps: 8, skip: ['a', 'b'], json: true, positionals: ['ckpt'] });
    expect(parseCommandArgs(command, ['--', '--json'])).toEqual({ steps: 8, skip: [], json: false, positionals: ['--json'] });
  });

  it('names an unknown flag, suggests the near one, lists the valid ones', () => {
    const e = error(['--stesp', '4']);
    expect(e.code).toBe('CLI_UNKNOWN_OPTION');
    expect(e.value).toBe('--stesp');
    expect(e.message).toContain('did you mean --steps?');
    expect(e.hint).toContain('--json');
    expect(error(['--frobnicate']).message).not.toContain('did you mean');
  });

  it('a negative --steps is a range error about the value, in our words', () => {
    for (const argv of [['--steps', '-1'], ['--steps=-1']]) {
      const e = error(argv);
      expect(e.code).toBe('CLI_OUT_OF_RANGE');
      expect(e.message).toBe("--steps must be greater than 0, got '-1'");
      expect(e.value).toBe('-1');
    }
    expect(error(['--steps', '5000']).message).toBe("--steps must be at most 1000, got '5000'");
    expect(error(['--steps', 'many']).message).toBe("--steps must be a number, got 'many'");
    expect(error(['--steps', '1.5']).message).toBe("--steps must be a whole number, got '1.5'");
  });

  it('a missing value, a value on a switch and a repeated flag are usage errors', () => {
    expect(error(['--steps']).code).toBe('CLI_MISSING_VALUE');
    expect(error(['--json=yes']).code).toBe('CLI_INVALID_OPTION');
    expect(error(['--steps', '1', '--steps', '2']).code).toBe('CLI_REPEATED_OPTION');
  });

  it('rejects extra positional arguments', () => {
    const e = error(['a', 'b']);
    expect(e.code).toBe('CLI_ARGUMENT_COUNT');
    expect(e.value).toEqual(['a', 'b']);
  });
});

describe('closest', () => {
  it('finds swaps, typos and prefixes, and nothing far away', () => {
    expect(closest('stesp', ['steps', 'seed', 'shift'])).toBe('steps');
    expect(closest('rnu', ['run', 'inspect'])).toBe('run');
    expect(closest('insp', ['run', 'inspect'])).toBe('inspect');
    expect(closest('qunatize', ['quantize', 'run'])).toBe('quantize');
    expect(closest('xyz', ['run', 'demo'])).toBeUndefined();
  });
});
