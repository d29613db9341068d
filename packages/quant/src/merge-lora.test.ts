import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Tensor, cast } from '@ninodes/kernels';
import { SafetensorsFile, tensorSources, writeSafetensors } from '@ninodes/memory';
import { afterAll, describe, expect, it } from 'vitest';
import { createLinearProvider } from './linear-provider.js';
import { readLoraFile } from './lora-file.js';
import type { LoraTarget } from './lora-map.js';
import { LoraPatcher } from './lora-patcher.js';
import { mergeLora } from './merge-lora.js';
import { quantize } from './quantize.js';
import { type TestLoraModule, seeded, writeTestLora } from './testing/lora-files.js';
import type { WeightPatcher } from './weight-patcher.js';

const dir = mkdtempSync(join(tmpdir(), 'ninodes-merge-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const [N, K] = [32, 256];
const LAYERS = Array.from({ length: 12 }, (_, i) => `blocks.${i}.mlp.fc2`);
const TARGETS: LoraTarget[] = LAYERS.map((name) => ({ name, outFeatures: N, inFeatures: K }));

async function checkpoint(): Promise<string> {
  const path = join(dir, 'model.safetensors');
  const tensors: Record<string, Tensor> = { 'final_norm.weight': Tensor.f32([K], Array.from(seeded(K, 9))) };
  LAYERS.forEach((l, i) => {
    tensors[`${l}.weight`] = Tensor.fromArray('f32', [N, K], seeded(N * K, i, 0.1));
    tensors[`${l}.bias`] = Tensor.fromArray('f32', [N], seeded(N, 100 + i));
  });
  await writeSafetensors(path, tensorSources(tensors));
  return path;
}

async function patcherFor(): Promise<LoraPatcher> {
  const lora = join(dir, 'lora.safetensors');
  const mods: TestLoraModule[] = [0, 3, 7].map((i) => ({ path: LAYERS[i] as string, n: N, k: K, rank: 4, alpha: 2, seed: 60 + i }));
  await writeTestLora(lora, 'kohya', mods);
  const patcher = new LoraPatcher(TARGETS);
  patcher.add(readLoraFile(lora), 0.8);
  return patcher;
}

const spec = (name: string) => ({ name, outFeatures: N, inFeatures: K, bias: true });

describe('mergeLora', () => {
  it('keeps the stored format: patched layers are the bytes the run path prepares, the rest is copied', async () => {
    const src = SafetensorsFile.open(await checkpoint());
    const patcher = await patcherFor();
    const out = join(dir, 'merged.safetensors');
    const report = await mergeLora(src, out, { patcher });
    expect(report.patched).toEqual([LAYERS[0], LAYERS[3], LAYERS[7]]);
    const merged = SafetensorsFile.open(out);
    const run = createLinearProvider(src, { patcher });
    for (const l of LAYERS) {
      const want = await run.linear(spec(l)).materializedWeight();
      expect(Buffer.from(merged.tensor(`${l}.weight`).bytes()).equals(Buffer.from(want.bytes()))).toBe(true);
      expect(Buffer.from(merged.tensor(`${l}.bias`).bytes()).equals(Buffer.from(src.tensor(`${l}.bias`).bytes()))).toBe(true);
    }
    expect(Buffer.from(merged.tensor(`${LAYERS[3]}.weight`).bytes()).equals(Buffer.from(src.tensor(`${LAYERS[3]}.weight`).bytes()))).toBe(false);
    // About one layer held (its f32 working copy), never the model.
    const layerBytes = N * K * 4;
    expect(report.peakHeldBytes).toBeGreaterThan(0);
    expect(report.peakHeldBytes).toBeLessThanOrEqual(layerBytes);
    expect(report.peakHeldBytes * 6).toBeLessThan(LAYERS.length * layerBytes);
    merged.close();
    src.close();
  });

  it('--format int8_convrot: the merged file runs with the same int8 operands as the patched run quantized on the fly', async () => {
    const src = SafetensorsFile.open(await checkpoint());
    const patcher = await patcherFor();
    const out = join(dir, 'merged-int8.safetensors');
    const report = await mergeLora(src, out, { patcher, format: 'int8_convrot' });
    expect(report.peakHeldBytes).toBeLessThan(2 * N * K * 4);
    const merged = SafetensorsFile.open(out);
    const fromFile = createLinearProvider(merged);
    const onTheFly = createLinearProvider(src, { patcher, compute: 'int8_convrot' });
    for (const l of LAYERS) {
      const a = await fromFile.linear(spec(l)).int8Operands();
      const b = await onTheFly.linear(spec(l)).int8Operands();
      expect(fromFile.detection.layers.get(l)?.format).toBe('int8_convrot');
      expect(Buffer.from(a?.q.bytes() ?? []).equals(Buffer.from(b?.q.bytes() ?? [1]))).toBe(true);
      expect([...(a?.scale.data ?? [])]).toEqual([...(b?.scale.data ?? [])]);
    }
    merged.close();
    src.close();
  });

  it('an int8 convrot checkpoint merged in its own format: requantized patched layers, the rest copied byte for byte', async () => {
    const f32 = SafetensorsFile.open(await checkpoint());
    const q = join(dir, 'model-int8.safetensors');
    await quantize(f32, q, { format: 'int8_convrot' });
    f32.close();
    const src = SafetensorsFile.open(q);
    const patcher = await patcherFor();
    const out = join(dir, 'merged-int8-keep.safetensors');
    await mergeLora(src, out, { patcher });
    const merged = SafetensorsFile.open(out);
    const fromFile = createLinearProvider(merged);
    const run = createLinearProvider(src, { patcher });
    for (const l of LAYERS) {
      const a = await fromFile.linear(spec(l)).int8Operands();
      const b = await run.linear(spec(l)).int8Operands();
      expect(Buffer.from(a?.q.bytes() ?? []).equals(Buffer.from(b?.q.bytes() ?? [1]))).toBe(true);
      expect([...(a?.scale.data ?? [])]).toEqual([...(b?.scale.data ?? [])]);
    }
    expect(Buffer.from(merged.tensor(`${LAYERS[1]}.weight`).bytes()).equals(Buffer.from(src.tensor(`${LAYERS[1]}.weight`).bytes()))).toBe(true);
    merged.close();
    src.close();
  });

  it('an fp8 checkpoint merged in its own format: patched layers re-encoded with a new scale, as the run path prepares them', async () => {
    const f32 = SafetensorsFile.open(await checkpoint());
    const q = join(dir, 'model-fp8.safetensors');
    await quantize(f32, q, { format: 'f8_e4m3fn' });
    f32.close();
    const src = SafetensorsFile.open(q);
    const patcher = await patcherFor();
    const out = join(dir, 'merged-fp8-keep.safetensors');
    await mergeLora(src, out, { patcher });
    const merged = SafetensorsFile.open(out);
    const fromFile = createLinearProvider(merged);
    const run = createLinearProvider(src, { patcher });
    for (const l of LAYERS) {
      expect(fromFile.detection.layers.get(l)?.format).toBe('f8_e4m3fn');
      const a = await fromFile.linear(spec(l)).materializedWeight();
      const b = await run.linear(spec(l)).materializedWeight();
      expect(Buffer.from(a.bytes()).equals(Buffer.from(b.bytes()))).toBe(true);
    }
    expect(merged.tensor(`${LAYERS[0]}.weight_scale`).shape).toEqual([]);
    expect([...(merged.tensor(`${LAYERS[0]}.weight_scale`).data as Float32Array)]).not.toEqual([...(src.tensor(`${LAYERS[0]}.weight_scale`).data as Float32Array)]);
    merged.close();
    src.close();
  });

  it('--format bf16: every linear weight as bf16, the patched ones rounded from the f32 patch', async () => {
    const src = SafetensorsFile.open(await checkpoint());
    const patcher = await patcherFor();
    const out = join(dir, 'merged-bf16.safetensors');
    await mergeLora(src, out, { patcher, format: 'bf16' });
    const merged = SafetensorsFile.open(out);
    const run = createLinearProvider(src, { patcher });
    for (const l of [LAYERS[0], LAYERS[1]] as string[]) {
      expect(merged.entry(`${l}.weight`).dtype).toBe('bf16');
      const want = cast(await run.linear(spec(l)).materializedWeight(), 'bf16');
      expect(Buffer.from(merged.tensor(`${l}.weight`).bytes()).equals(Buffer.from(want.bytes()))).toBe(true);
    }
    // Not a linear weight: as stored.
    expect(merged.entry('final_norm.weight').dtype).toBe('f32');
    merged.close();
    src.close();
  });

  it('a failure half-way leaves neither the target nor a temporary', async () => {
    const src = SafetensorsFile.open(await checkpoint());
    const failing: WeightPatcher = {
      has: (layer) => layer === LAYERS[5],
      apply: async () => {
        throw new Error('boom');
      },
    };
    const sub = mkdtempSync(join(dir, 'fail-'));
    await expect(mergeLora(src, join(sub, 'out.safetensors'), { patcher: failing })).rejects.toThrow('boom');
    expect(readdirSync(sub)).toEqual([]);
    src.close();
  });
});
