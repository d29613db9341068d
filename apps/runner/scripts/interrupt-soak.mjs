#!/usr/bin/env node
// Interrupt soak (issue 17): runs the built CLI many times and interrupts each at a random point
// with SIGINT or SIGTERM, then counts what a user must never see. Not a test (it takes minutes):
//   node apps/runner/scripts/interrupt-soak.mjs [runs=200] [seed=1]
// Prints one JSON line of counts; exits 1 if any crash, hang, leftover or inconsistent output.
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { openSafetensors } from '@ninodes/memory';
import { H3_DEFAULTS, writeSyntheticH3Checkpoint } from '@ninodes/models';

const CLI = fileURLToPath(new URL('../dist/cli.js', import.meta.url));
const runs = Number(process.argv[2] ?? 200);
let x = Number(process.argv[3] ?? 1) >>> 0 || 1;
const rand = () => {
  x ^= x << 13;
  x >>>= 0;
  x ^= x >>> 17;
  x ^= x << 5;
  x >>>= 0;
  return x / 2 ** 32;
};

const dir = mkdtempSync(join(tmpdir(), 'ninodes-soak-'));
const ckpt = join(dir, 'micro.safetensors');
await writeSyntheticH3Checkpoint(ckpt, { config: { ...H3_DEFAULTS, layers: 2, hidden: 256, heads: 4, headDim: 64, ffn: 512, tDim: 256, timeHidden: 256, ropeLen: 8 }, seed: 7 });
const LEFT = /\.ninodes-|staging|partial|\.tmp$|\.lock$|takeover|\.txn$/;
const leftovers = (d) => (existsSync(d) ? readdirSync(d).filter((n) => LEFT.test(n)) : []);

function consistent(out) {
  if (!existsSync(out)) return true;
  const names = readdirSync(out).sort().join();
  if (names !== 'latent.safetensors,preview.png,report.json') return false;
  const report = JSON.parse(readFileSync(join(out, 'report.json'), 'utf8'));
  const s = openSafetensors(join(out, 'latent.safetensors'));
  try {
    return createHash('sha256').update(s.tensor('latent').bytes()).digest('hex') === report.output.latentSha256;
  } finally {
    s.close();
  }
}

const counts = { runs: 0, finished: 0, interrupted: 0, codedErrors: 0, crashes: 0, hangs: 0, leftovers: 0, inconsistent: 0 };
const problems = [];
const codes = {};
for (let i = 0; i < runs; i++) {
  const kind = rand() < 0.1 ? 'preset' : rand() < 0.5 ? 'quantize' : 'run';
  const work = join(dir, `w${i}`);
  const cache = join(dir, `cache${i % 4}`);
  const out = join(work, 'out');
  mkdirSync(work);
  const args =
    kind === 'quantize'
      ? ['quantize', ckpt, join(work, 'q.safetensors'), '--format', rand() < 0.5 ? 'int8_convrot' : 'fp8_e4m3fn']
      : ['run', ...(kind === 'preset' ? ['--preset', 'h3-tiny'] : ['--model', ckpt]), '--frames', '2', '--height', '16', '--width', '16', '--steps', '4', '--threads', '1', '--out', out, ...(rand() < 0.3 ? ['--force'] : [])];
  const signal = rand() < 0.5 ? 'SIGINT' : 'SIGTERM';
  const delay = Math.floor(rand() * (kind === 'preset' ? 4000 : 1500));
  const child = spawn(process.execPath, [CLI, ...args], { stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, NINODES_CACHE: cache } });
  let stderr = '';
  child.stderr.on('data', (d) => (stderr += d));
  const end = await new Promise((resolve) => {
    const kill = setTimeout(() => child.kill(signal), delay);
    const hang = setTimeout(() => {
      child.kill('SIGKILL');
      resolve({ hung: true });
    }, 120_000);
    child.on('exit', (status, sig) => {
      clearTimeout(kill);
      clearTimeout(hang);
      resolve({ status, sig });
    });
  });
  counts.runs++;
  const tag = `${i} ${kind} ${signal}@${delay}ms`;
  if (end.hung) {
    counts.hangs++;
    problems.push(`${tag}: hang`);
  } else if (end.status === 0) counts.finished++;
  else if (end.sig === signal) counts.interrupted++;
  else if (end.status === 1 && /^error [A-Z_]+:/m.test(stderr) && !/INTERNAL/.test(stderr)) {
    counts.codedErrors++;
    const code = /^error ([A-Z_]+):/m.exec(stderr)[1];
    codes[code] = (codes[code] ?? 0) + 1;
    if (process.env.SOAK_VERBOSE) problems.push(`${tag}: ${stderr}`);
  }
  else {
    counts.crashes++;
    problems.push(`${tag}: ${end.sig ?? end.status} ${stderr.trim().split('\n').pop()}`);
  }
  const left = [...leftovers(work), ...leftovers(cache), ...leftovers(out)];
  if (left.length > 0) {
    counts.leftovers++;
    problems.push(`${tag}: left ${left.join(', ')}`);
  }
  if (kind !== 'quantize' && !consistent(out)) {
    counts.inconsistent++;
    problems.push(`${tag}: inconsistent ${out}`);
  }
  rmSync(work, { recursive: true, force: true });
}
rmSync(dir, { recursive: true, force: true });
for (const p of problems.slice(0, 20)) process.stderr.write(`${p}\n`);
process.stdout.write(`${JSON.stringify({ ...counts, codes })}\n`);
process.exitCode = counts.crashes + counts.hangs + counts.leftovers + counts.inconsistent > 0 ? 1 : 0;
