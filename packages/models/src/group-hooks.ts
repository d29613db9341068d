import type { GroupHooks } from '@ninodes/quant';

/**
 * Runs `body` between the hooks of group `name` (every model's forward does, group by group, in its
 * ModelLayout's order). afterGroup runs when the body throws too (an executor unpins the group's
 * weights there); the body's error is the one thrown.
 */
export async function inGroup<R>(hooks: GroupHooks | undefined, name: string, body: () => Promise<R> | R): Promise<R> {
  if (hooks?.beforeGroup) await hooks.beforeGroup(name);
  let r: R;
  try {
    r = await body();
  } catch (error) {
    // Its own failure (sync or async) would hide the body's: the body's error is the cause.
    if (hooks?.afterGroup) await (async () => hooks.afterGroup?.(name))().catch(() => undefined);
    throw error;
  }
  if (hooks?.afterGroup) await hooks.afterGroup(name);
  return r;
}
