// A CLI's signal manners: on SIGINT, SIGTERM or SIGHUP every temporary file, staging directory
// and lock this process holds is removed (kernels' live registry), then the signal is raised again
// with its default action, so the parent sees a death by that signal (status 130 for Ctrl-C).
// Only a CLI (runner, bench) installs these; libraries never take over a process's signals.
import type { Writable } from 'node:stream';
import { removeLiveTemps } from './temp-files.js';

export function removeTempsOnSignals(stderr: Writable): void {
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    const onSignal = (): void => {
      // A command that took charge of this signal (the tensor-parallel launcher stops its ranks and
      // removes the rendezvous first; a rank discards its staging) ends the process itself.
      if (process.listenerCount(signal) > 0) {
        process.once(signal, onSignal);
        return;
      }
      const removed = removeLiveTemps();
      stderr.write(`\ninterrupted by ${signal}${removed.length > 0 ? `; removed ${removed.length} temporary file(s)` : ''}\n`);
      // `once` has removed our listener, so this raise takes the default action. The signal may land
      // on another thread a moment later: block this one meanwhile, so no JS runs on after its
      // temporaries are gone (a writer would then fail to rename them and print a false error).
      process.kill(process.pid, signal);
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 2000);
      process.exit(128 + (signal === 'SIGINT' ? 2 : signal === 'SIGTERM' ? 15 : 1));
    };
    process.once(signal, onSignal);
  }
  // A safety net for paths that end the process without unwinding (process.exit in a dependency).
  process.once('exit', () => removeLiveTemps());
}
