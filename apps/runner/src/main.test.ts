import { readFileSync } from 'node:fs';
import { Writable } from 'node:stream';
import { tmpdir } from 'node:os';
import { buildInfo } from '@ninodes/kernels';
import { z } from 'zod';
import { defineCommand } from './command.js';
import { describe, expect, it } from 'vitest';
import { COMMANDS } from './commands.js';
import { EXIT_USAGE, main } from './main.js';

function capture() {
  const text = { stdout: '', stderr: '' };
  const stream = (key: 'stdout' | 'stderr') =>
    new Writable({
      write(chunk, _e, cb) {
        text[key] += String(chunk);
        cb();
      },
    });
  return { io: { stdout: stream('stdout'), stderr: stream('stderr'), env: {} }, text };
}

describe('ninodes main', () => {
  it('devices --json lists the CPU with the RAM /proc/meminfo reports', async () => {
    const { io, text } = capture();
    expect(await main(['devices', '--json'], COMMANDS, io)).toBe(0);
    const memTotalKiB = Number(/^MemTotal:\s+(\d+) kB/m.exec(readFileSync('/proc/meminfo', 'utf8'))![1]);
    const doc = JSON.parse(text.stdout);
    const cpu = doc.devices.find((d: { id: string }) => d.id === 'cpu');
    expect(cpu).toBeDefined();
    const total = cpu.totalBytes;
    // A cgroup limit may lower the figure, never raise it.
    expect(total).toBeLessThanOrEqual(memTotalKiB * 1024);
    expect(total).toBeGreaterThan(0);
    expect(text.stderr).not.toMatch(/warn/i);
  });

  it('an unknown command is a usage error that lists the commands', async () => {
    const { io, text } = capture();
    expect(await main(['frobnicate'], COMMANDS, io)).toBe(EXIT_USAGE);
    expect(text.stderr).toContain('CLI_UNKNOWN_COMMAND');
    expect(text.stderr).toContain('devices');
  });

  it('with --json, an error is also a JSON document on stdout', async () => {
    const { io, text } = capture();
    expect(await main(['devices', '--json', 'extra'], COMMANDS, io)).toBe(EXIT_USAGE);
    expect(JSON.parse(text.stdout).error.code).toBe('CLI_ARGUMENT_COUNT');
  });

  it('bare ninodes: the help on stderr and the usage status; --help: on stdout and 0', async () => {
    const bare = capture();
    expect(await main([], COMMANDS, bare.io)).toBe(EXIT_USAGE);
    expect(bare.text.stdout).toBe('');
    expect(bare.text.stderr).toContain('usage: ninodes <command>');
    const help = capture();
    expect(await main(['--help'], COMMANDS, help.io)).toBe(0);
    expect(help.text.stdout).toBe(bare.text.stderr);
  });

  it('--version prints the package version and the native build info', async () => {
    const { io, text } = capture();
    expect(await main(['--version'], COMMANDS, io)).toBe(0);
    const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'));
    expect(text.stdout.split('\n')[0]).toBe(`ninodes ${pkg.version}`);
    const info = buildInfo();
    expect(text.stdout).toContain(`onednn            ${info.onednn}`);
    expect(text.stdout).toContain(`simd              ${info.simd}`);
  });

  it('help <command> and <command> --help: every option, the schema default, examples', async () => {
    for (const argv of [['help', 'run'], ['run', '--help']]) {
      const { io, text } = capture();
      expect(await main(argv, COMMANDS, io)).toBe(0);
      const run = COMMANDS.find((c) => c.name === 'run')!;
      for (const name of Object.keys(run.options)) expect(text.stdout).toContain(`--${name}`);
      // Defaults come from the schema the parser uses, so help cannot drift from behaviour.
      const defaults = run.schema.parse({ positionals: [] }) as Record<string, unknown>;
      expect(text.stdout).toMatch(new RegExp(`--seed N +.*\\[default: ${String(defaults.seed)}\\]`));
      expect(text.stdout).toMatch(new RegExp(`--out <dir> +.*\\[default: ${String(defaults.out)}\\]`));
      expect(text.stdout).toContain('examples:\n  ninodes run ');
    }
    const { io, text } = capture();
    expect(await main(['help', 'rnu'], COMMANDS, io)).toBe(EXIT_USAGE);
    expect(text.stderr).toContain("did you mean 'run'?");
  });

  it('usage errors are in our words with a suggestion, never the parser text', async () => {
    const { io, text } = capture();
    expect(await main(['run', '--stesp', '3'], COMMANDS, io)).toBe(EXIT_USAGE);
    expect(text.stderr).toContain('CLI_UNKNOWN_OPTION: ninodes run has no option --stesp (did you mean --steps?)');
    const neg = capture();
    expect(await main(['run', '--steps', '-1'], COMMANDS, neg.io)).toBe(EXIT_USAGE);
    expect(neg.text.stderr).toContain("CLI_OUT_OF_RANGE: --steps must be greater than 0, got '-1'");
    for (const t of [text.stderr, neg.text.stderr]) expect(t).not.toMatch(/parseArgs|ERR_PARSE_ARGS|Option '/);
  });

  it('an OS error or a failed allocation escaping a command is coded, never INTERNAL', async () => {
    const throwing = (name: string, fail: () => void) =>
      defineCommand({ name, summary: 's', usage: name, options: {}, positionals: [0, 0], examples: [], schema: z.object({ positionals: z.array(z.string()) }), async run() {
        fail();
        return 0;
      } });
    const commands = [
      throwing('eisdir', () => readFileSync(tmpdir())),
      throwing('alloc', () => new Float32Array(2 ** 40)),
      throwing('bug', () => {
        throw new TypeError('x is not a function');
      }),
    ];
    const codes: string[] = [];
    for (const name of ['eisdir', 'alloc', 'bug']) {
      const { io, text } = capture();
      expect(await main([name], commands, io)).toBe(1);
      codes.push(/^error ([A-Z_]+):/.exec(text.stderr)![1]!);
    }
    // A real bug stays INTERNAL: only what the user or the machine caused is recoded.
    expect(codes).toEqual(['PATH_IS_DIRECTORY', 'OUT_OF_MEMORY', 'INTERNAL']);
  });
});
