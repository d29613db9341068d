// The composition root of the CLI: picks the command, types its arguments, runs it, and turns
// every failure into one clear message (code, cause, hint) and a non-zero exit status.
//
// Output rule: what the user asked for goes to stdout with status 0 (`--help`, `help <command>`,
// `--version`); a command line that cannot run (bare `ninodes`, unknown command or option) gets
// the help or the error on stderr and status 2, as POSIX utilities and git do.
import type { Writable } from 'node:stream';
import { NinodesError, fsError, isNinodesError, isSystemError } from '@ninodes/kernels';
import { RunnerError } from './error-codes.js';
import type { Command, CommandContext } from './command.js';
import { commandHelp, topHelp } from './help.js';
import { parseCommandArgs } from './parse-args.js';
import { createProgress, progressMode } from './progress.js';
import { closest } from '@ninodes/kernels';
import { versionText } from './version.js';

export interface MainIo {
  stdout: Writable & { isTTY?: boolean };
  stderr: Writable & { isTTY?: boolean };
  env: NodeJS.ProcessEnv;
}

/** Exit statuses: 0 ok, 1 a failure while running, 2 the command line was wrong. */
export const EXIT_USAGE = 2;
export const EXIT_FAILURE = 1;

/** Errors that are not ours to call bugs: the OS refused a file operation, memory ran out. */
function classify(error: unknown): NinodesError {
  if (isNinodesError(error)) return error;
  if (isSystemError(error)) return fsError(error, error.path ?? '(unknown path)', `${error.syscall} failed for`);
  if (error instanceof RangeError && /allocation failed|Invalid typed array length|Array buffer allocation|Invalid array length/i.test(error.message)) {
    return new RunnerError('OUT_OF_MEMORY', `could not allocate memory: ${error.message}`, {
      cause: error,
      hint: 'use a smaller size (--frames, --height, --width) or free memory',
    });
  }
  return new RunnerError('INTERNAL', error instanceof Error ? error.message : String(error), {
    hint: 'this is a bug in ninodes: please report it with the command you ran',
    cause: error,
  });
}

function reportError(error: unknown, io: MainIo, json: boolean): number {
  const typed = classify(error);
  if (json) {
    io.stdout.write(`${JSON.stringify({ error: { code: typed.code, message: typed.message, where: typed.where, value: typed.value, hint: typed.hint } })}\n`);
  }
  io.stderr.write(`error ${typed.format()}\n`);
  if (typed.code === 'INTERNAL' && error instanceof Error && error.stack && io.env.NINODES_DEBUG) io.stderr.write(`${error.stack}\n`);
  return typed.code.startsWith('CLI_') ? EXIT_USAGE : EXIT_FAILURE;
}

function findCommand(commands: readonly Command[], name: string): Command {
  const command = commands.find((c) => c.name === name);
  if (command) return command;
  const guess = closest(name, commands.map((c) => c.name));
  throw new RunnerError('CLI_UNKNOWN_COMMAND', `unknown command '${name}'${guess ? ` (did you mean '${guess}'?)` : ''}`, {
    value: name,
    where: 'ninodes',
    hint: `commands: ${commands.map((c) => c.name).join(', ')}; 'ninodes --help' describes them`,
  });
}

export async function main(argv: readonly string[], commands: readonly Command[], io: MainIo): Promise<number> {
  const [name, ...rest] = argv;
  const json = rest.includes('--json');
  if (name === undefined) {
    io.stderr.write(topHelp(commands));
    return EXIT_USAGE;
  }
  try {
    if (name === '--help' || name === '-h') {
      io.stdout.write(topHelp(commands));
      return 0;
    }
    if (name === '--version' || name === '-V' || name === 'version') {
      io.stdout.write(versionText());
      return 0;
    }
    if (name === 'help') {
      if (rest.length === 0) {
        io.stdout.write(topHelp(commands));
        return 0;
      }
      io.stdout.write(commandHelp(findCommand(commands, rest[0]!)));
      return 0;
    }
    if (name.startsWith('-')) {
      throw new RunnerError('CLI_UNKNOWN_OPTION', `ninodes has no option ${name} before a command`, {
        value: name,
        where: 'ninodes',
        hint: "usage: ninodes <command> [options]; 'ninodes --help' lists the commands",
      });
    }
    const command = findCommand(commands, name);
    // Only before a `--`: after it, "--help" is a positional argument.
    const dashdash = rest.indexOf('--');
    const own = dashdash === -1 ? rest : rest.slice(0, dashdash);
    if (own.includes('--help') || own.includes('-h')) {
      io.stdout.write(commandHelp(command));
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
