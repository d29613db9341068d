// Names from a file (tensor names) and paths reach the terminal escaped: no escape sequence that
// retitles the window or clears the screen, no BiDi override, no newline that forges an
// `error CODE:` line. --json output is JSON's own escaping and is left alone.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Tensor } from '@ninodes/kernels';
import { tensorSources, writeSafetensors } from '@ninodes/memory';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inProcessCli } from '../test-support/in-process-cli.js';

const dir = mkdtempSync(join(tmpdir(), 'ninodes-terminal-'));
const cli = inProcessCli(dir);
const hostile = ['t\x1b]0;pwned\x07.weight', 'u\u202egnp.exe.weight', 'v\nerror FAKE_CODE: forged.weight', 'w\x1b[2J.weight'];
const file = join(dir, 'hostile.safetensors');

/** True when `text` holds a raw control or BiDi character, or a line that a real error line could be. */
function unsafe(text: string): string | undefined {
  const raw = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/.exec(text);
  if (raw !== null) return `raw U+${raw[0].codePointAt(0)!.toString(16)}`;
  return text.split('\n').find((l) => /^error FAKE_CODE/.test(l));
}

beforeAll(async () => {
  await writeSafetensors(file, tensorSources(Object.fromEntries(hostile.map((n, i) => [n, Tensor.f32([2, 2], [i, i, i, i])]))));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('terminal output of names from files', () => {
  it('inspect lists hostile tensor names escaped; --json keeps them exact', async () => {
    const r = await cli('inspect', file);
    expect(r.status, r.stderr).toBe(0);
    expect(unsafe(r.stdout + r.stderr)).toBeUndefined();
    expect(r.stdout).toContain('\\x1b]0;pwned\\x07');
    const json = await cli('inspect', file, '--json');
    expect(JSON.stringify(JSON.parse(json.stdout))).toContain(JSON.stringify(hostile[0]).slice(1, -1));
  });

  it('quantize progress and errors that name hostile tensors or paths are escaped', async () => {
    const q = await cli('quantize', file, join(dir, 'q.safetensors'), '--format', 'int8_rowwise');
    expect(unsafe(q.stdout + q.stderr)).toBeUndefined();
    const missing = await cli('inspect', join(dir, 'no\nerror FAKE_CODE: x\x1b[2J.safetensors'));
    expect(missing.status).toBe(1);
    expect(missing.stderr).toContain('error FILE_NOT_FOUND:');
    expect(unsafe(missing.stderr)).toBeUndefined();
  });
});
