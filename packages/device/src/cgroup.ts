import { join, parseUnsigned, readText, type ResolvedRoots } from './fs-read.js';
import type { NoteLog } from './notes.js';

export interface CgroupMemory {
  version: 1 | 2;
  /** The tightest memory limit on the path from this process's cgroup to the root, in bytes. */
  limitBytes: number;
  /** Memory charged to the limiting cgroup, when readable. */
  usageBytes: number | null;
  /** The cgroup directory (as seen in the injected sysfs root) whose limit applies. */
  path: string;
}

// Limits at or above this mean "unlimited" (v1's LONG_MAX page-rounded; no machine has 4 EiB).
const V1_UNLIMITED = 2 ** 62;

interface Mount {
  root: string;
  mountPoint: string;
  fsType: string;
  superOptions: string;
}

function parseMountInfo(text: string): Mount[] {
  const mounts: Mount[] = [];
  for (const line of text.split('\n')) {
    const sep = line.indexOf(' - ');
    if (sep < 0) continue;
    const left = line.slice(0, sep).split(' ');
    const right = line.slice(sep + 3).split(' ');
    if (left.length < 5 || right.length < 3) continue;
    mounts.push({ root: left[3] as string, mountPoint: left[4] as string, fsType: right[0] as string, superOptions: right[2] as string });
  }
  return mounts;
}

// Mount points are absolute paths of the real machine; recorded trees keep /sys/... under sysRoot.
function underSysRoot(mountPoint: string, roots: ResolvedRoots): string | undefined {
  if (mountPoint === '/sys' || mountPoint.startsWith('/sys/')) return join(roots.sysRoot, mountPoint.slice(4));
  return undefined;
}

function ancestors(mountDir: string, relative: string): string[] {
  const parts = relative.split('/').filter((p) => p.length > 0);
  const dirs: string[] = [];
  for (let i = parts.length; i >= 0; i -= 1) dirs.push(join(mountDir, ...parts.slice(0, i)));
  return dirs;
}

/**
 * The memory limit of this process's cgroup (v2 `memory.max`, v1 `memory.limit_in_bytes`), taking
 * the minimum over all ancestors because a parent's limit binds its children. Returns undefined
 * when no limit applies or nothing could be read.
 */
export function readCgroupMemory(roots: ResolvedRoots, log: NoteLog): CgroupMemory | undefined {
  const cgroupText = readText(join(roots.procRoot, 'self', 'cgroup'));
  const mountText = readText(join(roots.procRoot, 'self', 'mountinfo'));
  if (cgroupText === undefined || mountText === undefined) {
    log.debug('cgroup', 'no /proc/self/cgroup or mountinfo; no cgroup limit applied', join(roots.procRoot, 'self'));
    return undefined;
  }
  const mounts = parseMountInfo(mountText);
  let best: CgroupMemory | undefined;
  for (const line of cgroupText.split('\n')) {
    const m = /^(\d+):([^:]*):(.*)$/.exec(line.trim());
    if (m === null) continue;
    const controllers = m[2] as string;
    const path = m[3] as string;
    const isV2 = m[1] === '0' && controllers === '';
    const isV1Memory = controllers.split(',').includes('memory');
    if (!isV2 && !isV1Memory) continue;
    const mount = mounts.find((x) => (isV2 ? x.fsType === 'cgroup2' : x.fsType === 'cgroup' && x.superOptions.split(',').includes('memory')));
    if (mount === undefined) continue;
    const mountDir = underSysRoot(mount.mountPoint, roots);
    if (mountDir === undefined) continue;
    // Inside a container the cgroup namespace root is mounted, so the path is relative to mount.root.
    let relative = path;
    if (mount.root !== '/' && relative.startsWith(mount.root)) relative = relative.slice(mount.root.length);
    let dirs = ancestors(mountDir, relative);
    // Without a cgroup namespace the recorded path may not exist under the mount: fall back to the mount itself.
    if (readText(join(dirs[0] as string, isV2 ? 'memory.max' : 'memory.limit_in_bytes')) === undefined) dirs = [mountDir];
    for (const dir of dirs) {
      const limitFile = join(dir, isV2 ? 'memory.max' : 'memory.limit_in_bytes');
      const raw = readText(limitFile);
      if (raw === undefined) continue;
      const t = raw.trim();
      if (t === 'max') continue;
      // v1 writes "no limit" as LONG_MAX rounded to a page, beyond 2^53: no real limit is that large.
      if (/^[0-9]+$/.test(t) && BigInt(t) >= BigInt(V1_UNLIMITED)) continue;
      const limit = parseUnsigned(t);
      if (limit === undefined) {
        log.warn('cgroup', `unparsable memory limit '${t.slice(0, 40)}'; ignoring it`, limitFile);
        continue;
      }
      if (best === undefined || limit < best.limitBytes) {
        const usage = parseUnsigned(readText(join(dir, isV2 ? 'memory.current' : 'memory.usage_in_bytes')));
        best = { version: isV2 ? 2 : 1, limitBytes: limit, usageBytes: usage ?? null, path: dir };
      }
    }
  }
  if (best === undefined) log.debug('cgroup', 'no cgroup memory limit applies to this process');
  return best;
}
