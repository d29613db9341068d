// Standalone timing of the GGUF decoder and tiled attention (not a test; the real benchmarks live
// in apps/bench). Run after `npm run build -w @ninodes/kernels`:
//   node packages/kernels/scripts/time-ops.mjs [gguf|attention|all] [--threads N] [--cpu]
import { performance } from 'node:perf_hooks';
import { BLOCK_DTYPES, Tensor, attention, attentionNaive, buildInfo, dequantize, reference, setThreads } from '../dist/index.js';

const args = process.argv.slice(2);
const what = args.find((a) => !a.startsWith('--')) ?? 'all';
// --cpu: time by this process's CPU time instead of wall time (robust on a shared, loaded machine;
// meaningful with --threads 1, where CPU time is the time of the one thread working).
const useCpu = args.includes('--cpu');

const threadsFlag = args.indexOf('--threads');
if (threadsFlag >= 0) {
  setThreads(Number(args[threadsFlag + 1]));
}
const info = buildInfo();
console.log(`simd ${info.simd}, threads ${info.threads}, ${info.compiler}, oneDNN ${info.onednn}, timing by ${useCpu ? 'process CPU time' : 'wall clock'}`);

async function best(fn, reps) {
  let min = Infinity;
  for (let i = 0; i < reps; i++) {
    const c0 = process.cpuUsage();
    const t0 = performance.now();
    await fn();
    const c = process.cpuUsage(c0);
    min = Math.min(min, useCpu ? (c.user + c.system) / 1000 : performance.now() - t0);
  }
  return min / 1000;
}

function randomF32(shape, seed) {
  const n = shape.reduce((a, b) => a * b, 1);
  const a = new Float32Array(n);
  let s = seed;
  for (let i = 0; i < n; i++) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    a[i] = s / 2 ** 31 - 1;
  }
  return Tensor.fromArray('f32', shape, a);
}

// Byte offsets of the fp16 scale/min fields inside each block (ggml block structs).
const HALF_FIELDS = {
  q4_0: [0], q4_1: [0, 2], q5_0: [0], q5_1: [0, 2], q8_0: [0], q2_k: [80, 82], q3_k: [108],
  q4_k: [0, 2], q5_k: [0, 2], q6_k: [208], iq4_nl: [0], iq4_xs: [0],
};

if (what === 'gguf' || what === 'all') {
  const elements = 4096 * 4096;
  const dst = new Float32Array(elements);
  const src = new Float32Array(elements).fill(1);
  const memcpy = await best(() => dst.set(src), 5);
  console.log(`\nGGUF decode, ${elements / 2 ** 20} Mi values -> f32 (best of 5)`);
  console.log(`memcpy of the f32 output size: ${((elements * 4) / memcpy / 1e9).toFixed(2)} GB/s`);
  console.log('fresh = new output tensor per call (allocation + page faults); into = opts.out reused');
  console.log('type      fresh out GB/s  into: in GB/s  out GB/s  out/memcpy');
  const out = Tensor.zeros('f32', [4096, 4096]);
  for (const dtype of ['f16', 'bf16', ...Object.keys(BLOCK_DTYPES)]) {
    const bytesPer = dtype === 'f16' || dtype === 'bf16' ? 2 : BLOCK_DTYPES[dtype].blockBytes / BLOCK_DTYPES[dtype].blockElements;
    const raw = new Uint8Array(Math.round(elements * bytesPer));
    // Random bytes, but every fp16 value (elements, block scales and mins) a sane normal number,
    // as in real checkpoints; random halves would be full of NaNs and subnormals.
    let seed = 12345;
    for (let i = 0; i < raw.length; i++) {
      seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0;
      raw[i] = seed >>> 24;
    }
    const sane = (o) => {
      raw[o] = raw[o + 1] & 0xff;
      raw[o + 1] = 0x20 | (raw[o + 1] & 0x83);
    };
    if (dtype === 'f16' || dtype === 'bf16') {
      for (let o = 0; o < raw.length; o += 2) {
        if (dtype === 'f16') sane(o);
        else raw[o + 1] = 0x3c | (raw[o + 1] & 0x80);
      }
    } else {
      const { blockBytes } = BLOCK_DTYPES[dtype];
      const fields = HALF_FIELDS[dtype];
      for (let b = 0; b < raw.length; b += blockBytes) for (const f of fields) sane(b + f);
    }
    const x = new Tensor(dtype, [4096, 4096], raw.buffer);
    const fresh = await best(() => dequantize(x), 5);
    const t = await best(() => dequantize(x, 'f32', { out }), 5);
    const inGb = raw.length / t / 1e9;
    const outGb = (elements * 4) / t / 1e9;
    console.log(
      `${dtype.padEnd(8)} ${((elements * 4) / fresh / 1e9).toFixed(2).padStart(14)} ${inGb.toFixed(2).padStart(14)} ${outGb.toFixed(2).padStart(9)} ${(memcpy / t).toFixed(2).padStart(11)}`,
    );
  }
  const small = new Tensor('q4_k', [64, 4096], new Uint8Array(64 * 16 * 144).buffer);
  const tRef = await best(() => reference.dequantize(small), 3);
  const tNat = await best(() => dequantize(small), 3);
  console.log(`q4_k [64,4096]: native ${(tNat * 1e3).toFixed(3)} ms, TS reference ${(tRef * 1e3).toFixed(2)} ms`);
}

if (what === 'attention' || what === 'all') {
  console.log('\nattention fp32, q/k/v [H, S, D], S = T (best of N); naive = materialized S×T softmax (native)');
  console.log('   S    D  H   tiled ms  GFLOP/s   naive ms  naive GFLOP/s  speedup  naive scores MiB');
  for (const d of [64, 128]) {
    for (const s of [1024, 2048, 4096, 8192]) {
      const h = s >= 8192 ? 1 : s >= 4096 ? 2 : 4;
      const q = randomF32([h, s, d], 1);
      const k = randomF32([h, s, d], 2);
      const v = randomF32([h, s, d], 3);
      const flops = 4 * h * s * s * d;
      const reps = s >= 4096 ? 1 : 3;
      const tTiled = await best(() => attention(q, k, v), reps);
      const tNaive = await best(() => attentionNaive(q, k, v), reps);
      console.log(
        `${String(s).padStart(5)} ${String(d).padStart(4)} ${String(h).padStart(2)} ${(tTiled * 1e3).toFixed(1).padStart(10)} ${(flops / tTiled / 1e9).toFixed(1).padStart(8)} ${(tNaive * 1e3).toFixed(1).padStart(10)} ${(flops / tNaive / 1e9).toFixed(1).padStart(14)} ${(tNaive / tTiled).toFixed(2).padStart(8)} ${((s * s * 4) / 2 ** 20).toFixed(0).padStart(17)}`,
      );
    }
  }
}
