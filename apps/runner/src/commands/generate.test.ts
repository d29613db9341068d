// `ninodes generate` end to end on the synthetic h3-tiny parts (DiT, Qwen3 text encoder, video
// VAE): the mp4 read back with Debian's ffprobe, the PNG frames, the alignments and the failures.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { writeSyntheticQwen3 } from '@ninodes/models';
import { afterAll, describe, expect, it } from 'vitest';
import { inProcessCli } from '../test-support/in-process-cli.js';
import { decodePng } from '../test-support/png-decode.js';
import { alignFrames, alignSize } from './generate.js';

const dir = mkdtempSync(join(tmpdir(), 'ninodes-generate-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const cli = inProcessCli(dir);

interface Probed {
  streams: { codec_type: string; width?: number; height?: number; nb_read_frames?: string; r_frame_rate?: string; sample_rate?: string; channels?: number; duration?: string }[];
}

function probe(path: string): Probed {
  const r = spawnSync('ffprobe', ['-v', 'error', '-count_frames', '-show_entries', 'stream=codec_type,width,height,nb_read_frames,r_frame_rate,sample_rate,channels,duration', '-of', 'json', path], { encoding: 'utf8' });
  expect(r.status, r.stderr).toBe(0);
  return JSON.parse(r.stdout);
}

describe('ninodes generate', () => {
  it('writes an mp4 of the asked size, frame count and 24 fps with a stereo 32 kHz track of its length (h3-tiny parts)', async () => {
    const out = join(dir, 'fox');
    const r = await cli('generate', '--preset', 'h3-tiny', '--prompt', 'a red fox', '--frames', '5', '--width', '64', '--height', '64', '--steps', '2', '--threads', '1', '--out', out, '--json');
    expect(r.status, r.stderr).toBe(0);
    expect(readdirSync(out).sort()).toEqual(['report.json', 'video.mp4']);
    const streams = probe(join(out, 'video.mp4')).streams;
    expect(streams.find((s) => s.codec_type === 'video')).toMatchObject({ width: 64, height: 64, nb_read_frames: '5', r_frame_rate: '24/1' });
    // 5 frames at 24 fps: round(5 · 40 / 24) = 8 audio latent frames of 800 samples, 0.2 s (AAC frames of 1024 samples round it up).
    const audio = streams.find((s) => s.codec_type === 'audio');
    expect(audio).toMatchObject({ sample_rate: '32000', channels: 2 });
    expect(Math.abs(Number(audio?.duration) - 0.2)).toBeLessThan(0.04);
    const report = JSON.parse(readFileSync(join(out, 'report.json'), 'utf8'));
    expect(report.stages.map((s: { name: string }) => s.name)).toEqual(['load', 'tokenize', 'text-encoder', 'sampler', 'video-vae', 'audio-vae', 'write']);
    expect(report.audio).toEqual({ sampleRate: 32000, channels: 2, samples: 6400, seconds: 0.2 });
    expect(report.prompt.tokens).toBe(3);
    expect(report.video).toMatchObject({ width: 64, height: 64, frames: 5, fps: 24, latentShape: [1, 24, 2, 4, 4] });
  });

  it('aligns sizes up to 32 and frames to 17k + 5, and writes PNG frames with --frames-dir', async () => {
    const out = join(dir, 'frames');
    const r = await cli('generate', '--preset', 'h3-tiny', '--prompt', 'un renard roux « dans la neige », 2 fois 🦊', '--frames', '6', '--width', '40', '--height', '33', '--steps', '1', '--threads', '1', '--vae-tile', '2', '--out', out, '--frames-dir');
    expect(r.status, r.stderr).toBe(0);
    expect(r.stderr).toContain('aligned to 64x64, 22 frames');
    const frames = readdirSync(join(out, 'frames')).sort();
    expect(frames).toHaveLength(22);
    expect(readdirSync(out).sort()).toEqual(['audio.wav', 'frames', 'report.json']);
    // 22 frames at 24 fps: round(22 · 40 / 24) = 37 latent frames, 29600 samples.
    const wav = probe(join(out, 'audio.wav')).streams[0];
    expect(wav).toMatchObject({ sample_rate: '32000', channels: 2, duration: '0.925000' });
    const png = decodePng(readFileSync(join(out, 'frames', frames[0]!)));
    expect([png.width, png.height]).toEqual([64, 64]);
    expect([alignSize(864), alignSize(480), alignFrames(56), alignFrames(5), alignFrames(1)]).toEqual([864, 480, 56, 5, 5]);
  });

  it('--budget streams the layers of every stage from the file and gives the same frames', async () => {
    const args = ['generate', '--preset', 'h3-tiny', '--prompt', 'a fox in the snow', '--frames', '5', '--width', '32', '--height', '32', '--steps', '1', '--threads', '1', '--frames-dir'];
    const whole = await cli(...args, '--out', join(dir, 'whole'));
    expect(whole.status, whole.stderr).toBe(0);
    const budget = await cli(...args, '--budget', '24mb', '--out', join(dir, 'budget'));
    expect(budget.status, budget.stderr).toBe(0);
    const report = JSON.parse(readFileSync(join(dir, 'budget', 'report.json'), 'utf8'));
    expect(report.budget.stages.map((s: { stage: string }) => s.stage)).toEqual(['text-encoder', 'sampler', 'video-vae']);
    for (const s of report.budget.stages) {
      expect(s.allocation).toContain('disk');
      expect(s.loads, s.stage).toBeGreaterThan(0);
    }
    const frames = readdirSync(join(dir, 'whole', 'frames')).sort();
    for (const f of frames) expect(readFileSync(join(dir, 'budget', 'frames', f)).equals(readFileSync(join(dir, 'whole', 'frames', f))), f).toBe(true);
    expect(readFileSync(join(dir, 'budget', 'audio.wav')).equals(readFileSync(join(dir, 'whole', 'audio.wav')))).toBe(true);
  });

  it('--negative with --cfg guides every step away from the negative prompt (other frames than --cfg 1)', async () => {
    const args = ['generate', '--preset', 'h3-tiny', '--prompt', 'a fox in the snow', '--frames', '5', '--width', '32', '--height', '32', '--steps', '1', '--threads', '1', '--frames-dir'];
    const r = await cli(...args, '--negative', 'blurry, dark', '--cfg', '3', '--out', join(dir, 'cfg'));
    expect(r.status, r.stderr).toBe(0);
    const report = JSON.parse(readFileSync(join(dir, 'cfg', 'report.json'), 'utf8'));
    expect(report.sampler.cfg).toBe(3);
    expect(report.prompt.negativeTokens).toBeGreaterThan(0);
    const frame = 'frame-00000.png';
    expect(readFileSync(join(dir, 'cfg', 'frames', frame)).equals(readFileSync(join(dir, 'whole', 'frames', frame)))).toBe(false);
    const missing = await cli(...args, '--cfg', '3', '--out', join(dir, 'cfg-missing'));
    expect(missing.status).toBe(2);
    expect(missing.stderr).toContain('--negative');
  });

  it('refuses bad input with typed errors and leaves no output behind', async () => {
    const empty = await cli('generate', '--preset', 'h3-tiny', '--prompt', '   ', '--out', join(dir, 'empty'));
    expect(empty.status).not.toBe(0);
    expect(empty.stderr).toContain('CLI_INVALID_OPTION');
    const parts = await cli('generate', '--model', 'dit.safetensors', '--prompt', 'x', '--out', join(dir, 'parts'));
    expect(parts.stderr).toContain('--text-encoder');
    // A text encoder whose width is not the DiT's: the run fails after the encoder, before any file.
    const cache = join(dir, 'cache');
    const dit = readdirSync(cache).find((f) => /^h3-tiny.*\.safetensors$/.test(f) && !/qwen3|vae/.test(f))!;
    const vae = readdirSync(cache).find((f) => f.includes('video-vae'))!;
    const narrow = join(dir, 'narrow-qwen3.safetensors');
    await writeSyntheticQwen3(narrow, { hidden: 128, layers: 1, heads: 2, kvHeads: 1, headDim: 64, ffn: 256, vocab: 151936 });
    const mismatch = await cli('generate', '--model', join(cache, dit), '--text-encoder', narrow, '--vae', join(cache, vae), '--prompt', 'x', '--steps', '1', '--out', join(dir, 'mismatch'));
    expect(mismatch.status).not.toBe(0);
    expect(mismatch.stderr).toContain('PARTS_MISMATCH');
    expect(existsSync(join(dir, 'mismatch'))).toBe(false);
    expect(readdirSync(dir).filter((f) => f.includes('mismatch'))).toEqual([]);
  });
});
