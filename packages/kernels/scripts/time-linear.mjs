// Standalone timing of the matmul-heavy ops (not a test, not the benchmark suite): fp32 linear,
// int8 linear (rotation + quantization + matmul + dequant), bare int8 matmul, the CPU time of each
// int8Linear pass on every int8 backend, Hadamard vs memcpy, and whether oneDNN fp32 matmul is
// bit-identical across thread counts.
// Usage: node packages/kernels/scripts/time-linear.mjs [M] [K] [N]   (after building the package)
import {
  dequantizeInt8Accumulators,
  getThreads,
  hadamardSync,
  int8Backends,
  int8Linear,
  int8Matmul,
  linear,
  quantizeRowsInt8,
  quantizeWeightInt8,
  setThreads,
  Tensor,
} from '../dist/index.js';

const [M, K, N] = process.argv.slice(2).map(Number);
const shapes = M ? [[M, K, N]] : [[256, 3072, 3072], [1024, 3072, 3072], [1024, 5376, 5376]];

function rand(n, seed) {
  const a = new Float32Array(n);
  let s = seed;
  for (let i = 0; i < n; i++) {
    s = (Math.imul(s, 1103515245) + 12345) | 0;
    a[i] = ((s >>> 8) / 2 ** 24) * 2 - 1;
  }
  return a;
}

async function best(fn, reps = 9) {
  await fn();
  let t = Infinity;
  for (let i = 0; i < reps; i++) {
    const t0 = process.hrtime.bigint();
    await fn();
    t = Math.min(t, Number(process.hrtime.bigint() - t0) / 1e9);
  }
  return t;
}

console.log(`threads ${getThreads()}`);
for (const [m, k, n] of shapes) {
  const x = Tensor.fromArray('f32', [m, k], rand(m * k, 1));
  const w = Tensor.fromArray('f32', [n, k], rand(n * k, 2));
  const { q, scale } = quantizeWeightInt8(w, { convrot: 256 });
  const qx = Tensor.fromArray('i8', [m, k], Int8Array.from(rand(m * k, 3), (v) => Math.round(v * 127)));
  const flop = 2 * m * k * n;
  const tf = await best(() => linear(x, w));
  const ti = await best(() => int8Linear(x, q, scale, { convrot: 256 }));
  const tm = await best(() => int8Matmul(qx, q));
  const g = (t) => (flop / t / 1e9).toFixed(1);
  console.log(
    `M=${m} K=${k} N=${n}: fp32 ${g(tf)} GFLOP/s, int8Linear ${g(ti)}, int8Matmul ${g(tm)} | int8Linear/fp32 ${(tf / ti).toFixed(2)}x, int8Linear vs bare matmul ${(ti / tm).toFixed(2)}x time`,
  );
}

// CPU time (both threads, so other load on a shared machine counts less than in wall time) of
// int8Linear's passes: rotate + quantize, the bare matmul on each backend, the dequant epilogue,
// and the whole int8Linear on each backend (where the amx and vnni kernels fuse the passes).
async function bestCpu(fn, reps = 7) {
  await fn();
  let t = Infinity;
  for (let i = 0; i < reps; i++) {
    const c0 = process.cpuUsage();
    await fn();
    const c = process.cpuUsage(c0);
    t = Math.min(t, (c.user + c.system) / 1000);
  }
  return t;
}
for (const [m, k, n] of shapes) {
  const x = Tensor.fromArray('f32', [m, k], rand(m * k, 1));
  const { q, scale } = quantizeWeightInt8(Tensor.fromArray('f32', [n, k], rand(n * k, 2)), { convrot: 256 });
  const bias = Tensor.fromArray('f32', [n], rand(n, 5));
  const rows = quantizeRowsInt8(x, { convrot: 256 });
  const acc = await int8Matmul(rows.q, q);
  const parts = [
    `quantize ${(await bestCpu(() => quantizeRowsInt8(x, { convrot: 256 }))).toFixed(1)}`,
    `dequant ${(await bestCpu(() => dequantizeInt8Accumulators(acc, rows.scale, scale, bias))).toFixed(1)}`,
  ];
  for (const backend of int8Backends()) {
    const mm = await bestCpu(() => int8Matmul(rows.q, q, { backend }));
    const lin = await bestCpu(() => int8Linear(x, q, scale, { convrot: 256, bias, backend }));
    parts.push(`${backend}: matmul ${mm.toFixed(1)} int8Linear ${lin.toFixed(1)}`);
  }
  console.log(`M=${m} K=${k} N=${n} CPU ms (min): ${parts.join(' | ')}`);
}

// Hadamard GB/s vs memcpy (read + write of the same bytes).
{
  const x = Tensor.fromArray('f32', [4096, 3072], rand(4096 * 3072, 4));
  const bytes = x.byteLength * 2;
  const th = await best(() => hadamardSync(x, { group: 256 }));
  const out = Tensor.zeros('f32', x.shape);
  const to = await best(() => hadamardSync(x, { group: 256, out }));
  const dst = new Uint8Array(x.byteLength);
  const tc = await best(() => dst.set(x.bytes()));
  const gb = (t) => (bytes / t / 1e9).toFixed(2);
  console.log(`hadamard256 into out ${gb(to)} GB/s (fresh output each call ${gb(th)}), memcpy ${gb(tc)} GB/s, ratio ${(tc / to).toFixed(2)}`);
}

// oneDNN fp32 determinism across thread counts.
{
  const initial = getThreads();
  const results = [];
  for (const [m, k, n] of [[64, 1024, 256], [256, 3072, 512], [1000, 777, 333]]) {
    const x = Tensor.fromArray('f32', [m, k], rand(m * k, 5));
    const w = Tensor.fromArray('f32', [n, k], rand(n * k, 6));
    const outs = [];
    for (const t of [1, 2, 1]) {
      setThreads(t);
      outs.push(Buffer.from((await linear(x, w)).bytes()));
    }
    let differ = 0;
    const a = new Float32Array(outs[0].buffer, outs[0].byteOffset, m * n), b = new Float32Array(outs[1].buffer, outs[1].byteOffset, m * n);
    for (let i = 0; i < m * n; i++) if (a[i] !== b[i]) differ++;
    results.push(`[${m},${k},${n}] 1 vs 2 threads: ${differ} of ${m * n} elements differ; 1 vs 1 again: ${outs[0].equals(outs[2]) ? 'identical' : 'DIFFERENT'}`);
  }
  setThreads(initial);
  console.log(`oneDNN fp32 determinism:\n  ${results.join('\n  ')}`);
}
