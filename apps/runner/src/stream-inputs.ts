// --audio and --context: safetensors files holding tensor `audio` [1, C, 2, T] (the stereo audio
// latent) and `context` [1, L, W] (text-encoder states of the checkpoint's text width, or states of
// its hidden width that skip the refiner). One file may hold both, and the latent too.
import { type Tensor, cast } from '@ninodes/kernels';
import { RunnerError } from './error-codes.js';
import { openSafetensors } from '@ninodes/memory';

type ShapeCheck = (shape: readonly number[]) => boolean;

/** Opens `path`, checks it holds `name` of the expected shape, and hands the open file to `use`. */
function withNamed<T>(path: string, name: string, expected: string, fits: ShapeCheck, use: (source: ReturnType<typeof openSafetensors>) => T): T {
  const source = openSafetensors(path);
  try {
    if (!source.has(name)) {
      throw new RunnerError('TENSOR_NOT_FOUND', `${path} has no tensor named '${name}'`, {
        value: source.entries().map((e) => e.name).slice(0, 8),
        where: path,
        hint: `store it as '${name}' ${expected}`,
      });
    }
    const entry = source.entry(name);
    if (!fits(entry.shape)) {
      throw new RunnerError('SHAPE_MISMATCH', `'${name}' in ${path} is [${entry.shape.join(', ')}], expected ${expected}`, { value: entry.shape, where: `${path}:${name}` });
    }
    return use(source);
  } finally {
    source.close();
  }
}

function readNamed(path: string, name: string, expected: string, fits: ShapeCheck): Tensor<'f32'> {
  return withNamed(path, name, expected, fits, (source) => {
    const tensor = source.tensor(name);
    // Copied out of the mapping: the file is closed before the run starts.
    return (tensor.dtype === 'f32' ? tensor.copy() : cast(tensor, 'f32')) as Tensor<'f32'>;
  });
}

const audioFits = (channels: number): ShapeCheck => (s) => s.length === 4 && s[0] === 1 && s[1] === channels && s[2] === 2 && (s[3] ?? 0) >= 1;
const contextFits = (widths: readonly number[]): ShapeCheck => (s) => s.length === 3 && s[0] === 1 && (s[1] ?? 0) >= 1 && widths.includes(s[2] ?? -1);

/** The stereo audio latent `audio` [1, channels, 2, T] of a safetensors file, as f32. */
export function readAudioFile(path: string, channels: number): Tensor<'f32'> {
  return readNamed(path, 'audio', `[1, ${channels}, 2, T]`, audioFits(channels));
}

/** The text states `context` [1, L, textDim or hidden] of a safetensors file, as f32. */
export function readContextFile(path: string, widths: readonly number[]): Tensor<'f32'> {
  return readNamed(path, 'context', `[1, L, ${widths.join(' or ')}]`, contextFits(widths));
}

/** The checked shape of readAudioFile's tensor, from the header alone (to size a run before reading). */
export function audioFileShape(path: string, channels: number): readonly number[] {
  return withNamed(path, 'audio', `[1, ${channels}, 2, T]`, audioFits(channels), (source) => source.entry('audio').shape);
}

/** The checked shape of readContextFile's tensor, from the header alone. */
export function contextFileShape(path: string, widths: readonly number[]): readonly number[] {
  return withNamed(path, 'context', `[1, L, ${widths.join(' or ')}]`, contextFits(widths), (source) => source.entry('context').shape);
}
