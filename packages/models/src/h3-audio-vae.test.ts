import { Tensor } from '@ninodes/kernels';
import { maxRelError } from '@ninodes/quant';
import { fixturePath, readSafetensorsFile } from '@ninodes/test-safetensors';
import { describe, expect, it } from 'vitest';
import { H3_AUDIO_HOP, h3AudioLatentFrames, openH3AudioDecoder } from './h3-audio-vae.js';

// A tiny random H3 audio VAE decoder (BigVGAN from 128 channels, conv weights F16) and its stereo
// waveform from a float64 re-implementation in PyTorch (tools/h3-vae-ref/audio_decoder.py).
const expected = readSafetensorsFile(fixturePath('h3-vae', 'audio-decoder-expect.safetensors')).tensors;

describe('H3 audio VAE decoder against the float64 reference', () => {
  it('stereo samples at 32 kHz within 1e-5 relative, 800 per latent frame', async () => {
    const { decoder, close } = openH3AudioDecoder(fixturePath('h3-vae', 'audio-decoder.safetensors'));
    try {
      const l = expected.get('latent')!;
      const wave = await decoder.decode(Tensor.fromArray('f32', l.shape, new Float32Array(l.bytes.slice().buffer)));
      expect(wave.shape).toEqual([2, 3 * H3_AUDIO_HOP]);
      expect(maxRelError(wave.data, new Float64Array(expected.get('waveform')!.bytes.slice().buffer))).toBeLessThan(1e-5);
    } finally {
      close();
    }
  });

  it('audio latent frames follow the video: 40 per second', () => {
    expect(h3AudioLatentFrames(5)).toBe(8);
    expect(h3AudioLatentFrames(56)).toBe(93);
    expect(h3AudioLatentFrames(1)).toBe(2);
  });

  it('a latent of the wrong shape and a file that is not an audio VAE are typed errors', async () => {
    const { decoder, close } = openH3AudioDecoder(fixturePath('h3-vae', 'audio-decoder.safetensors'));
    try {
      await expect(decoder.decode(Tensor.zeros('f32', [1, 32, 1, 4]))).rejects.toMatchObject({ code: 'SHAPE_MISMATCH' });
    } finally {
      close();
    }
    expect(() => openH3AudioDecoder(fixturePath('h3-vae', 'video-decoder.safetensors'))).toThrow(expect.objectContaining({ code: 'ARCHITECTURE_MISMATCH' }));
  });
});
