// Help text, generated from the commands themselves: every option with its description and its
// default, read back from the command's zod schema (where defaults live), and examples.
import type { z } from 'zod';
import type { Command } from './command.js';
import { formatRows } from './table.js';

/** The schema's default for `key`, as help shows it, or undefined when there is none. */
export function optionDefault(command: Command, key: string): string | undefined {
  const shape = (command.schema as unknown as { shape?: Record<string, z.ZodType> }).shape;
  const field = shape?.[key];
  if (field === undefined) return undefined;
  const r = field.safeParse(undefined);
  if (!r.success || r.data === undefined || r.data === false) return undefined;
  if (Array.isArray(r.data)) return r.data.length === 0 ? undefined : r.data.join(',');
  return String(r.data);
}

export function topHelp(commands: readonly Command[]): string {
  const rows = commands.map((c) => [`  ${c.name}`, c.summary]);
  return [
    'ninodes: run big diffusion transformers on small or split hardware',
    '',
    'usage: ninodes <command> [options]',
    '       ninodes help <command>     every option of a command, its default and examples',
    '       ninodes --version          version and native build',
    '',
    'commands:',
    formatRows(rows),
    '',
  ].join('\n');
}

export function commandHelp(command: Command): string {
  const rows = Object.entries(command.options).map(([name, o]) => {
    const flag = `  ${o.short ? `-${o.short}, ` : ''}--${name}${o.type === 'string' ? ` ${o.value ?? '<value>'}` : ''}`;
    const def = optionDefault(command, name);
    return [flag, `${o.description}${o.multiple ? ' (repeatable)' : ''}${def === undefined ? '' : ` [default: ${def}]`}`];
  });
  const args = (command.arguments ?? []).map((a) => [`  <${a.name}>`, a.description]);
  return [
    `ninodes ${command.name}: ${command.summary}`,
    '',
    `usage: ${command.usage}`,
    ...(args.length > 0 ? ['', 'arguments:', formatRows(args)] : []),
    '',
    'options:',
    formatRows([...rows, ['  -h, --help', 'show this help']]),
    '',
    'examples:',
    ...command.examples.map((e) => `  ${e}`),
    '',
  ].join('\n');
}
