import { existsSync, mkdirSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Tensor } from '@ninodes/kernels';
import { SafetensorsFile, tensorSources, writeSafetensors } from '@ninodes/memory';
import { ModelsError } from './error-codes.js';

/**
 * Regression capture: with `NINODES_CAPTURE=<dir>` a model writes each block's inputs and outputs of
 * every forward call as `<dir>/call-NNNN/block-NNN.safetensors` (plus `embed` and `final`). Unset, no
 * sink exists and the forward does no extra work.
 */
export interface CaptureSink {
  readonly dir: string;
  /** Starts the next forward call; returns its index. */
  beginCall(): number;
  /** Writes one file of the current call (memory's safetensors writer, atomic): `name` like 'block-003', tensors f32. */
  write(name: string, tensors: Readonly<Record<string, Tensor<'f32'>>>): Promise<void>;
}

export function captureFromEnv(env: NodeJS.ProcessEnv = process.env): CaptureSink | undefined {
  const dir = env.NINODES_CAPTURE;
  return dir === undefined || dir === '' ? undefined : createCaptureSink(dir);
}

export function createCaptureSink(dir: string): CaptureSink {
  let call = -1;
  const callDir = (): string => join(dir, `call-${String(call).padStart(4, '0')}`);
  return {
    dir,
    beginCall() {
      call++;
      mkdirSync(callDir(), { recursive: true });
      return call;
    },
    async write(name, tensors) {
      if (call < 0) throw new ModelsError('CAPTURE_STATE', 'capture write before beginCall', { value: name });
      await writeSafetensors(join(callDir(), `${name}.safetensors`), tensorSources(tensors));
    },
  };
}

// A capture file's tensors as f32 arrays (copied: the mapping is closed before returning).
function readCapture(path: string): Map<string, Float32Array> {
  const file = SafetensorsFile.open(path);
  try {
    return new Map(file.entries().map((e) => [e.name, Float32Array.from(file.tensor(e.name).data as Float32Array)]));
  } finally {
    file.close();
  }
}

export interface CaptureDifference {
  /** e.g. 'call-0002/block-017' */
  readonly file: string;
  readonly tensor: string;
  readonly maxAbs: number;
  /** maxAbs / max |reference| */
  readonly maxRel: number;
  readonly reason: 'values' | 'missing' | 'shape';
}

export interface CaptureComparison {
  readonly equal: boolean;
  readonly filesCompared: number;
  /** The first file (in call, then execution order) and tensor that differ beyond tolerance. */
  readonly first: CaptureDifference | undefined;
}

function listCapture(dir: string): string[] {
  if (!existsSync(dir)) throw new ModelsError('FILE_NOT_FOUND', `capture directory ${dir} does not exist`, { value: dir, hint: 'run with NINODES_CAPTURE=<dir> first' });
  const files: string[] = [];
  for (const call of readdirSync(dir).filter((d) => d.startsWith('call-')).sort()) {
    const inCall = readdirSync(join(dir, call)).filter((f) => f.endsWith('.safetensors'));
    // execution order: embed, blocks by index, final
    const rank = (f: string): string => (f.startsWith('embed') ? `0${f}` : f.startsWith('block') ? `1${f}` : `2${f}`);
    inCall.sort((a, b) => rank(a).localeCompare(rank(b)));
    for (const f of inCall) files.push(`${call}/${f.replace(/\.safetensors$/, '')}`);
  }
  return files;
}

/**
 * Compares two capture directories (reference first) file by file in execution order and names the
 * first block and tensor whose max |difference| exceeds `atol + rtol·max|reference|`.
 */
export function compareCaptures(referenceDir: string, candidateDir: string, tolerance: { rtol?: number; atol?: number } = {}): CaptureComparison {
  const rtol = tolerance.rtol ?? 0;
  const atol = tolerance.atol ?? 0;
  const files = listCapture(referenceDir);
  let compared = 0;
  for (const file of files) {
    const ref = readCapture(join(referenceDir, `${file}.safetensors`));
    const candPath = join(candidateDir, `${file}.safetensors`);
    if (!existsSync(candPath)) return { equal: false, filesCompared: compared, first: { file, tensor: '*', maxAbs: Number.POSITIVE_INFINITY, maxRel: Number.POSITIVE_INFINITY, reason: 'missing' } };
    const cand = readCapture(candPath);
    compared++;
    for (const [tensor, want] of [...ref.entries()].sort((a, b) => a[0].localeCompare(b[0]))) {
      const got = cand.get(tensor);
      if (!got) return { equal: false, filesCompared: compared, first: { file, tensor, maxAbs: Number.POSITIVE_INFINITY, maxRel: Number.POSITIVE_INFINITY, reason: 'missing' } };
      if (got.length !== want.length) return { equal: false, filesCompared: compared, first: { file, tensor, maxAbs: Number.POSITIVE_INFINITY, maxRel: Number.POSITIVE_INFINITY, reason: 'shape' } };
      let maxAbs = 0;
      let scale = 0;
      for (let i = 0; i < want.length; i++) {
        const d = Math.abs((got[i] as number) - (want[i] as number));
        if (d > maxAbs || Number.isNaN(d)) maxAbs = Number.isNaN(d) ? Number.POSITIVE_INFINITY : d;
        scale = Math.max(scale, Math.abs(want[i] as number));
      }
      if (maxAbs > atol + rtol * scale) return { equal: false, filesCompared: compared, first: { file, tensor, maxAbs, maxRel: scale === 0 ? maxAbs : maxAbs / scale, reason: 'values' } };
    }
  }
  return { equal: true, filesCompared: compared, first: undefined };
}
