// Progress for long phases (loading, quantizing, steps): a redrawn bar on a terminal, plain lines
// when stderr is a pipe or a log, JSON lines for machines (--json). Always on stderr, so stdout
// carries only the command's result.
import type { Writable } from 'node:stream';
import { terminalSafe } from '@ninodes/kernels';

export type ProgressMode = 'tty' | 'plain' | 'json' | 'silent';

export interface ProgressTask {
  tick(detail?: string): void;
  done(detail?: string): void;
}

export interface Progress {
  task(label: string, total: number): ProgressTask;
}

export function progressMode(options: { json: boolean; stream: { isTTY?: boolean } }): ProgressMode {
  if (options.json) return 'json';
  return options.stream.isTTY ? 'tty' : 'plain';
}

function bar(fraction: number, width = 24): string {
  const filled = Math.round(fraction * width);
  return `[${'#'.repeat(filled)}${'.'.repeat(width - filled)}]`;
}

export function createProgress(mode: ProgressMode, stream: Writable, now: () => number = () => performance.now()): Progress {
  return {
    task(label, total) {
      let count = 0;
      let lastEmitted = -1;
      const started = now();
      const elapsed = () => ((now() - started) / 1000).toFixed(1);
      const emit = (final: boolean, detail?: string) => {
        // A detail is often a tensor name from the file: terminal-safe (the JSON line escapes it itself).
        const suffix = detail ? ` ${terminalSafe(detail)}` : '';
        if (mode === 'silent') return;
        // A plain log gets no second line for a task whose last tick already said it was complete.
        if (mode === 'plain' && final && lastEmitted === total && detail === undefined) return;
        lastEmitted = count;
        if (mode === 'json') {
          stream.write(`${JSON.stringify({ event: final ? 'done' : 'progress', task: label, count, total, seconds: Number(elapsed()), ...(detail ? { detail } : {}) })}\n`);
        } else if (mode === 'tty') {
          const fraction = total > 0 ? count / total : 1;
          stream.write(`\r\x1b[K${label} ${bar(fraction)} ${count}/${total} ${elapsed()}s${suffix}${final ? '\n' : ''}`);
        } else {
          stream.write(`${label}: ${count}/${total} (${elapsed()}s)${suffix}\n`);
        }
      };
      return {
        tick(detail) {
          count = Math.min(total, count + 1);
          emit(false, detail);
        },
        done(detail) {
          count = total;
          emit(true, detail);
        },
      };
    },
  };
}
