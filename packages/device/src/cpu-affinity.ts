// Which CPUs this process may run on, and how to deal them out: `ninodes run --tp N --tp-pin` and
// the bench's tp workers pin each rank to its own cores (taskset), because two busy single-threaded
// processes left to the scheduler lose ~10% of their wall time to migrations on a 2-core machine.
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

/** A Linux CPU list ("0-3,8") as CPU numbers in order; parts that are not a number or range are skipped. */
export function parseCpuList(list: string): number[] {
  const cpus: number[] = [];
  for (const part of list.trim().split(',')) {
    const m = /^(\d+)(?:-(\d+))?$/.exec(part);
    if (m === null) continue;
    for (let c = Number(m[1]); c <= Number(m[2] ?? m[1]); c++) cpus.push(c);
  }
  return cpus;
}

/** The CPUs this process may run on (Cpus_allowed_list of /proc/self/status); empty where that is unreadable. */
export function allowedCpus(): number[] {
  try {
    return parseCpuList(/^Cpus_allowed_list:\s*(\S+)/m.exec(readFileSync('/proc/self/status', 'utf8'))?.[1] ?? '');
  } catch {
    return [];
  }
}

/**
 * `count` consecutive slices of `perSlice` CPUs each, as taskset lists ("0,1"), or undefined when
 * `cpus` has fewer than count × perSlice.
 */
export function cpuSlices(cpus: readonly number[], count: number, perSlice: number): string[] | undefined {
  if (cpus.length < count * perSlice) return undefined;
  return Array.from({ length: count }, (_, r) => cpus.slice(r * perSlice, (r + 1) * perSlice).join(','));
}

/** Whether util-linux's `taskset`, which the pinning runs through, can be started here. */
export function hasTaskset(): boolean {
  return spawnSync('taskset', ['--version'], { encoding: 'utf8' }).error === undefined;
}
