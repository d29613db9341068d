import { homedir } from 'node:os';
import { join } from 'node:path';

/** Where generated checkpoints are kept: $NINODES_CACHE, else $XDG_CACHE_HOME/ninodes, else ~/.cache/ninodes. */
export function cacheDir(env: NodeJS.ProcessEnv): string {
  if (env.NINODES_CACHE) return env.NINODES_CACHE;
  return join(env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'ninodes');
}
