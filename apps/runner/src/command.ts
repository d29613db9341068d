import type { Writable } from 'node:stream';
import type { z } from 'zod';
import type { Progress } from './progress.js';

export interface CommandContext {
  readonly stdout: Writable;
  readonly stderr: Writable;
  readonly progress: Progress;
  /** --json: the result goes to stdout as one JSON document. */
  readonly json: boolean;
  readonly env: NodeJS.ProcessEnv;
}

/** One flag: how it parses, and what `ninodes help <command>` says about it. */
export interface OptionSpec {
  readonly type: 'string' | 'boolean';
  readonly short?: string;
  readonly multiple?: boolean;
  /** What the value looks like in help, e.g. `N`, `<dir>`. */
  readonly value?: string;
  readonly description: string;
}

/** One positional argument, for help. */
export interface ArgumentSpec {
  readonly name: string;
  readonly description: string;
}

/**
 * One subcommand: its flags, a zod schema that types them (defaults live there and only there;
 * help reads them back), and its body.
 */
export interface Command<S extends z.ZodType = z.ZodType> {
  readonly name: string;
  readonly summary: string;
  /** e.g. "ninodes inspect <ckpt> [--json]" */
  readonly usage: string;
  readonly arguments?: readonly ArgumentSpec[];
  readonly options: Readonly<Record<string, OptionSpec>>;
  /** Number of positional arguments accepted (min, max). */
  readonly positionals: readonly [number, number];
  /** Command lines that work, shown by help. */
  readonly examples: readonly string[];
  /** Receives { ...flags, positionals } and returns the typed arguments. */
  readonly schema: S;
  run(args: z.infer<S>, context: CommandContext): Promise<number>;
}

export function defineCommand<S extends z.ZodType>(command: Command<S>): Command<S> {
  return command;
}
