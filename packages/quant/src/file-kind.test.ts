import { join } from 'node:path';
import { isNinodesError } from '@ninodes/kernels';
import { describe, expect, it } from 'vitest';
import { openCheckpoint } from './open-checkpoint.js';

const dir = join(process.env.NINODES_FIXTURES as string, 'not-checkpoints');
const repoRoot = process.env.NINODES_REPO_ROOT as string;

function refusal(path: string): { code: string; message: string; hint: string } {
  try {
    openCheckpoint(path).close();
  } catch (error) {
    if (!isNinodesError(error)) throw error;
    return { code: error.code, message: error.message, hint: String(error.hint) };
  }
  throw new Error(`${path} opened as a checkpoint`);
}

describe('openCheckpoint on files that are not checkpoints (made by Python\'s standard library)', () => {
  it.each([
    ['picture.png', 'a PNG image'],
    ['notes.safetensors', 'a text file'],
    ['weights.safetensors.gz', 'a gzip archive'],
  ])('%s: NOT_A_CHECKPOINT naming %s', (file, looks) => {
    const r = refusal(join(dir, file));
    expect(r.code).toBe('NOT_A_CHECKPOINT');
    expect(r.message).toContain(`it looks like ${looks}`);
    expect(r.message).not.toMatch(/header length/);
  });

  it.each(['model.pt', 'legacy.ckpt'])('%s (PyTorch): says to convert it to safetensors, with the command', (file) => {
    const r = refusal(join(dir, file));
    expect(r.code).toBe('NOT_A_CHECKPOINT');
    expect(r.message).toMatch(/PyTorch/);
    expect(r.hint).toContain('convert it to safetensors first');
    expect(r.hint).toContain(`torch.load('${join(dir, file)}'`);
  });

  it('the repository README is a text file, not a damaged safetensors', () => {
    expect(refusal(join(repoRoot, 'README.md'))).toMatchObject({ code: 'NOT_A_CHECKPOINT' });
  });
});
