/** CLI flags, parsed at the edge into typed options. */
import { parseArgs } from 'node:util';
import { BenchError } from './error-codes.js';
import { z } from 'zod';

export const USAGE = `usage: ninodes-bench [--suite <name>|all] [--case <name>] [--quick] [--out <dir>] [--compare <baseline results.json>]
  --suite    suite to run (repeatable or comma-separated); default all
  --case     only the cases of this name, e.g. linear_int8 (repeatable or comma-separated)
  --quick    small sizes and budgets, every suite in under 3 minutes
  --out      output directory; default bench-results/<timestamp>
  --compare  mark cases slower than this baseline by more than the measured noise`;

export interface CliOptions {
  suites: string[];
  /** Case names to keep; empty = every case of the selected suites. */
  cases: string[];
  quick: boolean;
  outDir: string;
  compare: string | undefined;
  help: boolean;
}

const FlagsSchema = z.object({
  suite: z.array(z.string().min(1)).optional(),
  case: z.array(z.string().min(1)).optional(),
  quick: z.boolean().optional(),
  out: z.string().min(1).optional(),
  compare: z.string().min(1).optional(),
  help: z.boolean().optional(),
});

export function defaultOutDir(now = new Date()): string {
  return `bench-results/${now.toISOString().replace(/[:.]/g, '-')}`;
}

/** Parses argv; `known` are the registered suite names ('all' expands to all of them). */
export function parseCli(argv: readonly string[], known: readonly string[], now = new Date()): CliOptions {
  let values: unknown;
  try {
    values = parseArgs({
      args: [...argv],
      options: { suite: { type: 'string', multiple: true }, case: { type: 'string', multiple: true }, quick: { type: 'boolean' }, out: { type: 'string' }, compare: { type: 'string' }, help: { type: 'boolean', short: 'h' } },
      strict: true,
      allowPositionals: false,
    }).values;
  } catch (e) {
    throw new BenchError('BENCH_BAD_FLAG', e instanceof Error ? e.message : String(e), { value: argv.join(' '), where: 'command line', hint: USAGE });
  }
  const flags = FlagsSchema.safeParse(values);
  if (!flags.success) {
    const issue = flags.error.issues[0];
    throw new BenchError('BENCH_BAD_FLAG', issue?.message ?? 'invalid flags', { value: issue?.path.join('.'), where: 'command line', hint: USAGE });
  }
  const requested = (flags.data.suite ?? ['all']).flatMap((s) => s.split(',')).map((s) => s.trim()).filter(Boolean);
  const suites: string[] = [];
  for (const name of requested) {
    if (name === 'all') suites.push(...known);
    else if (known.includes(name)) suites.push(name);
    else
      throw new BenchError('BENCH_UNKNOWN_SUITE', `no suite named ${name}`, {
        value: name,
        where: '--suite',
        hint: known.length ? `available: ${known.join(', ')}, all` : 'no suites are registered yet (apps/bench/src/suites/index.ts)',
      });
  }
  const cases = [...new Set((flags.data.case ?? []).flatMap((s) => s.split(',')).map((s) => s.trim()).filter(Boolean))];
  return { suites: [...new Set(suites)], cases, quick: flags.data.quick ?? false, outDir: flags.data.out ?? defaultOutDir(now), compare: flags.data.compare, help: flags.data.help ?? false };
}
