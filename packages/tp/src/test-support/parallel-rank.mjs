// One rank of the parallel-linear test, run as a child process by parallel-linear.test.ts: joins the
// communicator, builds its local ops through parallelLinearProvider over the test's checkpoint, runs
// each layer on its part of the input and prints the outputs (base64 of the f32 bytes) as one JSON line.
// With job.sequence the provider is sequence parallel: a column layer's input holds this rank's rows
// only (the others are filled with large values, which would change every output they reached).
const job = JSON.parse(process.env.NINODES_TP_JOB);
const [kernels, memory, quant, tp] = await Promise.all([job.dist.kernels, job.dist.memory, job.dist.quant, job.dist.tp].map((p) => import(p)));
const { inputOf } = await import(job.inputs);

const out = { rank: job.rank };
let comm;
let source;
try {
  comm = await kernels.createCommunicator({ rank: job.rank, size: job.size, store: { kind: 'file', path: job.storeDir }, prefix: job.prefix, timeoutMs: 30_000 });
  source = memory.SafetensorsFile.open(job.file);
  const plan = tp.shardPlan(job.layout, job.size, { sequence: job.sequence === true });
  const provider = tp.parallelLinearProvider({ provider: quant.createLinearProvider(source), plan, comm, sequence: job.sequence === true });
  const own = quant.sequenceRows(job.m, job.rank, job.size);
  out.y = {};
  for (const group of job.layout.groups) {
    for (const l of group.linears) {
      const op = provider.linear({ name: l.name, inFeatures: l.inFeatures, outFeatures: l.outFeatures, bias: l.bias });
      const x = inputOf(l.name, job.m, l.inFeatures);
      let local = x;
      if (l.role === 'row') {
        // This rank's input columns.
        const k = l.inFeatures / job.size;
        const part = new Float32Array(job.m * k);
        for (let r = 0; r < job.m; r++) part.set(x.subarray(r * l.inFeatures + job.rank * k, r * l.inFeatures + (job.rank + 1) * k), r * k);
        local = part;
      }
      if (job.sequence === true && l.role === 'column') {
        local = x.slice();
        for (let r = 0; r < job.m; r++) if (r < own.start || r >= own.stop) local.fill(1e6 * (job.rank + 1), r * l.inFeatures, (r + 1) * l.inFeatures);
      }
      // Row-parallel layers write into the caller's buffer, as the model's workspace asks them to.
      const into = l.role === 'row' ? kernels.Tensor.zeros('f32', [job.m, l.outFeatures]) : undefined;
      const y = await op.forward(kernels.Tensor.fromArray('f32', [job.m, local.length / job.m], local), into);
      if (into !== undefined && y !== into) throw new Error(`row-parallel ${l.name} did not write into out`);
      out.y[l.name] = { shape: y.shape, b64: Buffer.from(y.data.buffer, y.data.byteOffset, y.data.byteLength).toString('base64') };
      if (l.role === 'row') {
        // A row op's weight is this rank's input columns, whether it holds them alone or the whole
        // layer (exchanged).
        const w = await op.materializedWeight();
        out.y[`${l.name}.weight`] = { shape: w.shape, b64: Buffer.from(w.data.buffer, w.data.byteOffset, w.data.byteLength).toString('base64') };
      }
      if (l.role === 'gathered') {
        // Output features of whole parts (each rank computes its slices of them) and a range that
        // cuts parts; the whole weight, gathered back into the file's row order.
        const part = l.outFeatures / (l.fused.kind === 'parts' ? l.fused.parts : 1);
        for (const [a, b] of part < l.outFeatures ? [[part, l.outFeatures], [0, part], [5, part + 3]] : [[0, part], [5, part - 3]]) {
          const r = await op.forwardRows(kernels.Tensor.fromArray('f32', [job.m, local.length / job.m], local), a, b);
          out.y[`${l.name}[${a},${b})`] = { shape: r.shape, b64: Buffer.from(r.data.buffer, r.data.byteOffset, r.data.byteLength).toString('base64') };
        }
        const w = await op.materializedWeight();
        out.y[`${l.name}.weight`] = { shape: w.shape, b64: Buffer.from(w.data.buffer, w.data.byteOffset, w.data.byteLength).toString('base64') };
      }
    }
  }
  if (job.sequence === true) {
    // The split's gather: rank r fills its rows of [m, 3] with 100·r + the row, the others with -1.
    const split = tp.sequenceSplit(comm);
    const g = kernels.Tensor.fromArray('f32', [job.m, 3], Float32Array.from({ length: job.m * 3 }, (_, i) => (Math.floor(i / 3) >= own.start && Math.floor(i / 3) < own.stop ? 100 * job.rank + Math.floor(i / 3) : -1)));
    await split.gatherRows(g);
    out.gathered = [...g.data];
  }
  out.ok = true;
} catch (e) {
  out.ok = false;
  out.error = { code: e.code, message: e.message, stack: e.stack };
} finally {
  await comm?.close();
  source?.close();
}
console.log(JSON.stringify(out));
