import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createProgress, progressMode } from './progress.js';

function sink(): { stream: Writable; text: () => string } {
  const parts: string[] = [];
  const stream = new Writable({
    write(chunk, _enc, cb) {
      parts.push(String(chunk));
      cb();
    },
  });
  return { stream, text: () => parts.join('') };
}

describe('progress', () => {
  it('chooses json for --json, a bar on a terminal, plain lines otherwise', () => {
    expect(progressMode({ json: true, stream: { isTTY: true } })).toBe('json');
    expect(progressMode({ json: false, stream: { isTTY: true } })).toBe('tty');
    expect(progressMode({ json: false, stream: {} })).toBe('plain');
  });

  it('writes one plain line per update, with counts', () => {
    const out = sink();
    let t = 0;
    const task = createProgress('plain', out.stream, () => (t += 500)).task('steps', 2);
    task.tick('step 1');
    task.done();
    expect(out.text()).toBe('steps: 1/2 (0.5s) step 1\nsteps: 2/2 (1.0s)\n');
  });

  it('writes parseable JSON events', () => {
    const out = sink();
    const task = createProgress('json', out.stream, () => 0).task('load', 3);
    task.tick();
    task.done('ok');
    const events = out.text().trim().split('\n').map((l) => JSON.parse(l));
    expect(events).toEqual([
      { event: 'progress', task: 'load', count: 1, total: 3, seconds: 0 },
      { event: 'done', task: 'load', count: 3, total: 3, seconds: 0, detail: 'ok' },
    ]);
  });

  it('redraws one line on a terminal and ends it when done', () => {
    const out = sink();
    const task = createProgress('tty', out.stream, () => 0).task('q', 4);
    task.tick();
    task.done();
    expect(out.text()).toContain('\r\x1b[Kq [######..................] 1/4');
    expect(out.text().endsWith('\n')).toBe(true);
  });
});
