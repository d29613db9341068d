// One rank of a communicator test, run as a child process by comm.test.ts. Reads its job from
// NINODES_COMM_JOB (JSON), imports the built kernels package, and prints one JSON line with what
// every collective returned (arrays as base64 of their bytes) or the error it failed with.
const job = JSON.parse(process.env.NINODES_COMM_JOB);
const k = await import(job.dist);

const b64 = (a) => Buffer.from(a.buffer, a.byteOffset, a.byteLength).toString('base64');
// The same deterministic inputs the test recomputes in float64.
const f32Input = (rank, n) => Float32Array.from({ length: n }, (_, i) => (((i * 7919 + rank * 104729) % 2001) - 1000) / 37);
const i32Input = (rank, n) => Int32Array.from({ length: n }, (_, i) => ((i * 31 + rank * 1_000_003) % 200_003) - 100_000);
const i8Input = (rank, n) => Int8Array.from({ length: n }, (_, i) => ((i * 13 + rank * 71) % 255) - 127);
// allgatherInto's buffer: this rank's segment holds its input, the others junk it must overwrite.
function gatherBuffer(Type, input, counts, rank) {
  const data = new Type(counts.reduce((a, b) => a + b, 0)).fill(-99);
  data.set(input(rank, counts[rank]), counts.slice(0, rank).reduce((a, b) => a + b, 0));
  return data;
}

const out = { rank: job.rank, pid: process.pid };
try {
  const comm = await k.createCommunicator({ rank: job.rank, size: job.size, store: job.store, prefix: job.prefix, timeoutMs: job.timeoutMs, graceMs: job.graceMs });
  out.connected = true;
  if (job.mode === 'collectives') {
    const n = job.n;
    const sum = f32Input(job.rank, n);
    await comm.allreduce(sum, 'sum');
    const max = f32Input(job.rank, n);
    await comm.allreduce(max, 'max');
    const isum = i32Input(job.rank, n);
    await comm.allreduce(isum, 'sum');
    const imax = i32Input(job.rank, n);
    await comm.allreduce(imax, 'max');
    const bcast = f32Input(job.rank, n);
    await comm.broadcast(bcast, job.size - 1);
    const gathered = await comm.allgather(i32Input(job.rank, job.gather ?? 5));
    await comm.barrier();
    out.stats = comm.stats();
    Object.assign(out, { sum: b64(sum), max: b64(max), isum: b64(isum), imax: b64(imax), bcast: b64(bcast), gathered: b64(gathered) });
  } else if (job.mode === 'segmented') {
    // Per count set: reduceScatter and allreduce of the same inputs (this rank's segment of each),
    // then allgatherInto and allToAll of f32, i32 and i8 segments.
    out.sets = [];
    for (const counts of job.counts) {
      const total = counts.reduce((a, b) => a + b, 0);
      const start = counts.slice(0, job.rank).reduce((a, b) => a + b, 0);
      const own = (a) => b64(a.subarray(start, start + counts[job.rank]));
      const set = {};
      for (const [name, input] of [['f32', f32Input], ['i32', i32Input]]) {
        const rs = input(job.rank, total);
        await comm.reduceScatter(rs, counts);
        const ar = input(job.rank, total);
        await comm.allreduce(ar, 'sum');
        set[`rs_${name}`] = own(rs);
        set[`ar_${name}`] = own(ar);
      }
      const gf = gatherBuffer(Float32Array, (r, n) => f32Input(r + 10, n), counts, job.rank);
      await comm.allgatherInto(gf, counts);
      const gi = gatherBuffer(Int32Array, (r, n) => i32Input(r + 10, n), counts, job.rank);
      await comm.allgatherInto(gi, counts);
      // allToAll: segment p of this rank's input goes to rank p; recv starts as junk.
      for (const [name, Type, input] of [['f32', Float32Array, f32Input], ['i32', Int32Array, i32Input]]) {
        const recv = new Type(job.size * counts[job.rank]).fill(-99);
        await comm.allToAll(input(job.rank + 20, total), recv, counts);
        set[`a2a_${name}`] = b64(recv);
      }
      Object.assign(set, { ag_f32: b64(gf), ag_i32: b64(gi) });
      out.sets.push(set);
    }
    const g8 = gatherBuffer(Int8Array, i8Input, job.i8Counts, job.rank);
    await comm.allgatherInto(g8, job.i8Counts);
    out.ag_i8 = b64(g8);
    const r8 = new Int8Array(job.size * job.i8Counts[job.rank]).fill(-99);
    await comm.allToAll(i8Input(job.rank + 30, job.i8Counts.reduce((a, b) => a + b, 0)), r8, job.i8Counts);
    out.a2a_i8 = b64(r8);
    out.stats = comm.stats();
  } else if (job.mode === 'segmentMismatch') {
    // Same collective and total, different segment counts.
    await comm.reduceScatter(f32Input(job.rank, 8), job.rank === 0 ? [4, 4] : [3, 5]);
  } else if (job.mode === 'die') {
    await comm.barrier();
    if (job.rank === job.victim) process.kill(process.pid, 'SIGKILL');
    // The survivors go on with the step (a `late` one after lateMs, as a rank busy computing);
    // the victim is gone.
    if (job.rank === job.late) await new Promise((r) => setTimeout(r, job.lateMs));
    await comm.allreduce(f32Input(job.rank, 4096), 'sum');
  } else if (job.mode === 'mismatch') {
    // Rank 0 reduces where rank 1 gathers: both must fail, naming the other, at once.
    if (job.rank === 0) await comm.allreduce(f32Input(job.rank, 16), 'sum');
    else await comm.allgather(f32Input(job.rank, 8));
  } else if (job.mode === 'silent') {
    await comm.barrier();
    if (job.rank === job.victim) {
      await new Promise((r) => setTimeout(r, job.sleepMs));
      await comm.barrier();
    } else {
      await comm.allreduce(f32Input(job.rank, 16), 'sum');
    }
  }
  await comm.close();
  out.ok = true;
} catch (e) {
  out.ok = false;
  out.error = { code: e.code, message: e.message, ranks: e.ranks, name: e.name };
  // A survivor killed after its diagnosis, before it closes (its failure keys are in the store).
  if (job.killedAfterFailure === job.rank) {
    console.log(JSON.stringify(out));
    process.kill(process.pid, 'SIGKILL');
  }
}
console.log(JSON.stringify(out));
