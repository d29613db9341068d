// Faults of mapped and native memory, each in a child process: a crash there is a signal death the
// test can see (in this process it would take the test runner down with it).
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';

const HANG_MS = Number(process.env.NINODES_TEST_HANG_MS ?? 900_000); // the shared hang guard (vitest.shared.ts)

const dist = fileURLToPath(new URL('../dist/index.js', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'ninodes-faults-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

interface ChildResult {
  status: number | null;
  signal: NodeJS.Signals | null;
  out: Record<string, unknown>;
  stderr: string;
}

// Runs an ES module body with `k` (the built kernels package) and `path` in scope; its last stdout
// line is JSON. A bounded timeout turns a hang into a failure instead of a stuck suite.
function runChild(body: string, path: string): ChildResult {
  const script = `const k = await import(${JSON.stringify(dist)}); const path = ${JSON.stringify(path)};\n${body}`;
  const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8', timeout: HANG_MS });
  const last = r.stdout.trim().split('\n').pop() ?? '';
  let out: Record<string, unknown> = {};
  try {
    out = JSON.parse(last) as Record<string, unknown>;
  } catch {
    out = { unparsed: last };
  }
  return { status: r.status, signal: r.signal, out, stderr: r.stderr };
}

// A file of `rows` x `cols` f32 weights with known values, and helpers, shared by the child scripts.
const prelude = `
const fs = await import('node:fs');
function writeWeights(path, rows, cols) {
  const w = new Float32Array(rows * cols);
  for (let i = 0; i < w.length; i++) w[i] = ((i * 7919) % 1000) / 1000 - 0.5;
  fs.writeFileSync(path, new Uint8Array(w.buffer));
}
function mappedF32(file, rows, cols) {
  const buf = file.view(0, rows * cols * 4);
  return new k.Tensor('f32', [rows, cols], buf, { owner: file.viewOwner(buf) });
}
`;

describe('a checkpoint truncated while mapped (issue 17.1)', () => {
  it('ends a loop of async kernels over the mapping with FILE_TRUNCATED naming the file, not SIGBUS', () => {
    const path = join(dir, 'truncated-async.bin');
    const r = runChild(
      `${prelude}
      const rows = 1024, cols = 2048;
      writeWeights(path, rows, cols);
      const file = k.MappedFile.open(path);
      const w = mappedF32(file, rows, cols);
      const x = k.Tensor.f32([4, cols], Array.from({ length: 4 * cols }, (_, i) => (i % 13) / 13));
      const first = await k.linear(x, w);
      let error, after = 0;
      for (let step = 0; step < 20; step++) {
        if (step === 2) fs.truncateSync(path, 4096);
        try { await k.linear(x, w); after++; } catch (e) { error = e; break; }
      }
      console.log(JSON.stringify({ firstFinite: Number.isFinite(first.data[0]), code: error?.code, message: error?.message, after }));`,
      path,
    );
    expect(r.signal, r.stderr).toBeNull();
    expect(r.status, r.stderr).toBe(0);
    expect(r.out.firstFinite).toBe(true);
    expect(r.out.code).toBe('FILE_TRUNCATED');
    expect(r.out.message).toContain(path);
    expect(r.out.after).toBe(2);
  });

  it('a read of a truncated mapping on the JS thread does not kill the process, and the next use fails with FILE_TRUNCATED', () => {
    const path = join(dir, 'truncated-js.bin');
    const r = runChild(
      `${prelude}
      const rows = 64, cols = 1024;
      writeWeights(path, rows, cols);
      const file = k.MappedFile.open(path);
      const w = mappedF32(file, rows, cols);
      fs.truncateSync(path, 4096);
      const last = w.data[rows * cols - 1];
      const codes = [];
      for (const use of [() => file.sumBytes(0, file.byteLength), () => file.touch(0, file.byteLength), () => file.verify(), () => k.dequantizeSync(w), () => k.hadamardSync(w)]) {
        try { use(); codes.push('none'); } catch (e) { codes.push(e.code + (String(e.message).includes(path) || e.where === path ? '@path' : '')); }
      }
      let asyncCode;
      try { await k.linear(k.Tensor.zeros('f32', [1, cols]), w); } catch (e) { asyncCode = e.code + (String(e.message).includes(path) ? '@path' : ''); }
      console.log(JSON.stringify({ last, codes, asyncCode }));`,
      path,
    );
    expect(r.signal, r.stderr).toBeNull();
    expect(r.status, r.stderr).toBe(0);
    expect(r.out.last).toBe(0);
    expect(r.out.codes).toEqual(Array(5).fill('FILE_TRUNCATED@path'));
    expect(r.out.asyncCode).toBe('FILE_TRUNCATED@path');
  });

  it('a SIGBUS outside ninodes mappings still kills the process (the default action is kept)', () => {
    const path = join(dir, 'foreign.bin');
    // Node's own fs has no mmap; a foreign SIGBUS is raised directly. The addon is loaded first.
    const r = runChild(`${prelude} k.pageSize(); process.kill(process.pid, 'SIGBUS'); await new Promise((r) => setTimeout(r, 2000)); console.log('{}');`, path);
    expect(r.signal).toBe('SIGBUS');
  });
});

describe('memory released while an async kernel uses it (issue 17.2)', () => {
  const closeDuring = (op: string): string => `${prelude}
      const rows = 512, cols = 1024;
      writeWeights(path, rows, cols);
      let ok = 0; const codes = {};
      const expected = await (async () => { const f = k.MappedFile.open(path); const r = await run(f); f.close(); return r; })();
      async function run(f) {
        ${op}
      }
      for (let i = 0; i < 40; i++) {
        const f = k.MappedFile.open(path);
        const p = run(f);
        f.close();
        try { const got = await p; if (got === expected) ok++; else codes.WRONG = (codes.WRONG ?? 0) + 1; }
        catch (e) { codes[e.code] = (codes[e.code] ?? 0) + 1; }
      }
      console.log(JSON.stringify({ ok, codes }));`;

  const checksum = 'let s = 0; for (const v of out.data) s += v; return s.toFixed(3);';

  it('closing the file during async linear: a result or a coded error, never a crash', () => {
    const r = runChild(
      closeDuring(`const w = mappedF32(f, rows, cols); const x = k.Tensor.f32([32, cols], Array.from({ length: 32 * cols }, (_, i) => (i % 11) / 11));
        const out = await k.linear(x, w); ${checksum}`),
      join(dir, 'close-linear.bin'),
    );
    expect(r.signal, r.stderr).toBeNull();
    expect(r.status, r.stderr).toBe(0);
    expect(r.out.codes).toEqual({});
    expect(r.out.ok).toBe(40);
  });

  it('closing the file during async attention: the result is whole', () => {
    const r = runChild(
      closeDuring(`const buf = f.view(0, rows * cols * 4); const t = new k.Tensor('f32', [8, rows / 8 * 2, cols / 2], buf, { owner: f.viewOwner(buf) });
        const out = await k.attention(t, t, t); ${checksum}`),
      join(dir, 'close-attention.bin'),
    );
    expect(r.signal, r.stderr).toBeNull();
    expect(r.status, r.stderr).toBe(0);
    expect(r.out.codes).toEqual({});
    expect(r.out.ok).toBe(40);
  });

  it('closing the file during async dequantize: the result is whole', () => {
    const r = runChild(
      closeDuring(`const buf = f.view(0, rows * cols * 4); const t = new k.Tensor('f32', [rows, cols], buf, { owner: f.viewOwner(buf) });
        const out = await k.dequantize(t); ${checksum}`),
      join(dir, 'close-dequantize.bin'),
    );
    expect(r.signal, r.stderr).toBeNull();
    expect(r.status, r.stderr).toBe(0);
    expect(r.out.codes).toEqual({});
    expect(r.out.ok).toBe(40);
  });

  it('disposing native memory during async attention and dequantize: the result is whole', () => {
    const r = runChild(
      `${prelude}
      const h = 8, s = 256, d = 128;
      function input() { const t = k.allocateNative('f32', [h, s, d]); const a = t.data; for (let i = 0; i < a.length; i++) a[i] = ((i * 31) % 97) / 97 - 0.5; return t; }
      const sum = (t) => { let x = 0; for (const v of t.data) x += v; return x.toFixed(3); };
      const ref = input();
      const expectAtt = sum(await k.attention(ref, ref, ref));
      const expectDq = sum(await k.dequantize(ref));
      let ok = 0; const codes = {};
      for (let i = 0; i < 40; i++) {
        const q = input();
        const pa = k.attention(q, q, q);
        q.dispose();
        const z = input();
        const pd = k.dequantize(z);
        z.dispose();
        for (const [p, want] of [[pa, expectAtt], [pd, expectDq]]) {
          try { const got = sum(await p); if (got === want) ok++; else codes.WRONG = (codes.WRONG ?? 0) + 1; }
          catch (e) { codes[e.code] = (codes[e.code] ?? 0) + 1; }
        }
      }
      console.log(JSON.stringify({ ok, codes }));`,
      join(dir, 'unused.bin'),
    );
    expect(r.signal, r.stderr).toBeNull();
    expect(r.status, r.stderr).toBe(0);
    expect(r.out.codes).toEqual({});
    expect(r.out.ok).toBe(80);
  });
});
