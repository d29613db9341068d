import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { encodeWav } from './wav.js';

describe('encodeWav', () => {
  it('interleaves planar channels as 16-bit PCM behind a 44-byte RIFF header', () => {
    const wav = encodeWav(Float32Array.from([0, 1, -1, 0.5, 2, -0.25]), 2, 32000);
    expect(wav.toString('ascii', 0, 4)).toBe('RIFF');
    expect([wav.readUInt16LE(22), wav.readUInt32LE(24), wav.readUInt16LE(34), wav.readUInt32LE(40)]).toEqual([2, 32000, 16, 12]);
    // left 0, 1, -1; right 0.5, 2 (clipped), -0.25
    expect(Array.from({ length: 6 }, (_, i) => wav.readInt16LE(44 + 2 * i))).toEqual([0, 16384, 32767, 32767, -32767, -8192]);
  });

  it('is read by ffprobe as stereo 32 kHz of the right length', () => {
    const dir = mkdtempSync(join(tmpdir(), 'ninodes-wav-'));
    try {
      const path = join(dir, 'a.wav');
      writeFileSync(path, encodeWav(new Float32Array(2 * 16000), 2, 32000));
      const r = spawnSync('ffprobe', ['-v', 'error', '-show_entries', 'stream=sample_rate,channels,duration', '-of', 'json', path], { encoding: 'utf8' });
      expect(r.status, r.stderr).toBe(0);
      expect(JSON.parse(r.stdout).streams[0]).toMatchObject({ sample_rate: '32000', channels: 2, duration: '0.500000' });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('refuses samples that do not split into the channels', () => {
    expect(() => encodeWav(new Float32Array(3), 2, 32000)).toThrow(expect.objectContaining({ code: 'INTERNAL' }));
  });
});
