import { describe, expect, it } from 'vitest';
import { defaultOutDir, parseCli } from './args.js';

const known = ['kernels', 'io', 'quant', 'model'];
const now = new Date('2026-01-02T03:04:05.678Z');

describe('parseCli', () => {
  it('defaults: every suite, full sizes, timestamped output', () => {
    expect(parseCli([], known, now)).toEqual({ suites: known, cases: [], quick: false, outDir: 'bench-results/2026-01-02T03-04-05-678Z', compare: undefined, help: false });
    expect(defaultOutDir(now)).not.toMatch(/[:.]/);
  });

  it('selects suites by name, repeated or comma-separated, without duplicates', () => {
    expect(parseCli(['--suite', 'io', '--suite', 'kernels,io'], known).suites).toEqual(['io', 'kernels']);
    expect(parseCli(['--suite', 'all', '--quick', '--out', 'x', '--compare', 'b.json'], known)).toMatchObject({ suites: known, quick: true, outDir: 'x', compare: 'b.json' });
  });

  it('keeps --case names, repeated or comma-separated, without duplicates', () => {
    expect(parseCli(['--case', 'linear_int8,hadamard', '--case', 'linear_int8'], known).cases).toEqual(['linear_int8', 'hadamard']);
  });

  it('rejects unknown suites and flags with a code and a hint', () => {
    expect(() => parseCli(['--suite', 'tp'], known)).toThrow(expect.objectContaining({ code: 'BENCH_UNKNOWN_SUITE', value: 'tp', where: '--suite' }));
    expect(() => parseCli(['--fast'], known)).toThrow(expect.objectContaining({ code: 'BENCH_BAD_FLAG' }));
    expect(() => parseCli(['--out'], known)).toThrow(expect.objectContaining({ code: 'BENCH_BAD_FLAG' }));
    expect(() => parseCli(['--out', ''], known)).toThrow(expect.objectContaining({ code: 'BENCH_BAD_FLAG' }));
    expect(() => parseCli(['extra'], known)).toThrow(expect.objectContaining({ code: 'BENCH_BAD_FLAG' }));
  });
});
