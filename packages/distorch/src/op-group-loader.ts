import { isBlockDType } from '@ninodes/kernels';
import { type CheckpointSource, HostBufferPool, type PooledBuffer } from '@ninodes/memory';
import type { LayoutGroup, LayoutTensor, ModelLayout, PreparedLinearOp } from '@ninodes/quant';
import { countingReader, idleOf, readAll, tensorReader } from './file-group-loader.js';
import type { StagedSource } from './staged-source.js';
import type { GroupFootprint, GroupLoader, LoadedGroup, LoadOptions } from './streaming-executor.js';
import { DistorchError } from './error-codes.js';
import { decodesBlocks } from './memory-account.js';

/**
 * What the loader needs of a linear op: the prepare / held bytes / release part of quant's declared
 * PreparedLinearOp contract. `prepare()` reads and converts the weight without running it;
 * `release()` drops it (the next forward prepares it again from the file). The optional parts:
 * `format` and `storedFormat` tell whether preparing converts (then the stored bytes are not kept);
 * `rowsRead()` limits a read-ahead to the output rows forwards computed (H3's adaLN weights hold the
 * rows of three modalities, a video-only forward computes one); `residentBytes` / `preparingBytes`
 * are quant's memory account of the op (without them a weight counts its bytes as stored).
 */
export type PreparableOp = Pick<PreparedLinearOp, 'prepare' | 'heldBytes' | 'release'> &
  Partial<Pick<PreparedLinearOp, 'format' | 'storedFormat' | 'rowsRead' | 'residentBytes' | 'preparingBytes'>> & { readonly spec: { readonly name: string } };

export interface OpGroupLoaderOptions {
  /**
   * The source the ops were built over, wrapped as a StagedSource: a group's linear weights that
   * are converted are then read with positioned reads (libuv's thread pool, off the JS thread) into
   * pooled buffers and staged there before the ops prepare, so a read ahead overlaps compute; those
   * run as stored are staged as views of the mapping made once and kept (zero-copy, no new external
   * buffer per load). Without it the ops read the mapping where they are, through new views.
   */
  readonly staged?: StagedSource;
  /** Buffers for staged reads (default: a pool without cap, trimmed by `trim()`). */
  readonly pool?: HostBufferPool;
}

export interface OpGroupLoader extends GroupLoader<void> {
  /** Closes the file handles staged reads opened. */
  close(): Promise<void>;
}

/** Whether the op runs its weight in the stored format (no conversion reads it on this thread). */
const asStored = (op: PreparableOp): boolean => op.format !== undefined && op.format === op.storedFormat;

const now = (): number => performance.now() / 1000;

/**
 * Positioned reads of a group's weights to convert in flight at once. With the populate beside
 * them, a read ahead holds two of libuv's 4 threads and the model's kernels keep the others: all
 * of a group's reads started at once took every thread, as populating every tensor at once did.
 */
const STAGED_READS = 1;

/**
 * Loads a group by preparing its linear ops (reading their weights and converting them to the run
 * format) and releases it by dropping what the ops hold. The weights stay inside the ops, so the
 * model's forward uses them as it would without streaming: the output is the same bytes. Ops
 * without their own cache only (a shared weight cache holds nothing in the op).
 *
 * With `staged`, the reads of weights to convert happen off the JS thread; what is left on it is the
 * conversion to the run format (cast, quantize: synchronous kernels), reported as the load's
 * `blockingSeconds`; a converted weight gives its buffer back as soon as it is prepared. A weight
 * run as stored is not copied: the ops use the mapped bytes (read ahead by `advise('willneed')`),
 * and releasing the group advises `dontneed`, which unmaps them from the process (its RSS drops;
 * the page cache keeps them while memory allows). With `staged`, the load resolves only once those
 * mapped pages are populated (read in and mapped on a worker thread, `populatedBytes`): a load the
 * executor starts ahead of use hides the reads behind compute, and a load's time is its reads'.
 */
export function opGroupLoader(layout: ModelLayout, ops: Iterable<PreparableOp>, source?: CheckpointSource, options: OpGroupLoaderOptions = {}): OpGroupLoader {
  const byName = new Map<string, PreparableOp>();
  for (const op of ops) byName.set(op.spec.name, op);
  const opsOf = new Map<string, { op: PreparableOp; weight: string | undefined }[]>();
  for (const g of layout.groups) {
    const names = new Set(g.tensors.map((t) => t.name));
    opsOf.set(
      g.name,
      g.linears.map((l) => {
        const op = byName.get(l.name);
        if (op === undefined) {
          throw new DistorchError('EXECUTOR_INVALID', `the model has no op for linear '${l.name}' of group '${g.name}'`, { value: l.name, where: 'opGroupLoader', hint: 'build the layout from the checkpoint the model was opened on' });
        }
        const weight = `${l.name}.weight`;
        return { op, weight: names.has(weight) ? weight : undefined };
      }),
    );
  }
  // A weight's op (to ask which of its rows the forwards read) and its linear's layout.
  const opOfWeight = new Map<string, { op: PreparableOp; parts: boolean }>();
  for (const g of layout.groups) {
    for (const l of g.linears) {
      const op = byName.get(l.name);
      if (op !== undefined) opOfWeight.set(`${l.name}.weight`, { op, parts: l.fused.kind === 'parts' });
    }
  }
  const staged = options.staged;
  const pool = options.pool ?? new HostBufferPool({ capBytes: Number.MAX_SAFE_INTEGER });
  /**
   * The rows of `t` a read ahead needs: for a weight used where it is mapped (run as stored, not
   * GGUF blocks: those are populated whole), those its op's forwards read when known (undefined: all of them), and none
   * (`'none'`) while unknown for a linear fused of parts (a forward may compute some parts only:
   * H3's adaLN modalities; the compute then faults in what it reads, once). Any other tensor,
   * and a converted weight (the conversion reads every row): all.
   */
  const rowsNeeded = (t: LayoutTensor): readonly [number, number] | 'none' | undefined => {
    const of = opOfWeight.get(t.name);
    if (of === undefined || !asStored(of.op) || isBlockDType(t.dtype) || of.op.rowsRead === undefined) return undefined;
    const rows = of.op.rowsRead();
    if (rows === undefined) return of.parts ? 'none' : undefined;
    if (rows[0] === 0 && rows[1] === t.shape[0]) return undefined;
    return rows;
  };
  const inner = staged === undefined ? undefined : tensorReader(staged.inner, pool);
  /** What each load in flight holds now (see inFlightBytes), by load. */
  const inFlight = new Set<{ bytes: number }>();
  /**
   * Whether a weight is read into a buffer (converted, or GGUF blocks that decode to f32) rather
   * than used from the mapping (GGUF blocks that ggufLinear multiplies are used where they are).
   */
  const readIntoBuffer = (op: PreparableOp, weight: string): boolean => staged !== undefined && (!asStored(op) || decodesBlocks(staged.entry(weight).dtype));
  const storedBytes = new Map<string, number>();
  for (const g of layout.groups) for (const t of g.tensors) storedBytes.set(t.name, t.byteLength);
  /** What an op's prepared weight holds: its account, else its weight as stored. */
  const residentOf = (op: PreparableOp, weight: string | undefined): number => op.residentBytes ?? (weight === undefined ? 0 : (storedBytes.get(weight) ?? 0));
  /** What a converting op holds from the start of its prepare to its end, at most. */
  const preparingOf = (op: PreparableOp, weight: string | undefined): number => residentOf(op, weight) + (op.preparingBytes ?? 0);

  /**
   * Loads a group, counting in `progress` what the load holds so far (at most its footprint's
   * peak): a buffer from its read's start until it goes back, mapped pages from their populate's
   * start (at the rows asked, then what was populated), an op from its prepare's start at its
   * account and preparing bytes until it settles, then what it holds.
   */
  const loadGroup = async (group: LayoutGroup, options: LoadOptions | undefined, progress: { bytes: number }): Promise<LoadedGroup<void>> => {
    const list = opsOf.get(group.name) ?? [];
    const buffers = new Map<string, PooledBuffer>();
    const mapped = new Set<string>();
    const unstage = (name: string): void => {
      staged?.unstage(name);
      const buffer = buffers.get(name);
      if (buffer !== undefined) progress.bytes -= buffer.bytes;
      buffer?.release();
      buffers.delete(name);
      mapped.delete(name);
    };
    let populatedBytes = 0;
    if (staged !== undefined && inner !== undefined) {
      const reader = countingReader(inner, staged, progress);
      const toRead: string[] = [];
      try {
        for (const { op, weight } of list) {
          if (weight === undefined) continue;
          // GGUF blocks without an integer kernel are decoded even "as stored": read them off this thread.
          if (readIntoBuffer(op, weight)) {
            toRead.push(weight);
            continue;
          }
          // Run as stored: the ops use the mapped bytes where they are, as an all-resident run
          // does (copying them costs ~90 ms of CPU per 400 MiB).
          mapped.add(weight);
          staged.stageMapped(weight);
        }
        // A streamed group's other tensors (the weights run as stored, biases, norms) are used
        // from the mapping: their pages are read in and mapped now, on a worker thread, so the
        // compute finds them resident instead of faulting them in from disk itself (cold cache).
        // A resident group's pages are left to the compute, read once: populating maps whole
        // tensors, also the parts a forward never reads (H3's adaLN rows of other modalities:
        // 23 MiB more file-backed RSS of h3-tiny's 93 MB).
        // Of a weight run as stored, only the rows the forwards read (rowsNeeded).
        const toPopulate: { tensor: LayoutTensor; rows: readonly [number, number] | undefined }[] = [];
        if (options?.streamed === true) {
          for (const t of group.tensors) {
            const rows = toRead.includes(t.name) ? 'none' : rowsNeeded(t);
            if (rows !== 'none') toPopulate.push({ tensor: t, rows });
          }
        }
        const [read, populated] = await Promise.allSettled([readAll(reader, toRead, STAGED_READS), populateInTurn(staged, toPopulate, progress)]);
        if (read.status === 'fulfilled') {
          for (const r of read.value) {
            buffers.set(r.tensor.name, r.buffer);
            staged.stage(r.tensor.name, r.buffer.buffer);
          }
        }
        if (read.status === 'rejected') throw read.reason;
        if (populated.status === 'rejected') throw populated.reason;
        populatedBytes = populated.value;
      } catch (error) {
        for (const name of [...mapped, ...buffers.keys()]) unstage(name);
        throw error;
      }
    }
    // Preparing starts synchronously: a conversion runs on this thread before the promise returns.
    let blockingSeconds = 0;
    const results = await Promise.allSettled(
      list.map(({ op, weight }) => {
        // A weight used from the mapping was counted as its pages; any other is prepared here.
        const preparing = weight !== undefined && mapped.has(weight) ? 0 : preparingOf(op, weight);
        progress.bytes += preparing;
        const t0 = now();
        const prepared = op.prepare();
        blockingSeconds += now() - t0;
        return prepared.then(
          () => {
            progress.bytes += (preparing === 0 ? 0 : op.heldBytes()) - preparing;
            // Converted: the op holds its own copy, the stored bytes can go back to the pool.
            if (weight !== undefined && op.format !== undefined && op.format !== op.storedFormat) unstage(weight);
          },
          (error: unknown) => {
            progress.bytes -= preparing;
            throw error;
          },
        );
      }),
    );
    const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failed !== undefined) {
      for (const { op } of list) op.release();
      for (const name of [...buffers.keys(), ...mapped]) unstage(name);
      throw failed.reason;
    }
    let released = false;
    return {
      value: undefined,
      bytes: list.reduce((a, { op }) => a + op.heldBytes(), 0),
      populatedBytes,
      blockingSeconds,
      release: () => {
        if (released) return;
        released = true;
        // The ops first: what they prepared may be a view of a staged buffer.
        for (const { op } of list) op.release();
        for (const name of [...buffers.keys(), ...mapped]) unstage(name);
      },
    };
  };

  return {
    async load(group: LayoutGroup, options?: LoadOptions): Promise<LoadedGroup<void>> {
      const progress = { bytes: 0 };
      inFlight.add(progress);
      try {
        return await loadGroup(group, options, progress);
      } finally {
        inFlight.delete(progress);
      }
    },
    footprint(group: LayoutGroup, options?: LoadOptions): GroupFootprint {
      // Upper bounds, summed: a group's reads all finish before its ops prepare (together), and
      // each buffer goes back as soon as its op is prepared.
      let bytes = 0;
      let peakBytes = 0;
      const weights = new Set<string>();
      for (const { op, weight } of opsOf.get(group.name) ?? []) {
        if (weight !== undefined) weights.add(weight);
        bytes += residentOf(op, weight);
        peakBytes += preparingOf(op, weight) + (weight !== undefined && readIntoBuffer(op, weight) ? (storedBytes.get(weight) ?? 0) : 0);
      }
      // A streamed group's other tensors are populated (mapped pages made resident) by the load.
      if (staged !== undefined && options?.streamed === true) for (const t of group.tensors) if (!weights.has(t.name)) peakBytes += t.byteLength;
      return { bytes, peakBytes: Math.max(bytes, peakBytes) };
    },
    inFlightBytes: () => [...inFlight].reduce((a, p) => a + p.bytes, 0),
    advise(group: LayoutGroup, advice: 'willneed' | 'dontneed'): void {
      if (source?.advise === undefined) return;
      // Read ahead only the rows a forward reads (a page cache read of the others is wasted I/O);
      // drop every page, whatever an earlier forward read.
      for (const t of group.tensors) {
        const rows = advice === 'willneed' ? rowsNeeded(t) : undefined;
        if (rows === 'none') continue;
        if (rows === undefined) source.advise(t.name, advice);
        else source.advise(t.name, advice, rows);
      }
    },
    idleBytes: () => idleOf(pool),
    trim: () => pool.trim(),
    close: async () => {
      await inner?.close();
    },
  };
}

/**
 * Populates the tensors one after the other: each populate holds one of libuv's threads (4 by
 * default) until its pages are read, and the model's kernels queue on the same threads; a group's
 * tensors populated all at once took every thread and the compute waited behind the read ahead
 * (h3-tiny, 50 % streamed: steps 1.4-1.6x slower than without populating). Returns the bytes.
 */
async function populateInTurn(staged: StagedSource, tensors: readonly { tensor: LayoutTensor; rows: readonly [number, number] | undefined }[], progress: { bytes: number }): Promise<number> {
  let bytes = 0;
  for (const { tensor, rows } of tensors) {
    // Counted from the start, at the rows asked; then at what was populated (whole pages).
    const asked = rows === undefined ? tensor.byteLength : Math.ceil((tensor.byteLength * (rows[1] - rows[0])) / (tensor.shape[0] ?? 1));
    progress.bytes += asked;
    const done = await (rows === undefined ? staged.populate(tensor.name) : staged.populate(tensor.name, rows));
    progress.bytes += done - asked;
    bytes += done;
  }
  return bytes;
}
