// The CLI run in this process (main with the real commands), its output captured: what the command
// tests drive instead of spawning a Node per call.
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { COMMANDS } from '../commands.js';
import { main } from '../main.js';

export interface CliResult {
  status: number;
  stdout: string;
  stderr: string;
}

/** A `cli(...argv)` whose preset cache lives in `<dir>/cache`. */
export function inProcessCli(dir: string): (...argv: string[]) => Promise<CliResult> {
  return async (...argv) => {
    const text = { stdout: '', stderr: '' };
    const sink = (key: 'stdout' | 'stderr') =>
      new Writable({
        write(chunk, _e, cb) {
          text[key] += String(chunk);
          cb();
        },
      });
    const status = await main(argv, COMMANDS, { stdout: sink('stdout'), stderr: sink('stderr'), env: { NINODES_CACHE: join(dir, 'cache') } });
    return { status, ...text };
  };
}
