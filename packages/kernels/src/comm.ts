// Typed wrapper over the addon's Gloo communicator (native/src/comm/). One Communicator is one
// process group: rank `rank` of `size`, met through a key-value store (Gloo's FileStore on one
// machine, RedisStore across machines), connected by TCP on loopback, a named interface or an address.
// Collectives run on the calling (JS) thread, in the order they are called (every rank must issue the
// same collectives in the same order); each has the communicator's deadline, so none can hang. The
// methods still return Promises: a call made while an earlier one is queued waits for it.
import { statSync } from 'node:fs';
import { NinodesError } from './errors.js';
import { KernelsError, type KernelsErrorCode } from './error-codes.js';
import { callNative, callNativeAsync } from './native-addon.js';
import type { CommArray, CommDType, CommGatherArray, CommGatherDType, CommHandle as Handle, CommStatus as NativeStatus, ReduceOp } from '@ninodes/native';

export type { CommArray, CommGatherArray, ReduceOp };

/** Where ranks meet: a directory every rank can reach (one machine), or a Redis server. */
export type CommStore = { kind: 'file'; path: string } | { kind: 'redis'; host: string; port: number };

export interface CommunicatorOptions {
  rank: number;
  size: number;
  store: CommStore;
  /**
   * Namespaces the store keys. Keys are written once and never overwritten, so runs sharing a store
   * (a Redis server, a directory) at the same time need their own prefix. Each rank deletes the keys
   * it wrote once all ranks are connected (and its failure key when it closes). Default `ninodes`.
   */
  prefix?: string;
  /** Bind the TCP transport to this network interface (e.g. `eth0`, `veth1`). */
  iface?: string;
  /** ...or to the address this host name or IP resolves to. Neither: loopback (127.0.0.1). */
  hostname?: string;
  /** Deadline of the rendezvous and of every collective, in milliseconds. */
  timeoutMs: number;
  /**
   * After a failure, how long a rank waits for the other ranks to report alive in the store before
   * naming the silent ones as lost. Default min(2000, timeoutMs).
   */
  graceMs?: number;
}

/** Error codes a collective can fail with; `ranks` on the error names the ranks it blames. */
export type CommErrorCode = Extract<KernelsErrorCode, `COMM_${string}`>;

/** A NinodesError from a collective, with the ranks it names (lost, late, or never joined). */
export class CommError extends NinodesError {
  readonly ranks: readonly number[];
  constructor(code: CommErrorCode | 'INTERNAL', message: string, ranks: readonly number[], where: string, hint: string | undefined) {
    super(code, message, hint === undefined ? { where, value: ranks } : { where, value: ranks, hint });
    this.name = 'CommError';
    this.ranks = ranks;
  }
}

const HINTS: Record<string, string> = {
  COMM_TIMEOUT: 'the named ranks did not take part in time: check that they were started, are alive and run the same program; raise timeoutMs for slow steps',
  COMM_PEER_LOST: 'the named ranks died or closed their connection; their own logs say why',
  COMM_MISMATCH: 'the ranks ran different programs (another model, shape or world size): every rank must issue the same collectives in the same order',
  COMM_STORE: 'check the store: the directory must exist and be writable on every rank, the Redis server must be reachable, and each run needs a fresh prefix',
  COMM_INTERFACE: 'name an interface that exists (ip -brief address) or an address of this machine',
};

function dtypeOf(data: unknown, where: string): CommDType {
  if (data instanceof Float32Array) return 'f32';
  if (data instanceof Int32Array) return 'i32';
  throw new KernelsError('INVALID_ARGUMENT', `${where}: expected a Float32Array or Int32Array`, { value: data, where });
}

function gatherDtypeOf(data: unknown, where: string): CommGatherDType {
  if (data instanceof Int8Array) return 'i8';
  if (data instanceof Float32Array || data instanceof Int32Array) return dtypeOf(data, where);
  throw new KernelsError('INVALID_ARGUMENT', `${where}: expected a Float32Array, Int32Array or Int8Array`, { value: data, where });
}

/** Checks a segmented collective's counts: one non-negative integer per rank, summing to `length`. */
function checkCounts(counts: readonly number[], size: number, length: number, where: string): void {
  if (!Array.isArray(counts) || counts.length !== size) {
    throw new KernelsError('SHAPE_MISMATCH', `${where}: counts must hold one segment length per rank (${size})`, {
      value: counts,
      where,
      hint: 'pass the same counts on every rank, segment r being rank r\'s rows times the row length',
    });
  }
  let sum = 0;
  for (const [r, c] of counts.entries()) {
    if (typeof c !== 'number' || !Number.isSafeInteger(c) || c < 0) {
      throw new KernelsError('INVALID_ARGUMENT', `${where}: counts[${r}] must be a non-negative integer`, { value: c, where });
    }
    sum += c;
  }
  if (sum !== length) {
    throw new KernelsError('SHAPE_MISMATCH', `${where}: counts sum to ${sum}, the data holds ${length} elements`, { value: counts, where });
  }
}

function requireInt(value: unknown, lo: number, hi: number, what: string): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < lo || value > hi) {
    throw new KernelsError('INVALID_ARGUMENT', `createCommunicator: ${what} must be an integer in ${lo}..${hi}`, {
      value,
      where: what,
    });
  }
  return value;
}

/** What a communicator has done so far (for reports: the share of a step spent communicating). */
export interface CommStats {
  /** Collectives that completed. */
  readonly collectives: number;
  /** Bytes this rank contributed to them (its input buffers). */
  readonly bytes: number;
  /** Wall seconds the collectives ran (waiting for the slowest rank included), queueing excluded. */
  readonly seconds: number;
}

export class Communicator {
  readonly rank: number;
  readonly size: number;
  private handle: Handle | undefined;
  private tail: Promise<unknown> = Promise.resolve();
  private done = { collectives: 0, bytes: 0, seconds: 0 };

  private constructor(rank: number, size: number, handle: Handle) {
    this.rank = rank;
    this.size = size;
    this.handle = handle;
  }

  /** @internal built by createCommunicator */
  static fromHandle(rank: number, size: number, handle: Handle): Communicator {
    return new Communicator(rank, size, handle);
  }

  /** Element-wise reduction across ranks, in place: every rank ends with the same bytes. */
  allreduce(data: CommArray, op: ReduceOp = 'sum'): Promise<void> {
    const dtype = dtypeOf(data, 'allreduce');
    if (op !== 'sum' && op !== 'max') throw new KernelsError('INVALID_ARGUMENT', `allreduce: op must be 'sum' or 'max'`, { value: op });
    return this.enqueue('allreduce', data.byteLength, (h) => callNative('allreduce', (n) => n.commAllreduce(h, data, dtype, op)));
  }

  /** Copies `root`'s `data` into every other rank's `data`, in place. */
  broadcast(data: CommArray, root = 0): Promise<void> {
    const dtype = dtypeOf(data, 'broadcast');
    if (!Number.isInteger(root) || root < 0 || root >= this.size) {
      throw new KernelsError('INVALID_ARGUMENT', `broadcast: root ${root} is not a rank of a world of ${this.size}`, { value: root });
    }
    return this.enqueue('broadcast', data.byteLength, (h) => callNative('broadcast', (n) => n.commBroadcast(h, data, dtype, root)));
  }

  /** Every rank's `data` concatenated in rank order (size x data.length elements). */
  async allgather<T extends CommArray>(data: T): Promise<T> {
    const dtype = dtypeOf(data, 'allgather');
    const out = (dtype === 'f32' ? new Float32Array(data.length * this.size) : new Int32Array(data.length * this.size)) as T;
    await this.enqueue('allgather', data.byteLength, (h) => callNative('allgather', (n) => n.commAllgather(h, data, out, dtype)));
    return out;
  }

  /**
   * In place. data = size consecutive segments, segment r of counts[r] elements (sum(counts) ===
   * data.length, every rank passes the same counts). On return segment `this.rank` holds the sum over
   * ranks of every rank's segment `this.rank`, in the same fixed rank order and so the same bits as
   * allreduce('sum') gives for those elements; other segments are left unspecified (may be overwritten).
   * Float32Array or Int32Array. Each rank sends peer p only segment p: (size - 1) / size of what an
   * allreduce of `data` sends. Counts as `data.byteLength` bytes in stats().
   */
  reduceScatter(data: CommArray, counts: readonly number[]): Promise<void> {
    const dtype = dtypeOf(data, 'reduceScatter');
    checkCounts(counts, this.size, data.length, 'reduceScatter');
    const c = [...counts]; // a queued call runs later: the caller may reuse its array meanwhile
    return this.enqueue('reduceScatter', data.byteLength, (h) => callNative('reduceScatter', (n) => n.commReduceScatter(h, data, dtype, c)));
  }

  /**
   * In place. data = size consecutive segments of counts[r] elements; this rank's segment holds its
   * data; on return every segment r holds rank r's segment (bytes as sent). Float32Array, Int32Array
   * or Int8Array (int8 activations: one byte per element, any counts). Counts as this rank's segment
   * bytes in stats().
   */
  allgatherInto(data: CommGatherArray, counts: readonly number[]): Promise<void> {
    const dtype = gatherDtypeOf(data, 'allgatherInto');
    checkCounts(counts, this.size, data.length, 'allgatherInto');
    const c = [...counts]; // a queued call runs later: the caller may reuse its array meanwhile
    const own = c[this.rank]! * data.BYTES_PER_ELEMENT;
    return this.enqueue('allgatherInto', own, (h) => callNative('allgatherInto', (n) => n.commAllgatherInto(h, data, dtype, c)));
  }

  /**
   * Personalized exchange. send = size consecutive segments, segment p of counts[p] elements, for
   * rank p; recv = size segments of counts[this.rank] elements each: on return segment q holds rank
   * q's segment `this.rank` (its own copied across). Every rank passes the same counts; send and recv
   * are one dtype (Float32Array, Int32Array or Int8Array) and do not overlap. A rank sends each peer
   * only its segment: for a [S, W] slice split by token rows, each rank ends with every rank's
   * columns of its own rows. Counts as the bytes sent to peers in stats().
   */
  allToAll(send: CommGatherArray, recv: CommGatherArray, counts: readonly number[]): Promise<void> {
    const dtype = gatherDtypeOf(send, 'allToAll');
    const recvDtype = gatherDtypeOf(recv, 'allToAll recv');
    if (recvDtype !== dtype) {
      throw new KernelsError('INVALID_ARGUMENT', `allToAll: send and recv must be one dtype, got ${dtype} and ${recvDtype}`, { value: [dtype, recvDtype], where: 'allToAll recv' });
    }
    checkCounts(counts, this.size, send.length, 'allToAll');
    const c = [...counts]; // a queued call runs later: the caller may reuse its array meanwhile
    const mine = c[this.rank]!;
    if (recv.length !== mine * this.size) {
      throw new KernelsError('SHAPE_MISMATCH', `allToAll: recv holds ${recv.length} elements, ${this.size} segments of counts[${this.rank}] = ${mine} need ${mine * this.size}`, {
        value: recv.length,
        where: 'allToAll recv',
        hint: 'recv needs size x counts[rank] elements: one segment from each rank',
      });
    }
    if (send.buffer === recv.buffer && send.byteOffset < recv.byteOffset + recv.byteLength && recv.byteOffset < send.byteOffset + send.byteLength) {
      throw new KernelsError('INVALID_ARGUMENT', 'allToAll: send and recv overlap', { where: 'allToAll recv', hint: 'pass disjoint arrays' });
    }
    const bytes = (send.length - mine) * send.BYTES_PER_ELEMENT;
    return this.enqueue('allToAll', bytes, (h) => callNative('allToAll', (n) => n.commAllToAll(h, send, recv, dtype, c)));
  }

  /** Resolves once every rank has reached the barrier. */
  barrier(): Promise<void> {
    return this.enqueue('barrier', 0, (h) => callNative('barrier', (n) => n.commBarrier(h)));
  }

  /** Totals of the collectives that completed. */
  stats(): CommStats {
    return { ...this.done };
  }

  /** Closes the sockets after the queued collectives finish. Idempotent. */
  async close(): Promise<void> {
    await this.tail.catch(() => undefined);
    const handle = this.handle;
    if (handle !== undefined) {
      callNative('close', (n) => n.commClose(handle));
      this.handle = undefined;
    }
  }

  private enqueue(what: string, bytes: number, op: (handle: Handle) => NativeStatus): Promise<void> {
    const run = async (): Promise<void> => {
      if (this.handle === undefined) {
        throw new CommError('COMM_CLOSED', `${what}: the communicator was closed`, [], `rank ${this.rank}`, undefined);
      }
      const started = performance.now();
      const status = op(this.handle);
      if (status.code !== '') throw new CommError(status.code as CommErrorCode, status.message, status.ranks, `rank ${this.rank}`, HINTS[status.code]);
      this.done.collectives += 1;
      this.done.bytes += bytes;
      this.done.seconds += (performance.now() - started) / 1000;
    };
    const next = this.tail.then(run, run);
    this.tail = next.catch(() => undefined);
    return next;
  }
}

/**
 * Joins a process group: resolves once every rank has met in the store and every pair is connected,
 * or rejects with a CommError (COMM_TIMEOUT naming the ranks that never came, COMM_STORE,
 * COMM_INTERFACE) within `timeoutMs`.
 */
export async function createCommunicator(options: CommunicatorOptions): Promise<Communicator> {
  const size = requireInt(options.size, 1, 65536, 'size');
  const rank = requireInt(options.rank, 0, size - 1, 'rank');
  const timeoutMs = requireInt(options.timeoutMs, 1, 86_400_000, 'timeoutMs');
  const graceMs = requireInt(options.graceMs ?? Math.min(2000, timeoutMs), 0, 86_400_000, 'graceMs');
  const prefix = options.prefix ?? 'ninodes';
  if (typeof prefix !== 'string' || prefix === '' || /[\s/]/.test(prefix)) {
    throw new KernelsError('INVALID_ARGUMENT', 'createCommunicator: prefix must be a non-empty string without spaces or slashes', { value: prefix, where: 'prefix' });
  }
  const store = options.store;
  if (store?.kind === 'file') {
    let isDir = false;
    try {
      isDir = statSync(store.path).isDirectory();
    } catch {
      isDir = false;
    }
    if (!isDir) {
      throw new KernelsError('COMM_STORE', `file store ${store.path} is not an existing directory`, {
        value: store.path,
        where: 'store.path',
        hint: 'create the directory (shared by every rank) before starting the ranks',
      });
    }
  } else if (store?.kind === 'redis') {
    if (typeof store.host !== 'string' || store.host === '') {
      throw new KernelsError('INVALID_ARGUMENT', 'createCommunicator: store.host must name the Redis server', { value: store.host, where: 'store.host' });
    }
    requireInt(store.port, 1, 65535, 'store.port');
  } else {
    throw new KernelsError('INVALID_ARGUMENT', `createCommunicator: store.kind must be 'file' or 'redis'`, { value: store, where: 'store' });
  }
  const status = await callNativeAsync('createCommunicator', (n) =>
    n.commCreate({
      rank,
      size,
      storeKind: store.kind,
      ...(store.kind === 'file' ? { storePath: store.path } : { storeHost: store.host, storePort: store.port }),
      prefix,
      ...(options.iface === undefined ? {} : { iface: options.iface }),
      ...(options.hostname === undefined ? {} : { hostname: options.hostname }),
      timeoutMs,
      graceMs,
    }),
  );
  if (status.code !== '' || status.handle === undefined) {
    throw new CommError((status.code as CommErrorCode) || 'INTERNAL', status.message, status.ranks, `rank ${rank}`, HINTS[status.code]);
  }
  return Communicator.fromHandle(rank, size, status.handle);
}
