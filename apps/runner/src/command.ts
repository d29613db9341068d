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

type OptionSpec = { type: 'string' | 'boolean'; short?: string; multiple?: boolean; default?: string | boolean };

/** One subcommand: its flags (node:util parseArgs), a zod schema that types them, and its body. */
export interface Command<S extends z.ZodType = z.ZodType> {
  readonly name: string;
  readonly summary: string;
  /** e.g. "ninodes inspect <ckpt> [--json]" */
  readonly usage: string;
  readonly options: Record<string, OptionSpec>;
  /** Number of positional arguments accepted (min, max). */
  readonly positionals: readonly [number, number];
  /** Receives { ...flags, positionals } and returns the typed arguments. */
  readonly schema: S;
  run(args: z.infer<S>, context: CommandContext): Promise<number>;
}

export function defineCommand<S extends z.ZodType>(command: Command<S>): Command<S> {
  return command;
}
