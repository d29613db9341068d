import { describe, expect, it } from 'vitest';
import { gnuTimeAvailable, measurePeakMemory, measureScriptPeakMemory, parseGnuTimeMaxRss, parseVmHwm, type PeakMethod } from './peak-memory.js';

const MiB = 1024 * 1024;
/** A node child that allocates and touches `mib` MiB outside the JS heap, then holds it briefly. */
const child = (mib: number) => ['-e', `const b = Buffer.alloc(${mib} * 1024 * 1024, 1); setTimeout(() => console.log(b[b.length - 1]), 150);`];

const methods: PeakMethod[] = gnuTimeAvailable() ? ['gnu-time', 'proc-vmhwm'] : ['proc-vmhwm'];

describe('measurePeakMemory', () => {
  it('parses GNU time and /proc status reports', () => {
    expect(parseGnuTimeMaxRss('\tMaximum resident set size (kbytes): 51234\n')).toBe(51234 * 1024);
    expect(parseVmHwm('VmPeak:\t 100 kB\nVmHWM:\t   2048 kB\nVmRSS: 10 kB')).toBe(2048 * 1024);
    expect(parseGnuTimeMaxRss('nothing here')).toBeUndefined();
  });

  for (const method of methods) {
    it(`${method}: 200 MiB more allocated shows as ~200 MiB more peak`, async () => {
      const small = await measurePeakMemory(process.execPath, child(1), { method });
      const big = await measurePeakMemory(process.execPath, child(201), { method });
      expect(small.method).toBe(method);
      expect(big.stdout.trim()).toBe('1');
      const delta = (big.peakBytes - small.peakBytes) / MiB;
      expect(delta).toBeGreaterThan(190);
      expect(delta).toBeLessThan(230);
    });
  }

  it('a module script can import the packages and its own allocation shows in its peak', async () => {
    const script = (mib: number) =>
      `import { buildInfo } from '@ninodes/kernels';\nconst b = Buffer.alloc(${mib} << 20, 1);\nconsole.log(buildInfo().onednn, b[0]);`;
    const small = await measureScriptPeakMemory(script(1));
    const big = await measureScriptPeakMemory(script(129));
    expect(big.stdout.trim()).toMatch(/^\d+\.\d+\.\d+ 1$/);
    const delta = (big.peakBytes - small.peakBytes) / MiB;
    expect(delta).toBeGreaterThan(120);
    expect(delta).toBeLessThan(150);
  });

  it('a failing child is an error with its exit code, not a number', async () => {
    await expect(measurePeakMemory(process.execPath, ['-e', 'process.exit(3)'])).rejects.toMatchObject({ code: 'BENCH_CHILD_FAILED', value: 3 });
  });

  it('a command that does not exist is an error', async () => {
    await expect(measurePeakMemory('/nonexistent/ninodes-cmd', [], { method: 'proc-vmhwm' })).rejects.toMatchObject({ code: 'BENCH_CHILD_FAILED' });
  });
});
