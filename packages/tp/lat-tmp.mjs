import { createCommunicator, setThreads } from '@ninodes/kernels';
const rank = Number(process.argv[2]); const dir = process.argv[3]; const n = Number(process.argv[4] ?? 2000); const len = Number(process.argv[5] ?? 1);
setThreads(1);
const comm = await createCommunicator({ rank, size: 2, store: { kind: 'file', path: dir }, prefix: 'lat', timeoutMs: 60000 });
const buf = new Float32Array(len);
for (let i = 0; i < 100; i++) await comm.allreduce(buf, "sum"); for (let rep = 0; rep < 3; rep++) {
  const c0 = process.cpuUsage(); const t0 = performance.now();
for (let i = 0; i < n; i++) await comm.allreduce(buf, 'sum');
const dt = performance.now() - t0; const cu = process.cpuUsage(c0);
console.log(`rank ${rank} len ${len}: ${(dt / n * 1000).toFixed(1)} us/op wall, cpu ${((cu.user + cu.system) / n).toFixed(1)} us/op`);
}
await comm.close();
