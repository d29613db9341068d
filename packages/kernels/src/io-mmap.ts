// Typed wrapper over the addon's file mapping (native/src/io/mmap.cc). A MappedFile owns one
// mmap of a whole file and hands out zero-copy views of byte ranges; close() detaches every view
// it handed out before unmapping, so stale typed arrays read as empty instead of faulting; an async
// kernel still reading the file keeps its pages mapped until it settles. A file truncated under the
// mapping never kills the process with SIGBUS: the missing pages read as zeros and every user of
// them (kernels, sumBytes, touch, verify) fails with FILE_TRUNCATED naming the file.
import { closeSync, constants, fstatSync, openSync } from 'node:fs';
import { openRegularFile } from './fs-errors.js';
import { fromNativeError } from './errors.js';
import { KernelsError } from './error-codes.js';
import { callNative, callNativeAsync } from './native-addon.js';
import type { MadviseAdvice, MappingHandle as Handle } from '@ninodes/native';
import type { StorageOwner } from './tensor.js';

export type { MadviseAdvice };

/** What identifies the file a mapping was made from: a change means it was truncated or replaced. */
export interface FileIdentity {
  readonly dev: bigint;
  readonly ino: bigint;
  readonly size: bigint;
  readonly mtimeNs: bigint;
  /**
   * The inode's change time: every write moves it, and unlike mtime it cannot be set back (touch -r,
   * rsync --inplace -t keep size and mtime of a file rewritten in place; ctime still moves).
   */
  readonly ctimeNs: bigint;
}

export interface MapFileOptions {
  /**
   * `shared` (default): read-only MAP_SHARED, pages come straight from the page cache; writing
   * through a view faults. `private`: copy-on-write MAP_PRIVATE, writes stay in this process.
   */
  mode?: 'shared' | 'private';
}

/** The identity of an open file descriptor (fstat, nanosecond mtime and ctime). */
export function fileIdentity(fd: number): FileIdentity {
  const st = fstatSync(fd, { bigint: true });
  return { dev: st.dev, ino: st.ino, size: st.size, mtimeNs: st.mtimeNs, ctimeNs: st.ctimeNs };
}

/** A whole file mapped into memory. Implements StorageOwner so tensors can be views of it. */
export class MappedFile implements StorageOwner {
  readonly path: string;
  readonly byteLength: number;
  readonly identity: FileIdentity;
  private fd: number;
  private handle: Handle | undefined;
  private readonly views = new Set<WeakRef<ArrayBuffer>>();
  private closed = false;
  private pruneAt = 1024;

  private constructor(path: string, fd: number, byteLength: number, identity: FileIdentity, handle: Handle | undefined) {
    this.path = path;
    this.fd = fd;
    this.byteLength = byteLength;
    this.identity = identity;
    this.handle = handle;
  }

  /** Maps the whole file. Throws FILE_NOT_FOUND / FILE_OPEN_FAILED / MMAP_* with the path. */
  static open(path: string, options: MapFileOptions = {}): MappedFile {
    // A FIFO or device is refused before anything reads from it (opening one would block or fault).
    const fd = openRegularFile(path);
    try {
      const identity = fileIdentity(fd);
      const size = Number(identity.size);
      const handle = size === 0 ? undefined : callNative(path, (n) => n.ioMapFile(fd, size, options.mode === 'private', path));
      return new MappedFile(path, fd, size, identity, handle);
    } catch (error) {
      closeSync(fd);
      throw fromNativeError(error, path);
    }
  }

  get released(): boolean {
    return this.closed;
  }

  /** The descriptor the mapping was made from (kept open for identity checks). */
  get descriptor(): number {
    return this.fd;
  }

  /** Zero-copy view of bytes [offset, offset + length); at most 4 GiB (Node 20's ArrayBuffer limit). */
  view(offset: number, length: number): ArrayBuffer {
    this.assertOpen();
    if (length === 0 && offset <= this.byteLength) return new ArrayBuffer(0);
    const handle = this.liveHandle();
    const buffer = callNative(this.path, (n) => n.ioMapView(handle, offset, length));
    this.views.add(new WeakRef(buffer));
    if (this.views.size > this.pruneAt) this.pruneViews();
    return buffer;
  }

  /** Detaches one view early (its typed arrays read as empty); the mapping stays. */
  detachView(buffer: ArrayBuffer): void {
    if (buffer.byteLength === 0) return;
    callNative(this.path, (n) => n.ioDetach(buffer));
  }

  /**
   * The owner of one view, for a Tensor over it: disposing that tensor detaches only its view,
   * while releasing the file detaches every view.
   */
  viewOwner(buffer: ArrayBuffer): StorageOwner {
    const file = this;
    let own = false;
    return {
      get released() {
        return own || file.released;
      },
      release() {
        if (own) return;
        own = true;
        if (!file.released) file.detachView(buffer);
      },
    };
  }

  /** Throws FILE_TRUNCATED, FILE_REPLACED or FILE_MODIFIED when the file is no longer the one mapped. */
  verify(): void {
    this.assertOpen();
    const handle = this.handle;
    if (handle !== undefined) callNative(this.path, (n) => n.ioAssertIntact(handle));
    const now = fileIdentity(this.fd);
    if (now.size < this.identity.size) {
      throw new KernelsError('FILE_TRUNCATED', `${this.path} shrank from ${this.identity.size} to ${now.size} bytes after it was mapped`, {
        where: this.path,
        value: { mapped: this.identity.size, now: now.size },
        hint: 'reading the missing pages would raise SIGBUS; reopen the file',
      });
    }
    let onDisk: FileIdentity | undefined;
    try {
      // Non-blocking: whatever now stands at the path (a FIFO) is only stat'ed, never waited on.
      const fd = openSync(this.path, constants.O_RDONLY | constants.O_NONBLOCK);
      try {
        onDisk = fileIdentity(fd);
      } finally {
        closeSync(fd);
      }
    } catch {
      onDisk = undefined;
    }
    if (onDisk === undefined || onDisk.ino !== this.identity.ino || onDisk.dev !== this.identity.dev) {
      throw new KernelsError('FILE_REPLACED', `${this.path} is no longer the file that was mapped (deleted or replaced)`, {
        where: this.path,
        hint: 'the mapping still shows the old contents; reopen the checkpoint to read the new file',
      });
    }
    // After the replacement check: unlinking or renaming over the mapped file moves its ctime too.
    if (now.mtimeNs !== this.identity.mtimeNs || now.ctimeNs !== this.identity.ctimeNs || now.size !== this.identity.size) {
      throw new KernelsError('FILE_MODIFIED', `${this.path} was written to (or its inode changed: chmod, a new link) after it was mapped`, {
        where: this.path,
        value: { mtimeNs: String(now.mtimeNs), ctimeNs: String(now.ctimeNs), size: String(now.size) },
        hint: 'tensors would mix old and new bytes; reopen the file',
      });
    }
  }

  /** madvise over a byte range (page-aligned outward by the addon). */
  advise(offset: number, length: number, advice: MadviseAdvice): void {
    this.assertOpen();
    const handle = this.handle;
    if (length === 0 || handle === undefined) return;
    callNative(this.path, (n) => n.ioMadvise(handle, offset, length, advice));
  }

  /**
   * Reads a range's pages in from the file and maps them into this process on a worker thread
   * (Linux >= 5.14: madvise(MADV_POPULATE_READ); older kernels: one byte read per page), so a later
   * use of the range finds them resident: prefetch that leaves the JS thread free. Resolves with the
   * bytes populated (the range widened to whole pages, 0 for an empty range). The mapping stays
   * mapped until the read settles, even if the file is closed meanwhile; a file truncated under the
   * range rejects with FILE_TRUNCATED.
   */
  populate(offset: number, length: number): Promise<number> {
    this.assertOpen();
    const handle = this.handle;
    if (length === 0 || handle === undefined) return Promise.resolve(0);
    return callNativeAsync(this.path, (n) => n.ioPopulate(handle, offset, length));
  }

  /** Faults in every page of a range (reads one byte per page); returns a byte sum. */
  touch(offset: number, length: number): number {
    this.assertOpen();
    const handle = this.handle;
    if (length === 0 || handle === undefined) return 0;
    return callNative(this.path, (n) => n.ioTouchPages(handle, offset, length));
  }

  /** Reads every byte of a range (in parallel) and returns their sum: a full read without a copy. */
  sumBytes(offset: number, length: number): number {
    this.assertOpen();
    const handle = this.handle;
    if (length === 0 || handle === undefined) return 0;
    return callNative(this.path, (n) => n.ioSumBytes(handle, offset, length));
  }

  /** Detaches every view, unmaps and closes the descriptor. Idempotent. */
  release(): void {
    if (this.closed) return;
    this.closed = true;
    const handle = this.handle;
    if (handle !== undefined) {
      callNative(this.path, (n) => {
        for (const ref of this.views) {
          const buffer = ref.deref();
          if (buffer !== undefined) n.ioDetach(buffer);
        }
        n.ioUnmap(handle);
      });
    }
    this.views.clear();
    this.handle = undefined;
    closeSync(this.fd);
    this.fd = -1;
  }

  close(): void {
    this.release();
  }

  // Views are tracked weakly (close() must detach the live ones); forget the collected ones.
  private pruneViews(): void {
    for (const ref of this.views) if (ref.deref() === undefined) this.views.delete(ref);
    this.pruneAt = Math.max(1024, this.views.size * 2);
  }

  private liveHandle(): Handle {
    if (this.handle === undefined) {
      throw new KernelsError('MMAP_RANGE', `${this.path} is empty; there is nothing to view`, { where: this.path });
    }
    return this.handle;
  }

  private assertOpen(): void {
    if (this.closed) throw new KernelsError('FILE_CLOSED', `${this.path} was closed`, { where: this.path, hint: 'reopen it' });
  }
}

/**
 * posix_fadvise over a whole file, in this process (no child): `dontneed` drops its cached pages
 * that no mapping maps (a cold-cache benchmark's drop), `willneed` starts reading it in.
 */
export function adviseFile(path: string, advice: MadviseAdvice): void {
  const fd = openRegularFile(path);
  try {
    callNative(path, (n) => n.ioFadvise(fd, 0, 0, advice));
  } finally {
    closeSync(fd);
  }
}

/** glibc malloc_trim: hands free heap memory back to the OS after large frees. True when some was. */
export function mallocTrim(pad = 0): boolean {
  return callNative('mallocTrim', (n) => n.ioMallocTrim(pad));
}

/** The system page size in bytes. */
export function pageSize(): number {
  return callNative('pageSize', (n) => n.ioPageSize());
}
