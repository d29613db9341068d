import { RunnerError } from './error-codes.js';

/**
 * A RIFF WAVE file of 16-bit PCM from planar float samples [channels, n] in [-1, 1] (values outside
 * are clipped; rounding to nearest), as every player and ffmpeg read it.
 */
export function encodeWav(samples: Float32Array, channels: number, sampleRate: number): Buffer {
  const frames = channels === 0 ? 0 : samples.length / channels;
  if (!Number.isInteger(channels) || channels < 1 || !Number.isInteger(frames) || !Number.isInteger(sampleRate) || sampleRate < 1) {
    throw new RunnerError('INTERNAL', `encodeWav: ${samples.length} samples do not make ${channels} channels at ${sampleRate} Hz`, { value: { samples: samples.length, channels, sampleRate }, where: 'encodeWav' });
  }
  const data = frames * channels * 2;
  const out = Buffer.alloc(44 + data);
  out.write('RIFF', 0, 'ascii');
  out.writeUInt32LE(36 + data, 4);
  out.write('WAVE', 8, 'ascii');
  out.write('fmt ', 12, 'ascii');
  out.writeUInt32LE(16, 16); // PCM header size
  out.writeUInt16LE(1, 20); // PCM
  out.writeUInt16LE(channels, 22);
  out.writeUInt32LE(sampleRate, 24);
  out.writeUInt32LE(sampleRate * channels * 2, 28);
  out.writeUInt16LE(channels * 2, 32);
  out.writeUInt16LE(16, 34);
  out.write('data', 36, 'ascii');
  out.writeUInt32LE(data, 40);
  for (let i = 0; i < frames; i++) {
    for (let c = 0; c < channels; c++) {
      const v = Math.max(-1, Math.min(1, samples[c * frames + i] as number));
      out.writeInt16LE(Math.round(v * 32767), 44 + (i * channels + c) * 2);
    }
  }
  return out;
}
