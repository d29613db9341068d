import { Tensor, int8Linear, int8Matmul, quantizeRowsInt8, hadamard } from '@ninodes/kernels';
const [M, K, N] = (process.argv[2] ?? '1024,3072,3072').split(',').map(Number);
const rounds = Number(process.argv[3] ?? 7);
let s = 1;
const rnd = (n, scale = 1) => { const a = new Float32Array(n); for (let i = 0; i < n; i++) { s ^= s << 13; s ^= s >>> 17; s ^= s << 5; a[i] = ((s >>> 0) / 2 ** 32 * 2 - 1) * scale; } return a; };
const x = Tensor.fromArray('f32', [M, K], rnd(M * K));
const qw = Tensor.fromArray('i8', [N, K], Int8Array.from(rnd(N * K), (v) => Math.round(v * 127)));
const qx = Tensor.fromArray('i8', [M, K], Int8Array.from(rnd(M * K), (v) => Math.round(v * 127)));
const ws = Tensor.fromArray('f32', [N], rnd(N, 0.01).map(Math.abs));
const bias = Tensor.fromArray('f32', [N], rnd(N));
const ops = {
  lin: async () => { await int8Linear(x, qw, ws, { convrot: 256, bias }); },
  mm: async () => { await int8Matmul(qx, qw); },
  had: async () => { await hadamard(x, { group: 256 }); },
  quant: async () => { quantizeRowsInt8(x); },
};
const cpu = async (f) => { const c0 = process.cpuUsage(); const t0 = performance.now(); await f(); const c = process.cpuUsage(c0); return [performance.now() - t0, (c.user + c.system) / 1000]; };
for (const f of Object.values(ops)) await f();
const res = Object.fromEntries(Object.keys(ops).map((k) => [k, { wall: [], cpu: [] }]));
for (let r = 0; r < rounds; r++) {
  const names = Object.keys(ops); if (r % 2) names.reverse();
  for (const n of names) { const [w, c] = await cpu(ops[n]); res[n].wall.push(w); res[n].cpu.push(c); }
}
const med = (v) => [...v].sort((p, q) => p - q)[Math.floor(v.length / 2)];
const line = Object.entries(res).map(([n, v]) => `${n} wall ${med(v.wall).toFixed(1)} cpu ${med(v.cpu).toFixed(1)}`).join(' | ');
const pr = res.lin.wall.map((w, i) => w / res.mm.wall[i]); const pc = res.lin.cpu.map((w, i) => w / res.mm.cpu[i]);
console.log(`M=${M} K=${K} N=${N}: ${line}\n  lin/mm wall ${med(pr).toFixed(3)} cpu ${med(pc).toFixed(3)}`);
