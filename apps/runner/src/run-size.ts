// Refuses a latent size whose forward cannot be allocated, before anything is allocated: the
// estimate is models' h3ActivationBytes, the limit this machine's memory (the cgroup limit when
// lower) and the largest typed array Node can make.
import { constants } from 'node:buffer';
import { totalmem } from 'node:os';
import { NoteLog, formatBytes, readCgroupMemory, resolveRoots } from '@ninodes/device';
import { RunnerError } from './error-codes.js';
import { type H3Config, h3ActivationBytes } from '@ninodes/models';

function memoryLimit(): number {
  const cgroup = readCgroupMemory(resolveRoots(), new NoteLog());
  const total = totalmem();
  return cgroup !== undefined && cgroup.limitBytes > 0 && cgroup.limitBytes < total ? cgroup.limitBytes : total;
}

export function checkRunFits(config: H3Config, latentShape: readonly number[], limitBytes = memoryLimit()): void {
  const [, , frames, height, width] = latentShape as [number, number, number, number, number];
  const need = h3ActivationBytes(config, frames, height, width);
  const tooBig = need.largestTensorBytes > constants.MAX_LENGTH;
  if (need.peakBytes > limitBytes || tooBig) {
    throw new RunnerError(
      'RUN_TOO_LARGE',
      `a [${latentShape.join(', ')}] latent (${need.tokens} tokens) needs about ${formatBytes(need.peakBytes)} of activations${tooBig ? `, and one of ${formatBytes(need.largestTensorBytes)}, over the ${formatBytes(constants.MAX_LENGTH)} a single array can hold` : `, more than the ${formatBytes(limitBytes)} of this machine`}`,
      { value: { frames, height, width }, where: '--frames/--height/--width', hint: 'use a smaller latent: memory grows with frames × height × width' },
    );
  }
}
