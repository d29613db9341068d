// Turns argv into a command's typed arguments, or a NinodesError in ninodes' own words that names
// the flag, the value and what would be accepted ("did you mean --steps?"). Nothing from the
// command line reaches a command unvalidated.
import { NinodesError, closest } from '@ninodes/kernels';
import { RunnerError, type RunnerThrownCode } from './error-codes.js';
import type { z } from 'zod';
import type { Command } from './command.js';
import { suggestFormatName } from '@ninodes/quant';

function usageError(command: Command, code: RunnerThrownCode, message: string, value: unknown, hint?: string): NinodesError {
  return new RunnerError(code, message, { value, where: `ninodes ${command.name}`, hint: hint ?? `see 'ninodes help ${command.name}'` });
}

/** `--name value`, `--name=value`, `-s value`, `--flag`; everything after `--` is positional. */
function tokenize(command: Command, argv: readonly string[]): { values: Record<string, unknown>; positionals: string[] } {
  const values: Record<string, unknown> = {};
  const positionals: string[] = [];
  const byShort = new Map(Object.entries(command.options).flatMap(([name, o]) => (o.short ? [[o.short, name] as const] : [])));
  const names = Object.keys(command.options);
  for (let i = 0; i < argv.length; i++) {
    const token = argv[i]!;
    if (token === '--') {
      positionals.push(...argv.slice(i + 1));
      break;
    }
    if (!token.startsWith('-') || token === '-') {
      positionals.push(token);
      continue;
    }
    const eq = token.indexOf('=');
    const flag = eq === -1 ? token : token.slice(0, eq);
    const inline = eq === -1 ? undefined : token.slice(eq + 1);
    const name = flag.startsWith('--') ? flag.slice(2) : byShort.get(flag.slice(1));
    const spec = name === undefined ? undefined : command.options[name];
    if (name === undefined || spec === undefined) {
      const guess = closest(flag.replace(/^-+/, ''), names);
      throw usageError(
        command,
        'CLI_UNKNOWN_OPTION',
        `ninodes ${command.name} has no option ${flag}${guess ? ` (did you mean --${guess}?)` : ''}`,
        flag,
        `options: ${names.map((n) => `--${n}`).join(', ') || 'none'}; see 'ninodes help ${command.name}'`,
      );
    }
    let value: unknown;
    if (spec.type === 'boolean') {
      if (inline !== undefined) throw usageError(command, 'CLI_INVALID_OPTION', `--${name} is a switch and takes no value (got '${inline}')`, token);
      value = true;
    } else if (inline !== undefined) {
      value = inline;
    } else {
      // The next word is the value even when it starts with '-': `--steps -1` is a range error
      // about -1, not a confusing complaint about an option named -1.
      if (i + 1 >= argv.length) throw usageError(command, 'CLI_MISSING_VALUE', `--${name} needs a value${spec.value ? ` (${spec.value})` : ''}`, flag);
      value = argv[++i];
    }
    if (spec.multiple) {
      values[name] = [...((values[name] as unknown[] | undefined) ?? []), value];
    } else if (name in values) {
      throw usageError(command, 'CLI_REPEATED_OPTION', `--${name} was given more than once`, flag);
    } else {
      values[name] = value;
    }
  }
  return { values, positionals };
}

/** One zod issue in the project's words: "--steps must be at least 1, got -1". */
function describeIssue(issue: z.core.$ZodIssue, subject: string, got: unknown): { code: RunnerThrownCode; message: string; hint?: string } {
  const shown = typeof got === 'string' ? `'${got}'` : JSON.stringify(got);
  switch (issue.code) {
    case 'too_small': {
      const min = Number(issue.minimum);
      if (issue.origin === 'array' || issue.origin === 'string') return { code: 'CLI_INVALID_OPTION', message: `${subject} must not be empty` };
      return { code: 'CLI_OUT_OF_RANGE', message: `${subject} must be ${issue.inclusive ? `at least ${min}` : `greater than ${min}`}, got ${shown}` };
    }
    case 'too_big': {
      const max = Number(issue.maximum);
      if (issue.origin === 'array') return { code: 'CLI_ARGUMENT_COUNT', message: `too many arguments` };
      return { code: 'CLI_OUT_OF_RANGE', message: `${subject} must be ${issue.inclusive ? `at most ${max}` : `less than ${max}`}, got ${shown}` };
    }
    case 'invalid_value': {
      // Every enumerated value gets a "did you mean": format names know other tools' spellings.
      const known = issue.values.map(String);
      const meant = typeof got === 'string' ? suggestFormatName(got, known) : undefined;
      return { code: 'CLI_INVALID_OPTION', message: `${subject} must be one of ${known.join(', ')}, got ${shown}`, ...(meant === undefined ? {} : { hint: `did you mean ${subject} ${meant}?` }) };
    }
    case 'invalid_type':
      if (issue.expected === 'int') return { code: 'CLI_INVALID_OPTION', message: `${subject} must be a whole number, got ${shown}` };
      if (issue.expected === 'number') return { code: 'CLI_INVALID_OPTION', message: `${subject} must be a number, got ${shown}` };
      if (got === undefined) return { code: 'CLI_MISSING_OPTION', message: `${subject} is required` };
      return { code: 'CLI_INVALID_OPTION', message: `${subject} must be ${issue.expected}, got ${shown}` };
    default:
      return { code: 'CLI_INVALID_OPTION', message: `${subject}: ${issue.message}` };
  }
}

export function parseCommandArgs<C extends Command>(command: C, argv: readonly string[]): ReturnType<C['schema']['parse']> {
  const parsed = tokenize(command, argv);
  const [min, max] = command.positionals;
  if (parsed.positionals.length < min || parsed.positionals.length > max) {
    const names = (command.arguments ?? []).map((a) => `<${a.name}>`).join(' ');
    throw usageError(
      command,
      'CLI_ARGUMENT_COUNT',
      `ninodes ${command.name} takes ${min === max ? min : `${min} to ${max}`} argument${max === 1 ? '' : 's'}${names ? ` (${names})` : ''}, got ${parsed.positionals.length}${parsed.positionals.length > 0 ? `: ${parsed.positionals.join(' ')}` : ''}`,
      parsed.positionals,
      `usage: ${command.usage}`,
    );
  }
  const result = command.schema.safeParse({ ...parsed.values, positionals: parsed.positionals });
  if (!result.success) {
    const issue = result.error.issues[0]!;
    const key = String(issue.path[0] ?? '');
    const isArg = key === 'positionals';
    const index = Number(issue.path[1] ?? 0);
    const value = isArg ? parsed.positionals[index] : parsed.values[key];
    const subject = isArg ? `<${command.arguments?.[index]?.name ?? 'argument'}>` : key === '' ? 'the options' : `--${key}`;
    const { code, message, hint } = describeIssue(issue, subject, value);
    throw usageError(command, code, message, value, hint);
  }
  return result.data as ReturnType<C['schema']['parse']>;
}
