// GGUF weights in the t2va linears: fixtures/h3av/gguf/model.gguf is the curve_pdd audio+video model
// written by gguf-py (make-gguf.py beside it) with condition_proj and the token refiner in Q8_0 /
// Q5_0, the rank-8 curve adaLN in F16 and the DiT blocks in Q8_0. dequant.safetensors holds
// gguf-py's own dequantization of those weights.
import { readFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Tensor, dequantize, isBlockDType } from '@ninodes/kernels';
import { type TensorSource, writeSafetensors } from '@ninodes/memory';
import { maxRelError, openCheckpoint, toF32 } from '@ninodes/quant';
import { readSafetensorsFile } from '@ninodes/test-safetensors';
import { afterAll, describe, expect, it } from 'vitest';
import { openH3Model } from './open-h3-model.js';

const root = join(process.env.NINODES_FIXTURES ?? '', 'h3av');
const gguf = join(root, 'gguf', 'model.gguf');
const curve = join(root, 'curve_pdd');
// Measured 2.9e-3 (video) and 2.1e-3 (audio) relative (1.6e-3 / 1.2e-3 from the weights alone, the
// rest from the GGUF kernels' int8 inputs): the bound is ~3x that.
const BOUND = 9e-3;
// The Q8_0 / Q5_0 linears multiply their blocks with inputs quantized per 32 values (ggml's Q8_0),
// while the f32 run multiplies the decoded weights: measured 2.0e-3 (video) and 1.6e-3 (audio)
// apart; the bound is ~3x that.
const INPUT_BOUND = 6e-3;
const dir = mkdtempSync(join(tmpdir(), 'ninodes-h3-gguf-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function f32(path: string, name: string): Tensor<'f32'> {
  const t = readSafetensorsFile(path).tensors.get(name);
  if (t === undefined || t.dtype !== 'F32') throw new Error(`${path}: no F32 ${name}`);
  const copy = new Float32Array(t.bytes.byteLength / 4);
  new Uint8Array(copy.buffer).set(t.bytes);
  return Tensor.fromArray('f32', t.shape, copy);
}

const config = JSON.parse(readFileSync(join(curve, 'config.json'), 'utf8')) as { sigma0: number; sigma1: number };
const inputs = join(curve, 'inputs.safetensors');
const input = () => ({ video: f32(inputs, 'latent'), audio: f32(inputs, 'audio'), context: f32(inputs, 'context'), sigma: config.sigma0, sigmaNext: config.sigma1 });

describe('H3 t2va forward over GGUF weights (fixtures/h3av/gguf, gguf-py)', () => {
  it('detects the curve form, the PDD bank and both streams; the new linears run their GGUF types', () => {
    const { model, close } = openH3Model(gguf);
    try {
      expect(model.config).toMatchObject({ curveGrid: 33, pddHeads: 4, audioChannels: 32, textDim: 192, refinerLayers: 2 });
      expect(model.unusedKeys()).toEqual([]);
      expect(model.linears.get('condition_proj')?.format).toBe('q8_0');
      expect(model.refiner[0]?.linears.qkv.format).toBe('q5_0');
      expect(model.refiner[1]?.linears.fc2.format).toBe('q8_0');
      expect(model.blocks[0]?.linears.adaln.format).toBe('f16');
      expect(model.linears.get('final_layer.adaln_proj.linear')?.format).toBe('f16');
      expect(model.blocks[1]?.linears.qkv.format).toBe('q8_0');
    } finally {
      close();
    }
  });

  it("the weights the new linears multiply by are gguf-py's dequantization, bit for bit", async () => {
    const { model, close } = openH3Model(gguf);
    const want = readSafetensorsFile(join(root, 'gguf', 'dequant.safetensors'));
    try {
      const ops = new Map([
        ['condition_proj', model.linears.get('condition_proj')],
        ['token_refiner.blocks.0.attn.qkv_proj', model.refiner[0]?.linears.qkv],
        ['token_refiner.blocks.0.attn.out_proj', model.refiner[0]?.linears.out],
        ['blocks.0.adaln_proj.linear', model.blocks[0]?.linears.adaln],
        ['blocks.1.adaln_proj.linear', model.blocks[1]?.linears.adaln],
        ['final_layer.adaln_proj.linear', model.linears.get('final_layer.adaln_proj.linear')],
      ]);
      expect([...want.tensors.keys()].sort()).toEqual([...ops.keys()].map((n) => `${n}.weight`).sort());
      for (const [name, op] of ops) {
        const w = await (op as NonNullable<typeof op>).materializedWeight();
        const ref = f32(join(root, 'gguf', 'dequant.safetensors'), `${name}.weight`);
        expect([name, w.shape]).toEqual([name, ref.shape]);
        expect([name, Buffer.from(w.bytes()).equals(Buffer.from(ref.bytes()))]).toEqual([name, true]);
      }
    } finally {
      close();
    }
  });

  it('stays within the input-quantization error of the forward over the same weights dequantized to f32, and within the quantization error of the float64 fixture', async () => {
    // The dequantized-weights checkpoint: every GGUF tensor decoded to f32 under its own name.
    const source = openCheckpoint(gguf);
    const plain = join(dir, 'dequantized.safetensors');
    try {
      const tensors: TensorSource[] = [];
      for (const e of source.entries()) {
        const t = source.tensor(e.name);
        const d = isBlockDType(t.dtype) ? ((await dequantize(t as never, 'f32')) as Tensor<'f32'>).reshape(e.shape) : toF32(t).reshape(e.shape);
        tensors.push({ name: e.name, dtype: 'f32', shape: e.shape, data: () => d.bytes() });
      }
      await writeSafetensors(plain, tensors);
    } finally {
      source.close();
    }
    const run = async (path: string) => {
      const { model, close } = openH3Model(path, { capture: false });
      try {
        return await model.forwardStreams(input());
      } finally {
        close();
      }
    };
    const got = await run(gguf);
    const ref = await run(plain);
    const dV = maxRelError(got.video.data, ref.video.data);
    const dA = maxRelError((got.audio as Tensor<'f32'>).data, (ref.audio as Tensor<'f32'>).data);
    if (process.env.NINODES_VERBOSE) console.log(`GGUF blocks vs dequantized f32 forward: video ${dV}, audio ${dA}`);
    // Not the f32 path in disguise (that would be 0), and no more than the inputs' quantization.
    expect(dV).toBeGreaterThan(1e-5);
    expect(dV).toBeLessThan(INPUT_BOUND);
    expect(dA).toBeGreaterThan(1e-5);
    expect(dA).toBeLessThan(INPUT_BOUND);
    const expect_ = join(curve, 'expect.safetensors');
    const errV = maxRelError(got.video.data, f32(expect_, 'velocity_video').data);
    const errA = maxRelError((got.audio as Tensor<'f32'>).data, f32(expect_, 'velocity_audio').data);
    if (process.env.NINODES_VERBOSE) console.log(`GGUF forward vs float64: video ${errV}, audio ${errA}`);
    // Q8_0 / Q5_0 weights: far from the 1e-5 of the bf16 weights, far below a wrong forward.
    expect(errV).toBeGreaterThan(1e-5);
    expect(errV).toBeLessThan(BOUND);
    expect(errA).toBeGreaterThan(1e-5);
    expect(errA).toBeLessThan(BOUND);
  });
});
