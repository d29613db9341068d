// run --alloc / --budget and plan, end to end on a small synthetic H3 checkpoint: streaming most
// groups from the mapped file must not change a single byte of the latent.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SafetensorsFile, writeSafetensors } from '@ninodes/memory';
import { H3_DEFAULTS, gaussianNoise, layoutOf, writeSyntheticH3Checkpoint } from '@ninodes/models';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { main } from '../main.js';
import { runReportSchema } from '../run-report.js';
import { inProcessCli } from '../test-support/in-process-cli.js';

const dir = mkdtempSync(join(tmpdir(), 'ninodes-offload-'));
const ckpt = join(dir, 'h3-micro.safetensors');
const config = { ...H3_DEFAULTS, layers: 3, hidden: 256, heads: 4, headDim: 64, ffn: 512, tDim: 256, timeHidden: 256, ropeLen: 8 };

const cli = inProcessCli(dir);

beforeAll(async () => {
  await writeSyntheticH3Checkpoint(ckpt, { config, seed: 3 });
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const small = ['--frames', '1', '--height', '8', '--width', '8', '--steps', '2', '--threads', '1'];

describe('ninodes run --alloc', () => {
  // The checkpoint's linears are bf16: --quant bf16 streams them as stored (used from the mapping),
  // fp32, int8_convrot and fp8 (e4m3fn, its absmax and encoding on worker threads) convert them
  // (read into pooled buffers first).
  it.each(['f32', 'bf16', 'int8_convrot', 'f8_e4m3fn'])('--quant %s: cpu,4mb;disk,* writes the same latent bytes as the all-resident run', async (quant) => {
    const resident = await cli('run', '--model', ckpt, ...small, '--quant', quant, '--out', join(dir, `resident-${quant}`), '--json');
    expect(resident.status).toBe(0);
    const streamed = await cli('run', '--model', ckpt, ...small, '--quant', quant, '--alloc', 'cpu,4mb;disk,*', '--out', join(dir, `streamed-${quant}`), '--json');
    expect(streamed.stderr).not.toContain('error');
    expect(streamed.status).toBe(0);
    const a = runReportSchema.parse(JSON.parse(readFileSync(join(dir, `resident-${quant}`, 'report.json'), 'utf8')));
    const b = runReportSchema.parse(JSON.parse(readFileSync(join(dir, `streamed-${quant}`, 'report.json'), 'utf8')));
    expect(b.output.latentSha256).toBe(a.output.latentSha256);
    expect(readFileSync(join(dir, `streamed-${quant}`, 'latent.safetensors')).equals(readFileSync(join(dir, `resident-${quant}`, 'latent.safetensors')))).toBe(true);
    expect(a.offload).toBeUndefined();
    expect(b.offload?.allocation).toBe('cpu,4mb;disk,*');
    // Every block streamed in every pass of the model (4 MiB holds none of them), and the budget
    // was counted on measured resident bytes (RSS was sampled: a run with measuring off reports 0),
    // so blocks loaded over it were given back after use. The peak is not compared with the baseline:
    // RSS may shrink below what it was when the executor was made (GC, dropped pages).
    // Except int8 and fp8: a converted block holds a seventh of what converting it takes (its bf16
    // buffer and f32 intermediate beside its result), so the staging reserve, which holds a block
    // converting, holds all three converted: they stream in the first pass, and may stay.
    const passes = b.offload?.steps ?? [];
    // The adaLN weights' share of a block's bytes (every block streams: they are alike).
    const file = SafetensorsFile.open(ckpt);
    const block = layoutOf(file).groups.find((g) => g.name === 'blocks.0');
    file.close();
    const blockBytes = (block?.tensors ?? []).reduce((x, t) => x + t.byteLength, 0);
    const adalnShare = (block?.tensors ?? []).filter((t) => t.name.endsWith('adaln_proj.linear.weight')).reduce((x, t) => x + t.byteLength, 0) / blockBytes;
    expect(adalnShare).toBeGreaterThan(0.1);
    expect(passes.length).toBeGreaterThanOrEqual(2);
    // --alloc quotas are for weights: the budget is what the plan puts on the cpu, reserve included.
    const plan = JSON.parse((await cli('plan', ckpt, '--alloc', 'cpu,4mb;disk,*', '--quant', quant, '--frames', '1', '--height', '8', '--width', '8', '--json')).stdout);
    const cpu = plan.devices.find((d: { id: string }) => d.id === 'cpu');
    expect(b.offload?.budgetBytes).toBe(cpu.bytes + cpu.reserve);
    const stays = quant === 'int8_convrot' || quant === 'f8_e4m3fn';
    for (const p of stays ? passes.slice(0, 1) : passes.slice(1)) {
      expect(p.bytesStreamed).toBeGreaterThan(0);
      expect(p.peakResidentBytes).toBeGreaterThan(0);
      expect(p.baselineBytes).toBeGreaterThan(0);
      expect(p.peakAnonymousBytes + p.peakFileBackedBytes).toBeGreaterThanOrEqual(p.peakResidentBytes);
      if (!stays) expect(p.evictions).toBeGreaterThan(0);
      // Loads are timed whole: every second of them was hidden behind compute or exposed.
      expect(p.hiddenSeconds + p.exposedSeconds).toBeGreaterThan(0);
      // bf16 runs as stored: its streamed pages were populated off the JS thread (whole pages of
      // every streamed tensor but the adaLN weights, of which a video-only forward reads the rows
      // of one modality in three); converted weights are read into buffers instead.
      if (quant === 'bf16') {
        expect(p.bytesPopulated).toBeGreaterThanOrEqual(p.bytesStreamed * (1 - (2 / 3) * adalnShare));
        // Populated whole pages: at most two more per tensor.
        expect(p.bytesPopulated).toBeLessThan(p.bytesStreamed * (1 - (2 / 3) * adalnShare) + p.loads * (block?.tensors.length ?? 0) * 8192);
      } else expect(p.bytesPopulated).toBeLessThan(p.bytesStreamed);
    }
    if (stays) {
      // Streamed again in every pass: no block may stay, each is given back after use.
      const tight = await cli('run', '--model', ckpt, ...small, '--quant', quant, '--alloc', 'cpu,0b;disk,*', '--out', join(dir, `tight-${quant}`), '--json');
      expect(tight.status, tight.stderr).toBe(0);
      expect(readFileSync(join(dir, `tight-${quant}`, 'latent.safetensors')).equals(readFileSync(join(dir, `resident-${quant}`, 'latent.safetensors')))).toBe(true);
      const steps = runReportSchema.parse(JSON.parse(readFileSync(join(dir, `tight-${quant}`, 'report.json'), 'utf8'))).offload?.steps ?? [];
      expect(steps.length).toBeGreaterThanOrEqual(2);
      for (const p of steps.slice(1)) expect(p.bytesStreamed).toBeGreaterThan(0);
    }
  });

  it.each(['q8_0', 'q4_k'])('a GGUF %s file streams its blocks from the mapping (every block, every pass): the same latent bytes as resident', async (format) => {
    const gguf = join(dir, `h3-micro-${format}.gguf`);
    expect((await cli('quantize', ckpt, gguf, '--format', format)).status).toBe(0);
    const resident = await cli('run', '--model', gguf, ...small, '--out', join(dir, `gguf-resident-${format}`));
    expect(resident.status, resident.stderr).toBe(0);
    expect(resident.stdout).toContain(`${format} as stored`);
    const streamed = await cli('run', '--model', gguf, ...small, '--alloc', 'cpu,0b;disk,*', '--out', join(dir, `gguf-streamed-${format}`), '--json');
    expect(streamed.status, streamed.stderr).toBe(0);
    expect(readFileSync(join(dir, `gguf-streamed-${format}`, 'latent.safetensors')).equals(readFileSync(join(dir, `gguf-resident-${format}`, 'latent.safetensors')))).toBe(true);
    const steps = runReportSchema.parse(JSON.parse(readFileSync(join(dir, `gguf-streamed-${format}`, 'report.json'), 'utf8'))).offload?.steps ?? [];
    for (const p of steps.slice(1)) expect(p.bytesStreamed).toBeGreaterThan(0);
  });

  it('a text+audio checkpoint: the refiner streams too, with and without --context / --audio-frames, same bytes as resident', async () => {
    const av = join(dir, 'h3-micro-av.safetensors');
    await writeSyntheticH3Checkpoint(av, { config: { ...config, audioChannels: 32, textDim: 512, refinerLayers: 2 }, seed: 4 });
    const ctx = join(dir, 'av-context.safetensors');
    await writeSafetensors(ctx, [{ name: 'context', dtype: 'f32', shape: [1, 3, 512], data: () => gaussianNoise([1, 3, 512], 5).bytes() }]);
    for (const [name, streams] of [['video', []], ['streams', ['--context', ctx, '--audio-frames', '2']]] as const) {
      const resident = await cli('run', '--model', av, ...small, ...streams, '--out', join(dir, `av-resident-${name}`));
      expect(resident.status, resident.stderr).toBe(0);
      const streamed = await cli('run', '--model', av, ...small, ...streams, '--alloc', 'cpu,4mb;disk,*', '--out', join(dir, `av-streamed-${name}`), '--json');
      expect(streamed.status, streamed.stderr).toBe(0);
      for (const f of name === 'video' ? ['latent.safetensors'] : ['latent.safetensors', 'audio.safetensors']) {
        expect([f, readFileSync(join(dir, `av-streamed-${name}`, f)).equals(readFileSync(join(dir, `av-resident-${name}`, f)))]).toEqual([f, true]);
      }
    }
  });

  it('--budget B holds everything in B: the weights kept on the cpu get B less the reserve', async () => {
    // Staging for two streamed blocks (3 MiB each in f32) alone exceeds 4 MiB: refused up front.
    const r = await cli('run', '--model', ckpt, ...small, '--budget', '4MiB', '--out', join(dir, 'budget'), '--json');
    expect(r.status).toBe(1);
    expect(r.stderr).toContain('BUDGET_TOO_SMALL');
    const big = await cli('run', '--model', ckpt, ...small, '--budget', '64MiB', '--out', join(dir, 'budget-64'), '--json');
    expect(big.status).toBe(0);
    const planned = await cli('plan', ckpt, '--alloc', JSON.parse(big.stdout).offload.allocation, '--frames', '1', '--height', '8', '--width', '8', '--json');
    const doc = JSON.parse(planned.stdout);
    const cpu = doc.devices.find((d: { id: string }) => d.id === 'cpu');
    expect(cpu.bytes + cpu.reserve).toBeLessThanOrEqual(64 * 2 ** 20);
  });

  it('an allocation error names its column; --alloc and --budget are exclusive', async () => {
    const bad = await cli('run', '--model', ckpt, ...small, '--alloc', 'cpu,4mb;disk', '--out', join(dir, 'bad'));
    expect(bad.status).toBe(1);
    expect(bad.stderr).toContain('ALLOC_MISSING_COMMA');
    expect(bad.stderr).toContain('column 13');
    const both = await cli('run', '--model', ckpt, '--alloc', 'cpu,*', '--budget', '1gb');
    expect(both.status).toBe(2);
  });
});

describe('ninodes plan', () => {
  it('places the checkpoint for this machine (json) and for a recorded one (table)', async () => {
    const r = await cli('plan', ckpt, '--alloc', 'cpu,4mb;disk,*', '--json');
    expect(r.status).toBe(0);
    const doc = JSON.parse(r.stdout);
    expect(doc.compute).toBe('cpu');
    expect(doc.groups.filter((g: { device: string }) => g.device === 'disk').map((g: { name: string }) => g.name)).toEqual(['blocks.0', 'blocks.1', 'blocks.2']);
    expect(doc.devices.reduce((a: number, d: { bytes: number }) => a + d.bytes, 0)).toBe(doc.totalBytes);

    const machine = join(process.env.NINODES_REPO_ROOT as string, 'packages', 'device', 'fixtures', 'machines', 'w7900x2-gfx1100');
    const t = await cli('plan', ckpt, '--alloc', 'hip:0,1mb;hip:1,*', '--machine', machine);
    expect(t.status).toBe(0);
    expect(t.stdout).toMatch(/hip:0 \(compute\)/);
    expect(t.stdout).toMatch(/\nhip:1 .* blocks\.0-2$/m);
    // ComfyUI-MultiGPU's documented ratio form: '*' is the rest of 100%.
    const ratio = await cli('plan', ckpt, '--alloc', 'hip:0,50%;hip:1,*', '--machine', machine);
    expect(ratio.status, ratio.stderr).toBe(0);
    expect(ratio.stdout).toMatch(/^allocation hip:0,50%;hip:1,50% \(ratio/m);
  });

  it('plans the real-shape h3-full (a sparse file, read with layoutOf) for the W7900 pair', async () => {
    const full = join(dir, 'h3-full.safetensors');
    await writeSyntheticH3Checkpoint(full, { preset: 'h3-full', sparse: true });
    const machine = join(process.env.NINODES_REPO_ROOT as string, 'packages', 'device', 'fixtures', 'machines', 'w7900x2-gfx1100');
    const r = await cli('plan', full, '--alloc', 'hip:0,30gb;hip:1,*', '--machine', machine, '--frames', '21', '--height', '60', '--width', '104', '--json');
    expect(r.status, r.stderr).toBe(0);
    const doc = JSON.parse(r.stdout);
    const blocks = doc.groups.filter((g: { kind: string }) => g.kind === 'block');
    expect(blocks).toHaveLength(50);
    expect(doc.groups).toHaveLength(54); // time_embedder, rope, video_patch_proj, 50 blocks, final_layer
    const onFirst = blocks.filter((g: { device: string }) => g.device === 'hip:0').length;
    expect(blocks.map((g: { device: string }) => g.device)).toEqual([...Array(onFirst).fill('hip:0'), ...Array(50 - onFirst).fill('hip:1')]);
    expect(doc.devices.reduce((a: number, d: { bytes: number }) => a + d.bytes, 0)).toBe(doc.totalBytes);
    expect(doc.reserve.activationBytes).toBeGreaterThan(0);
    // Counted in f32 (4 B/param) the 32 G parameters fit neither card: a warning, exit 1, and the way out.
    const f32 = await cli('plan', full, '--alloc', 'hip:0,30gb;hip:1,*', '--machine', machine, '--quant', 'f32');
    expect(f32.status).toBe(1);
    expect(f32.stdout).toMatch(/warning: hip:1 is asked to hold/);
    expect(f32.stdout).toMatch(/this would: --alloc "hip:0,[0-9.]+[kmg]?b;hip:1,[0-9.]+[kmg]?b;disk,\*"/);
  });
});
