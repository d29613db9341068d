import { BF16_FEW_ROWS, type PackedLinearWeight, type Tensor, packLinearWeight, unpackLinearWeight } from '@ninodes/kernels';

export interface Bf16WeightOptions {
  /** The plain tensor is the caller's (a LoRA patch): never disposed. */
  readonly borrowed?: boolean;
  /** Called once the plain tensor is dropped for the packed copy (e.g. to madvise its mapped pages away). */
  readonly dropped?: () => void;
}

/**
 * A prepared bf16 layer weight: the plain [N, K] tensor as loaded (often a view of the mapped
 * checkpoint) until the second bf16-precision call that multiplies more than BF16_FEW_ROWS rows with
 * it; from then on only its packed copy (kernels `packLinearWeight`, anonymous native memory), which
 * spares oneDNN a reorder of the whole weight on every call and gives the same output bits. The
 * packed copy replaces the plain tensor, it is not kept beside it. Never packed: the adaLN and
 * timestep linears, which only see a few rows (and read plain rows), and a weight streamed through
 * the weight cache (distorch: loaded, multiplied once, evicted), for which packing would be one more
 * pass over the weight that a single call cannot win back.
 */
export class Bf16Weight {
  #plain: Tensor<'bf16'> | undefined;
  #packed: PackedLinearWeight | undefined;
  #packing: Promise<void> | undefined;
  /** bf16-precision calls with more than BF16_FEW_ROWS rows so far. */
  #manyRowCalls = 0;
  /** Calls (and the packing) reading the plain tensor now: it is dropped when the last one ends. */
  #readers = 0;
  #disposed = false;

  constructor(
    plain: Tensor<'bf16'>,
    private readonly options: Bf16WeightOptions = {},
  ) {
    this.#plain = plain;
  }

  /** Bytes held now: the plain tensor's, or the packed copy's (oneDNN pads it to whole blocks). */
  get bytes(): number {
    return this.#packed?.byteLength ?? this.#plain?.byteLength ?? 0;
  }

  get packed(): boolean {
    return this.#packed !== undefined;
  }

  /**
   * Runs `use` with what a linear of `rows` rows should multiply: with `pack` (bf16 precision) the
   * packed copy once there is one, made on the second call with more than BF16_FEW_ROWS rows.
   */
  async use<R>(rows: number, pack: boolean, use: (w: Tensor<'bf16'> | PackedLinearWeight) => Promise<R>): Promise<R> {
    if (pack && rows > BF16_FEW_ROWS && ++this.#manyRowCalls >= 2 && this.#packed === undefined && this.#plain !== undefined) await (this.#packing ??= this.#pack(this.#plain));
    const packed = this.#packed;
    return packed !== undefined && pack ? use(packed) : this.withPlain(use);
  }

  /** Runs `use` on the plain [N, K] tensor: the one held, or a temporary copy unpacked for it. */
  async withPlain<R>(use: (w: Tensor<'bf16'>) => Promise<R>): Promise<R> {
    const plain = this.#plain;
    if (plain !== undefined) return this.#reading(() => use(plain));
    const copy = await unpackLinearWeight(this.#packed as PackedLinearWeight);
    try {
      return await use(copy);
    } finally {
      copy.dispose();
    }
  }

  dispose(): void {
    if (this.#disposed) return;
    this.#disposed = true;
    this.#packed?.dispose();
    if (this.options.borrowed !== true) this.#plain?.dispose();
  }

  async #pack(plain: Tensor<'bf16'>): Promise<void> {
    try {
      const packed = await this.#reading(() => packLinearWeight(plain));
      if (this.#disposed) {
        packed.dispose();
        return;
      }
      this.#packed = packed;
      this.#dropPlain();
    } catch (error) {
      // Not kept: the next call packs again (and reports again).
      this.#packing = undefined;
      throw error;
    }
  }

  async #reading<R>(read: () => Promise<R>): Promise<R> {
    this.#readers++;
    try {
      return await read();
    } finally {
      this.#readers--;
      this.#dropPlain();
    }
  }

  #dropPlain(): void {
    const plain = this.#plain;
    if (plain === undefined || this.#packed === undefined || this.#readers > 0) return;
    this.#plain = undefined;
    if (this.options.borrowed !== true && !this.#disposed) plain.dispose();
    this.options.dropped?.();
  }
}
