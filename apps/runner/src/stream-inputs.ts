// --audio and --context: safetensors files holding tensor `audio` [1, C, 2, T] (the stereo audio
// latent) and `context` [1, L, W] (text-encoder states of the checkpoint's text width, or states of
// its hidden width that skip the refiner). One file may hold both, and the latent too.
import { type Tensor, cast } from '@ninodes/kernels';
import { RunnerError } from './error-codes.js';
import { openSafetensors } from '@ninodes/memory';

function readNamed(path: string, name: string, expected: string, fits: (shape: readonly number[]) => boolean): Tensor<'f32'> {
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
    const tensor = source.tensor(name);
    // Copied out of the mapping: the file is closed before the run starts.
    return (tensor.dtype === 'f32' ? tensor.copy() : cast(tensor, 'f32')) as Tensor<'f32'>;
  } finally {
    source.close();
  }
}

/** The stereo audio latent `audio` [1, channels, 2, T] of a safetensors file, as f32. */
export function readAudioFile(path: string, channels: number): Tensor<'f32'> {
  return readNamed(path, 'audio', `[1, ${channels}, 2, T]`, (s) => s.length === 4 && s[0] === 1 && s[1] === channels && s[2] === 2 && (s[3] ?? 0) >= 1);
}

/** The text states `context` [1, L, textDim or hidden] of a safetensors file, as f32. */
export function readContextFile(path: string, widths: readonly number[]): Tensor<'f32'> {
  return readNamed(path, 'context', `[1, L, ${widths.join(' or ')}]`, (s) => s.length === 3 && s[0] === 1 && (s[1] ?? 0) >= 1 && widths.includes(s[2] ?? -1));
}
