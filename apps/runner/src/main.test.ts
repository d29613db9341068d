import { readFileSync } from 'node:fs';
import { Writable } from 'node:stream';
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
});
