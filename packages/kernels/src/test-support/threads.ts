// Sets the native pool's thread count for thread-invariance tests, through the addon's own
// setThreads (the public setThreads/getThreads API belongs to another module).
import { nativeAddon } from '../native-addon.js';

export function setThreadsForTest(n: number): number {
  return (nativeAddon() as unknown as { setThreads(n: number): number }).setThreads(n);
}
