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

function probe(path: string): { streams: { codec_type: string; width?: number; height?: number; nb_read_frames?: string; r_frame_rate?: string }[] } {
  const r = spawnSync('ffprobe', ['-v', 'error', '-count_frames', '-show_entries', 'stream=codec_type,width,height,nb_read_frames,r_frame_rate', '-of', 'json', path], { encoding: 'utf8' });
  expect(r.status, r.stderr).toBe(0);
  return JSON.parse(r.stdout);
}

describe('ninodes generate', () => {
  it('writes an mp4 of the asked size, frame count and 24 fps from a prompt (h3-tiny parts)', async () => {
    const out = join(dir, 'fox');
    const r = await cli('generate', '--preset', 'h3-tiny', '--prompt', 'a red fox', '--frames', '5', '--width', '64', '--height', '64', '--steps', '2', '--threads', '1', '--out', out, '--json');
    expect(r.status, r.stderr).toBe(0);
    expect(readdirSync(out).sort()).toEqual(['report.json', 'video.mp4']);
    const video = probe(join(out, 'video.mp4')).streams.find((s) => s.codec_type === 'video');
    expect(video).toMatchObject({ width: 64, height: 64, nb_read_frames: '5', r_frame_rate: '24/1' });
    const report = JSON.parse(readFileSync(join(out, 'report.json'), 'utf8'));
    expect(report.stages.map((s: { name: string }) => s.name)).toEqual(['load', 'tokenize', 'text-encoder', 'sampler', 'video-vae', 'write']);
    expect(report.prompt.tokens).toBe(3);
    expect(report.video).toMatchObject({ width: 64, height: 64, frames: 5, fps: 24, latentShape: [1, 24, 2, 4, 4] });
  });

  it('aligns sizes up to 32 and frames to 17k + 5, and writes PNG frames with --frames-dir', async () => {
    const out = join(dir, 'frames');
    const r = await cli('generate', '--preset', 'h3-tiny', '--prompt', 'un renard roux « dans la neige », 2 fois 🦊', '--frames', '6', '--width', '40', '--height', '33', '--steps', '1', '--threads', '1', '--out', out, '--frames-dir');
    expect(r.status, r.stderr).toBe(0);
    expect(r.stderr).toContain('aligned to 64x64, 22 frames');
    const frames = readdirSync(join(out, 'frames')).sort();
    expect(frames).toHaveLength(22);
    const png = decodePng(readFileSync(join(out, 'frames', frames[0]!)));
    expect([png.width, png.height]).toEqual([64, 64]);
    expect([alignSize(864), alignSize(480), alignFrames(56), alignFrames(5), alignFrames(1)]).toEqual([864, 480, 56, 5, 5]);
  });

  it('refuses bad input with typed errors and leaves no output behind', async () => {
    const empty = await cli('generate', '--preset', 'h3-tiny', '--prompt', '   ', '--out', join(dir, 'empty'));
    expect(empty.status).not.toBe(0);
    expect(empty.stderr).toContain('CLI_INVALID_OPTION');
    const parts = await cli('generate', '--model', 'dit.safetensors', '--prompt', 'x', '--out', join(dir, 'parts'));
    expect(parts.stderr).toContain('--text-encoder');
    // A text encoder whose width is not the DiT's: the run fails after the encoder, before any file.
    const cache = join(dir, 'cache');
    const dit = readdirSync(cache).find((f) => /^h3-tiny.*\.safetensors$/.test(f) && !f.includes('qwen3') && !f.includes('video-vae'))!;
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
