#!/usr/bin/env node
// ggml's own error against ours on the same GGUF blocks (issue 33): ggml's CPU kernels (the x86
// quants.c this CPU runs: quantize_row_q8_0 / q8_K, then ggml_vec_dot_<type>_q8_<0|K>) compiled
// from a ggml source snapshot, and kernels' ggufLinear, both against the float64 product of the
// inputs with gguf-py's dequantization of the weights (fixtures/gguf). Never needed by the build or
// the tests.
//
//   git --git-dir=<ggml clone>/.git archive d99724f2 src include | tar -x -C /tmp/ggml
//   npm run build && node tools/ggml-gguf-error/measure.mjs /tmp/ggml [--rows 64] [--seed 145]
//
// Prints, per type, max |y - ref| / max |ref| and rms(y - ref) / rms(ref) for ggml and for ours.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Tensor, byteSizeOf, ggufLinear, ggufLinearKernel } from '@ninodes/kernels';
import { GgufCheckpoint, openCheckpoint } from '@ninodes/quant';

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, '..', '..');
const args = process.argv.slice(2);
const ggml = args[0];
if (ggml === undefined || ggml.startsWith('--')) {
  console.error('usage: node tools/ggml-gguf-error/measure.mjs <ggml source dir (src/, include/)> [--rows M] [--seed S]');
  process.exit(2);
}
const option = (name, fallback) => {
  const i = args.indexOf(name);
  return i < 0 ? fallback : Number(args[i + 1]);
};
const M = option('--rows', 64);
const SEED = option('--seed', 145);
const K = 512;
const N = 48; // the fixture's 3 rows of each type, repeated

const work = mkdtempSync(join(tmpdir(), 'ggml-gguf-error-'));
try {
  // As ggml builds its CPU backend for the machine it runs on (GGML_NATIVE): -O2 -march=native.
  const flags = ['-O2', '-march=native', `-I${join(ggml, 'include')}`, `-I${join(ggml, 'src')}`, `-I${join(ggml, 'src', 'ggml-cpu')}`, '-D_GNU_SOURCE'];
  const sources = [join(ggml, 'src', 'ggml-cpu', 'quants.c'), join(ggml, 'src', 'ggml-cpu', 'arch', 'x86', 'quants.c'), join(ggml, 'src', 'ggml-quants.c')];
  const objects = sources.map((s, i) => {
    const o = join(work, `${i}.o`);
    execFileSync('gcc', [...flags, '-c', s, '-o', o], { stdio: 'inherit' });
    return o;
  });
  const dot = join(work, 'ggml_dot');
  execFileSync('gcc', [...flags, join(here, 'ggml_dot.c'), join(here, 'ggml_stubs.c'), ...objects, '-o', dot, '-lm'], { stdio: 'inherit' });

  // Seeded normal inputs (mulberry32 + Box-Muller): the same for both.
  let state = SEED >>> 0;
  const uniform = () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const x = new Float32Array(M * K);
  for (let i = 0; i < x.length; i++) x[i] = Math.sqrt(-2 * Math.log(1 - uniform())) * Math.cos(2 * Math.PI * uniform());
  writeFileSync(join(work, 'x.f32'), x);

  const gguf = GgufCheckpoint.open(join(root, 'fixtures', 'gguf', 'quants.gguf'));
  const expected = openCheckpoint(join(root, 'fixtures', 'gguf', 'quants.expected.safetensors'));
  console.log(`M=${M} K=${K} N=${N}, normal inputs (seed ${SEED}); error relative to the float64 product with gguf-py's dequantized weights; ours: ${ggufLinearKernel()} kernel`);
  console.log('type  | ggml max   | ours max   | ggml rms   | ours rms');
  for (const type of ['q8_0', 'q4_0', 'q4_k', 'q5_k', 'q6_k']) {
    const stored = gguf.tensor(`t.${type}`).bytes();
    const rowBytes = byteSizeOf(type, [1, K]);
    const want = new Float32Array(expected.tensor(`t.${type}`).copy().data);
    const blocks = new Uint8Array(N * rowBytes);
    const w = new Float64Array(N * K);
    for (let r = 0; r < N; r++) {
      blocks.set(stored.subarray((r % 3) * rowBytes, (r % 3 + 1) * rowBytes), r * rowBytes);
      w.set(want.subarray((r % 3) * K, (r % 3 + 1) * K), r * K);
    }
    writeFileSync(join(work, 'w.bin'), blocks);
    execFileSync(dot, [type, String(M), String(K), String(N), join(work, 'x.f32'), join(work, 'w.bin'), join(work, 'y.f32')]);
    const theirs = new Float32Array(readFileSync(join(work, 'y.f32')).buffer.slice(0));
    const ours = (await ggufLinear(new Tensor('f32', [M, K], x.buffer), new Tensor(type, [N, K], blocks.buffer))).data;
    const ref = new Float64Array(M * N);
    for (let i = 0; i < M; i++) for (let j = 0; j < N; j++) {
      let s = 0;
      for (let t = 0; t < K; t++) s += x[i * K + t] * w[j * K + t];
      ref[i * N + j] = s;
    }
    const stats = (y) => {
      let maxErr = 0, maxRef = 0, se = 0, sr = 0;
      for (let i = 0; i < ref.length; i++) {
        const e = y[i] - ref[i];
        maxErr = Math.max(maxErr, Math.abs(e));
        maxRef = Math.max(maxRef, Math.abs(ref[i]));
        se += e * e;
        sr += ref[i] * ref[i];
      }
      return { max: maxErr / maxRef, rms: Math.sqrt(se / sr) };
    };
    const g = stats(theirs);
    const o = stats(ours);
    const f = (v) => v.toExponential(2).padEnd(10);
    console.log(`${type.padEnd(5)} | ${f(g.max)} | ${f(o.max)} | ${f(g.rms)} | ${f(o.rms)}`);
  }
  gguf.close();
  expected.close();
} finally {
  rmSync(work, { recursive: true, force: true });
}
