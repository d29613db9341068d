// Test helper (not exported from the package): paths of the recorded machine trees.
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const fixtures = join(dirname(fileURLToPath(import.meta.url)), '..', 'fixtures', 'machines');

// env is empty so the recorded machines never see this process's CUDA_/HIP_VISIBLE_DEVICES.
export function machine(name: string): { procRoot: string; sysRoot: string; dir: string; env: Record<string, string> } {
  const dir = join(fixtures, name);
  return { procRoot: join(dir, 'proc'), sysRoot: join(dir, 'sys'), dir, env: {} };
}
