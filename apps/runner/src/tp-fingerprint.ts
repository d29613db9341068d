// Before step 1 the ranks of a tensor-parallel run prove they run the same thing: each hashes the
// checkpoint it opened and the settings it runs with, the hashes are allgathered, and a rank that
// differs is named. Without it, ranks started by hand on two checkpoints of the same shapes, or with
// another --seed, compute a mix of both and report "latents identical".
import { createHash } from 'node:crypto';
import type { Communicator, Tensor } from '@ninodes/kernels';
import type { CheckpointSource } from '@ninodes/memory';
import { RunnerError } from './error-codes.js';

/** Bytes read of each tensor at its start, middle and end: a cheap sample of the content. */
const SAMPLE = 64;

/**
 * The checkpoint as this rank sees it: metadata, every entry (name, dtype, shape, size) and a
 * content sample of each tensor (three 64-byte reads: a few pages per tensor, milliseconds for a
 * model of hundreds of tensors), so files of the same shapes but other weights differ.
 */
function checkpointHash(source: CheckpointSource): Buffer {
  const h = createHash('sha256');
  h.update(JSON.stringify(source.metadata));
  for (const e of source.entries()) {
    h.update(`${e.name}\0${e.dtype}\0${e.shape.join(',')}\0${e.byteLength}\0`);
    if (e.byteLength === 0) continue;
    const bytes = source.tensor(e.name).bytes();
    const at = (o: number) => bytes.subarray(Math.max(0, Math.min(o, bytes.byteLength - SAMPLE)), Math.min(bytes.byteLength, Math.max(0, o) + SAMPLE));
    h.update(at(0)).update(at(Math.floor(bytes.byteLength / 2))).update(at(bytes.byteLength - SAMPLE));
  }
  return h.digest();
}

/** The settings a rank runs with, and its inputs' bytes (a latent, context or audio given by file). */
function settingsHash(settings: Readonly<Record<string, unknown>>, inputs: readonly (Tensor | undefined)[]): Buffer {
  const h = createHash('sha256').update(JSON.stringify(settings));
  for (const t of inputs) h.update(t === undefined ? '-' : t.bytes());
  return h.digest();
}

const WORDS = 16;

/**
 * Allgathers both hashes and throws TP_RANKS_DISAGREE (naming the ranks and what differs) on every
 * rank when any rank's differ from rank 0's.
 */
export async function checkRanksAgree(comm: Communicator, source: CheckpointSource, settings: Readonly<Record<string, unknown>>, inputs: readonly (Tensor | undefined)[]): Promise<void> {
  const mine = new Int32Array(WORDS);
  const both = Buffer.concat([checkpointHash(source), settingsHash(settings, inputs)]);
  for (let i = 0; i < WORDS; i++) mine[i] = both.readInt32LE(i * 4);
  const all = await comm.allgather(mine);
  const differ = (r: number, from: number, to: number) => all.subarray(r * WORDS + from, r * WORDS + to).some((w, i) => w !== all[from + i]);
  const checkpoint: number[] = [];
  const run: number[] = [];
  for (let r = 1; r < comm.size; r++) {
    if (differ(r, 0, 8)) checkpoint.push(r);
    if (differ(r, 8, 16)) run.push(r);
  }
  if (checkpoint.length === 0 && run.length === 0) return;
  const parts = [
    ...(checkpoint.length > 0 ? [`rank${checkpoint.length > 1 ? 's' : ''} ${checkpoint.join(', ')} opened another checkpoint (its tensors, shapes or weights differ)`] : []),
    ...(run.length > 0 ? [`rank${run.length > 1 ? 's' : ''} ${run.join(', ')} run${run.length > 1 ? '' : 's'} with other settings or inputs (seed, sampler, --quant, sizes, steps, --latent/--context/--audio)`] : []),
  ];
  throw new RunnerError('TP_RANKS_DISAGREE', `rank ${comm.rank} of ${comm.size}: ${parts.join('; ')} than rank 0`, {
    value: { checkpoint, settings: run },
    where: `rank ${[...new Set([...checkpoint, ...run])].join(', ')}`,
    hint: 'start every rank with the same checkpoint file and the same options; only NINODES_TP_RANK differs between ranks',
  });
}
