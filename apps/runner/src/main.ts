// The composition root of the CLI: picks the command, types its arguments, runs it, and turns
// every failure into one clear message (code, cause, hint) and a non-zero exit status.
import type { Writable } from 'node:stream';
import { NinodesError, isNinodesError } from '@ninodes/kernels';
import type { Command, CommandContext } from './command.js';
import { parseCommandArgs } from './parse-args.js';
import { createProgress, progressMode } from './progress.js';

export interface MainIo {
  stdout: Writable & { isTTY?: boolean };
  stderr: Writable & { isTTY?: boolean };
  env: NodeJS.ProcessEnv;
}

/** Exit statuses: 0 ok, 1 a failure while running, 2 the command line was wrong. */
export const EXIT_USAGE = 2;
export const EXIT_FAILURE = 1;

function helpText(commands: readonly Command[]): string {
  const width = Math.max(...commands.map((c) => c.name.length));
  const rows = commands.map((c) => `  ${c.name.padEnd(width)}  ${c.summary}`);
  return `ninodes: run big diffusion transformers on small or split hardware\n\nusage: ninodes <command> [options]\n\ncommands:\n${rows.join('\n')}\n\n'ninodes <command> --help' shows a command's usage.\n`;
}

function reportError(error: unknown, io: MainIo, json: boolean): number {
  const typed = isNinodesError(error)
    ? error
    : new NinodesError('INTERNAL', error instanceof Error ? error.message : String(error), {
        hint: 'this is a bug in ninodes: please report it with the command you ran',
        cause: error,
      });
  if (json) {
    io.stdout.write(`${JSON.stringify({ error: { code: typed.code, message: typed.message, where: typed.where, value: typed.value, hint: typed.hint } })}\n`);
  }
  io.stderr.write(`error ${typed.format()}\n`);
  if (!isNinodesError(error) && error instanceof Error && error.stack && io.env.NINODES_DEBUG) io.stderr.write(`${error.stack}\n`);
  return typed.code.startsWith('CLI_') ? EXIT_USAGE : EXIT_FAILURE;
}

export async function main(argv: readonly string[], commands: readonly Command[], io: MainIo): Promise<number> {
  const [name, ...rest] = argv;
  const json = rest.includes('--json');
  if (name === undefined || name === '--help' || name === '-h' || name === 'help') {
    io.stdout.write(helpText(commands));
    return name === undefined ? EXIT_USAGE : 0;
  }
  const command = commands.find((c) => c.name === name);
  try {
    if (!command) {
      throw new NinodesError('CLI_UNKNOWN_COMMAND', `unknown command '${name}'`, {
        value: name,
        where: 'ninodes',
        hint: `commands: ${commands.map((c) => c.name).join(', ')}`,
      });
    }
    if (rest.includes('--help') || rest.includes('-h')) {
      io.stdout.write(`${command.summary}\n\nusage: ${command.usage}\n`);
      return 0;
    }
    const args = parseCommandArgs(command, rest);
    const context: CommandContext = {
      stdout: io.stdout,
      stderr: io.stderr,
      json,
      env: io.env,
      progress: createProgress(progressMode({ json, stream: io.stderr }), io.stderr),
    };
    return await command.run(args, context);
  } catch (error) {
    return reportError(error, io, json);
  }
}
