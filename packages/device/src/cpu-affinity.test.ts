import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { allowedCpus, cpuSlices, parseCpuList } from './cpu-affinity.js';

describe('cpu affinity', () => {
  it('parses Linux CPU lists: single CPUs, ranges, mixtures, junk skipped', () => {
    expect(parseCpuList('0')).toEqual([0]);
    expect(parseCpuList('0-3,8')).toEqual([0, 1, 2, 3, 8]);
    expect(parseCpuList('2,4-5,7\n')).toEqual([2, 4, 5, 7]);
    expect(parseCpuList('')).toEqual([]);
    expect(parseCpuList('x,1,-2,3-')).toEqual([1]);
  });

  it("reads this process's allowed CPUs: as many as the kernel's list names, each a distinct CPU", () => {
    const cpus = allowedCpus();
    const list = /^Cpus_allowed_list:\s*(\S+)/m.exec(readFileSync('/proc/self/status', 'utf8'))![1]!;
    // Count the list independently: each part is one CPU or an inclusive range.
    const count = list.split(',').reduce((n, p) => {
      const [a, b] = p.split('-').map(Number);
      return n + (b === undefined ? 1 : (b as number) - (a as number) + 1);
    }, 0);
    expect(cpus).toHaveLength(count);
    expect(new Set(cpus).size).toBe(count);
  });

  it('deals consecutive slices, or undefined when there are too few CPUs', () => {
    expect(cpuSlices([0, 1, 2, 3], 2, 2)).toEqual(['0,1', '2,3']);
    expect(cpuSlices([4, 6, 9], 3, 1)).toEqual(['4', '6', '9']);
    expect(cpuSlices([0, 1], 2, 2)).toBeUndefined();
  });
});
