// Turns argv into a command's typed arguments, or a NinodesError that names the flag, the value
// and what would be accepted. Nothing from the command line reaches a command unvalidated.
import { parseArgs } from 'node:util';
import { NinodesError } from '@ninodes/kernels';
import type { Command } from './command.js';

function flagList(command: Command): string {
  return Object.keys(command.options).map((name) => `--${name}`).join(', ');
}

export function parseCommandArgs<C extends Command>(command: C, argv: readonly string[]): ReturnType<C['schema']['parse']> {
  let parsed: { values: Record<string, unknown>; positionals: string[] };
  try {
    parsed = parseArgs({ args: [...argv], options: command.options, allowPositionals: true, strict: true });
  } catch (error) {
    const e = error as { code?: string; message: string };
    const flag = /'([^']+)'/.exec(e.message)?.[1];
    throw new NinodesError(e.code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION' ? 'CLI_UNKNOWN_OPTION' : 'CLI_INVALID_OPTION', e.message, {
      value: flag,
      where: `ninodes ${command.name}`,
      hint: `usage: ${command.usage}${flagList(command) ? `; options: ${flagList(command)}` : ''}`,
    });
  }
  const [min, max] = command.positionals;
  if (parsed.positionals.length < min || parsed.positionals.length > max) {
    throw new NinodesError(
      'CLI_ARGUMENT_COUNT',
      `ninodes ${command.name} takes ${min === max ? min : `${min} to ${max}`} argument(s), got ${parsed.positionals.length}`,
      { value: parsed.positionals, where: `ninodes ${command.name}`, hint: `usage: ${command.usage}` },
    );
  }
  const result = command.schema.safeParse({ ...parsed.values, positionals: parsed.positionals });
  if (!result.success) {
    const issue = result.error.issues[0]!;
    const key = String(issue.path[0] ?? '');
    const value = key === 'positionals' ? parsed.positionals[Number(issue.path[1] ?? 0)] : parsed.values[key];
    throw new NinodesError('CLI_INVALID_OPTION', `${key === 'positionals' ? 'argument' : `--${key}`}: ${issue.message}`, {
      value,
      where: `ninodes ${command.name}`,
      hint: `usage: ${command.usage}`,
    });
  }
  return result.data as ReturnType<C['schema']['parse']>;
}
