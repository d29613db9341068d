// --latent: a safetensors file with a tensor `latent` [1, C, T, H, W] f32, the starting noise.
import { type Tensor, cast } from '@ninodes/kernels';
import { RunnerError } from './error-codes.js';
import { openSafetensors } from '@ninodes/memory';

export function readLatentFile(path: string, channels: number): Tensor<'f32'> {
  const source = openSafetensors(path);
  try {
    if (!source.has('latent')) {
      throw new RunnerError('TENSOR_NOT_FOUND', `${path} has no tensor named 'latent'`, {
        value: source.entries().map((e) => e.name).slice(0, 8),
        where: path,
        hint: `store the starting noise as 'latent' [1, ${channels}, T, H, W]`,
      });
    }
    const entry = source.entry('latent');
    if (entry.shape.length !== 5 || entry.shape[0] !== 1 || entry.shape[1] !== channels) {
      throw new RunnerError('SHAPE_MISMATCH', `'latent' in ${path} is [${entry.shape.join(', ')}], expected [1, ${channels}, T, H, W]`, {
        value: entry.shape,
        where: `${path}:latent`,
      });
    }
    const tensor = source.tensor('latent');
    // Copied out of the mapping: the file is closed before the run starts.
    return (tensor.dtype === 'f32' ? tensor.copy() : cast(tensor, 'f32')) as Tensor<'f32'>;
  } finally {
    source.close();
  }
}
