import { brandInstances } from './brand.js';
import { terminalSafe, terminalSafeLines } from './terminal-safe.js';

/**
 * The one error type of ninodes. Every failure that reaches a user carries a stable `code` to branch
 * on, the offending value, where it was found, and a hint that says how to fix it. Native errors
 * arrive with a `code` too and are wrapped by `fromNativeError`.
 */
export interface NinodesErrorDetails {
  /** The offending input, as the user gave it (truncated by the formatter if long). */
  value?: unknown;
  /** Where it was found: a file, a tensor name, a CLI flag, a character position. */
  where?: string;
  /** What to do about it. */
  hint?: string;
  cause?: unknown;
}

export class NinodesError extends Error {
  static {
    // isNinodesError and instanceof accept errors of the other module build too (ESM and CJS).
    brandInstances(this, 'error');
  }

  readonly code: string;
  readonly value: unknown;
  readonly where: string | undefined;
  readonly hint: string | undefined;

  constructor(code: string, message: string, details: NinodesErrorDetails = {}) {
    super(message, details.cause === undefined ? undefined : { cause: details.cause });
    this.name = 'NinodesError';
    this.code = code;
    this.value = details.value;
    this.where = details.where;
    this.hint = details.hint;
  }

  /** One line for terminals: `CODE: message (at where) — hint`. */
  /**
   * The message as a terminal shows it: names and paths inside it are file content, so control
   * characters are escaped and no line of it can pass for a line of its own (see terminal-safe).
   */
  format(): string {
    const at = this.where === undefined ? '' : ` (at ${terminalSafe(this.where)})`;
    const hint = this.hint === undefined ? '' : `\n  hint: ${terminalSafe(this.hint)}`;
    return `${this.code}: ${terminalSafeLines(this.message)}${at}${hint}`;
  }
}

/**
 * NinodesError's constructor narrowed to the codes one package may throw: its own list
 * (`src/error-codes.ts`) and the lists of the packages it depends on. Each package binds one
 * (`export const QuantError: CodedError<QuantThrownCode> = NinodesError`), so a code outside the
 * lists fails to compile while the thrown object stays a plain NinodesError.
 */
export type CodedError<Code extends string> = new (code: Code, message: string, details?: NinodesErrorDetails) => NinodesError;

export function isNinodesError(error: unknown, code?: string): error is NinodesError {
  return error instanceof NinodesError && (code === undefined || error.code === code);
}

/** Re-throws an error from the addon as a NinodesError with the same code. */
export function fromNativeError(error: unknown, where?: string): NinodesError {
  if (error instanceof NinodesError) return error;
  const e = error as { code?: unknown; message?: unknown };
  const code = typeof e?.code === 'string' ? e.code : 'INTERNAL';
  const message = typeof e?.message === 'string' ? e.message : String(error);
  return new NinodesError(code, message, where === undefined ? { cause: error } : { where, cause: error });
}
