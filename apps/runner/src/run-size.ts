// Refuses a latent size (with its text and audio streams) whose forward cannot be allocated, before
// anything is allocated or an input is copied: the estimate is models' h3ActivationBytes plus the
// stream inputs' own copies, the limit this machine's memory (the cgroup limit when lower) and the
// largest typed array Node can make.
import { constants } from 'node:buffer';
import { totalmem } from 'node:os';
import { NoteLog, formatBytes, readCgroupMemory, resolveRoots } from '@ninodes/device';
import { RunnerError } from './error-codes.js';
import { type H3Config, h3ActivationBytes } from '@ninodes/models';

/** The stream inputs of a run, from their headers (nothing read yet). */
export interface RunStreams {
  /** `context` [1, L, W] of --context. */
  readonly context?: readonly number[];
  /** Audio latent frames T (--audio's [1, C, 2, T] or --audio-frames). */
  readonly audioFrames?: number;
}

function memoryLimit(): number {
  const cgroup = readCgroupMemory(resolveRoots(), new NoteLog());
  const total = totalmem();
  return cgroup !== undefined && cgroup.limitBytes > 0 && cgroup.limitBytes < total ? cgroup.limitBytes : total;
}

export function checkRunFits(config: H3Config, latentShape: readonly number[], streams: RunStreams = {}, limitBytes = memoryLimit()): void {
  const [, , frames, height, width] = latentShape as [number, number, number, number, number];
  const [, textTokens = 0, textWidth = 0] = streams.context ?? [];
  const audioFrames = streams.audioFrames ?? 0;
  const need = h3ActivationBytes(config, frames, height, width, { textTokens, audioFrames });
  // The inputs themselves: the context copied out of its file, the audio latent twice (read, then the sampler's own).
  const inputBytes = 4 * (textTokens * textWidth + 2 * (config.audioChannels ?? 0) * 2 * audioFrames);
  const total = need.peakBytes + inputBytes;
  const tooBig = need.largestTensorBytes > constants.MAX_LENGTH || 4 * textTokens * textWidth > constants.MAX_LENGTH;
  if (total > limitBytes || tooBig) {
    const parts = [`a [${latentShape.join(', ')}] latent`, ...(textTokens > 0 ? [`${textTokens} text states (--context)`] : []), ...(audioFrames > 0 ? [`${audioFrames} audio frames`] : [])];
    // The stream that brings the most tokens is the one to shrink.
    const video = need.tokens - textTokens - audioFrames;
    const [where, hint] =
      textTokens > Math.max(video, audioFrames)
        ? ['--context', 'use fewer text states: memory grows with the context length L of [1, L, W]']
        : audioFrames > video
          ? ['--audio', 'use fewer audio frames: memory grows with T of [1, C, 2, T]']
          : ['--frames/--height/--width', 'use a smaller latent: memory grows with frames × height × width'];
    throw new RunnerError(
      'RUN_TOO_LARGE',
      `${parts.join(' with ')} (${need.tokens} tokens) needs about ${formatBytes(total)}${tooBig ? `, and one array of ${formatBytes(Math.max(need.largestTensorBytes, 4 * textTokens * textWidth))}, over the ${formatBytes(constants.MAX_LENGTH)} a single array can hold` : `, more than the ${formatBytes(limitBytes)} of this machine`}`,
      { value: { frames, height, width, textTokens, audioFrames }, where, hint },
    );
  }
}
