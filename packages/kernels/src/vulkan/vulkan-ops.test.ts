// Every Vulkan op against the CPU backend at small shapes (lavapipe does ~5 GFLOP per CPU-second).
import { describe, expect, it } from 'vitest';
import { cast } from '../cast.js';
import { decodeFp8, encodeFp8 } from '../fp8.js';
import { dequantize } from '../gguf-dequantize.js';
import { quantizeGguf } from '../gguf-quantize.js';
import { int8Linear, int8LinearQuantized, quantizeRowsInt8, quantizeWeightInt8 } from '../int8.js';
import { linear } from '../linear.js';
import { gelu, silu, swiglu } from '../ops/activations.js';
import { attention } from '../ops/attention.js';
import { add, addcmul, modulate, mul, scale } from '../ops/elementwise.js';
import { gatedResidual, rmsNormModulate } from '../ops/fused-elementwise.js';
import { layerNorm, rmsNorm, softmax } from '../ops/norms.js';
import { ropeSplitHalf } from '../ops/rope.js';
import { Tensor } from '../tensor.js';
import { randomF32 } from '../test-support/numeric.js';
import { toDevice, toHost } from '../backend/transfer.js';
import { runOp } from '../backend/dispatch.js';
import { vulkanTestDevice } from '../test-support/vulkan-device.js';
import { openVulkanDevice } from './vulkan-backend.js';
import { VulkanBuffer } from './vulkan-device.js';
import { vkAdd, vkAttention, vkGatedResidual, vkGelu, vkInt8Linear, vkLinear, vkModulate, vkMul, vkRmsNorm, vkRopeSplitHalf, vkSilu } from './vulkan-ops.js';

const device = vulkanTestDevice();

/** max |a - b| / max(1, max |b|): the error relative to the output's scale. */
function relErr(a: Tensor, b: Tensor): number {
  const x = a.data as Float32Array;
  const y = b.data as Float32Array;
  expect(x.length).toBe(y.length);
  let err = 0;
  let mag = 1;
  for (let i = 0; i < y.length; i++) {
    err = Math.max(err, Math.abs((x[i] as number) - (y[i] as number)));
    mag = Math.max(mag, Math.abs(y[i] as number));
  }
  return err / mag;
}

describe.skipIf(device === undefined)('Vulkan ops against the CPU backend', () => {
  const dev = device!;
  const up = <T extends Tensor>(t: T) => toDevice(t, dev.name);

  it('round-trips bytes through a device buffer', async () => {
    const x = randomF32([3, 5], 1);
    const back = await toHost(await up(x));
    expect(Array.from(back.data as Float32Array)).toEqual(Array.from(x.data));
  });

  it('linear f32 with and without bias, ragged tiles', async () => {
    const x = randomF32([2, 7, 40], 2);
    const w = randomF32([33, 40], 3, 0.2);
    const b = randomF32([33], 4);
    const cpu = await linear(x, w, b);
    expect(relErr(await toHost(await vkLinear(await up(x), await up(w), await up(b))), cpu)).toBeLessThan(1e-6);
    const cpuNoBias = await linear(x, w);
    expect(relErr(await toHost(await vkLinear(await up(x), await up(w))), cpuNoBias)).toBeLessThan(1e-6);
  });

  it('linear with a bf16 weight equals the CPU on the same bf16 values', async () => {
    const x = randomF32([5, 64], 5);
    const w = await cast(randomF32([18, 64], 6, 0.2), 'bf16');
    const cpu = await linear(x, await cast(w, 'f32'));
    expect(relErr(await toHost(await vkLinear(await up(x), await up(w))), cpu)).toBeLessThan(1e-6);
  });

  it('linear with fp8 weights (e4m3fn, e5m2) and a per-tensor scale', async () => {
    const x = randomF32([4, 48], 7);
    for (const format of ['f8_e4m3fn', 'f8_e5m2'] as const) {
      const w8 = encodeFp8(randomF32([21, 48], 8, 0.5), format);
      const scale = 0.75;
      const deq = decodeFp8(w8, { scale });
      const cpu = await linear(x, deq);
      expect(relErr(await toHost(await vkLinear(await up(x), await up(w8), null, { scale })), cpu)).toBeLessThan(1e-6);
    }
  });

  it('linear with a GGUF Q8_0 weight, blocks dequantized as the tiles load', async () => {
    const x = randomF32([3, 96], 9);
    const q = await quantizeGguf(randomF32([20, 96], 10, 0.3), 'q8_0');
    const cpu = await linear(x, await dequantize(q, 'f32'));
    expect(relErr(await toHost(await vkLinear(await up(x), await up(q))), cpu)).toBeLessThan(1e-6);
  });

  it('linear with a GGUF Q4_K weight (super-blocks of 256, 6-bit scales and mins)', async () => {
    const x = randomF32([3, 512], 36);
    const q = await quantizeGguf(randomF32([9, 512], 37, 0.3), 'q4_k');
    const cpu = await linear(x, await dequantize(q, 'f32'));
    expect(relErr(await toHost(await vkLinear(await up(x), await up(q))), cpu)).toBeLessThan(1e-6);
  });

  it('int8 convrot linear equals the CPU backend bit for bit', async () => {
    const x = randomF32([6, 512], 11);
    const { q, scale } = quantizeWeightInt8(randomF32([24, 512], 12, 0.2), { convrot: 256 });
    const bias = randomF32([24], 13);
    const cpu = await int8Linear(x, q, scale, { bias, convrot: 256 });
    const gpu = await toHost(await vkInt8Linear(await up(x), await up(q), await up(scale), await up(bias)));
    expect(Array.from(gpu.data as Float32Array)).toEqual(Array.from(cpu.y.data));
  });

  it('RMSNorm, with weight and with modulate', async () => {
    const x = randomF32([5, 300], 14);
    const w = randomF32([300], 15);
    const shift = randomF32([300], 16);
    const sc = randomF32([300], 17, 0.1);
    expect(relErr(await toHost(await vkRmsNorm(await up(x), { weight: await up(w), eps: 1e-6 })), rmsNorm(x, w, 1e-6))).toBeLessThan(1e-6);
    const gpu = await vkRmsNorm(await up(x), { weight: await up(w), eps: 1e-6, modulate: { shift: await up(shift), scale: await up(sc) } });
    expect(relErr(await toHost(gpu), rmsNormModulate(x, w, shift, sc, 1e-6))).toBeLessThan(1e-6);
  });

  it('SiLU, GELU (tanh), add, mul, gated residual, modulate', async () => {
    const x = randomF32([4, 6, 10], 18, 3);
    const b = randomF32([4, 6, 10], 19);
    const row = randomF32([10], 20);
    const row2 = randomF32([10], 21, 0.1);
    const dx = await up(x);
    expect(relErr(await toHost(await vkSilu(dx)), silu(x))).toBeLessThan(1e-6);
    expect(relErr(await toHost(await vkGelu(dx)), gelu(x))).toBeLessThan(1e-6);
    expect(relErr(await toHost(await vkAdd(dx, await up(b))), add(x, b))).toBe(0);
    expect(relErr(await toHost(await vkMul(dx, await up(row))), mul(x, row))).toBe(0);
    expect(relErr(await toHost(await vkGatedResidual(dx, await up(b), await up(row))), gatedResidual(x, b, row))).toBeLessThan(1e-7);
    expect(relErr(await toHost(await vkModulate(dx, await up(row), await up(row2))), modulate(x, row, row2))).toBeLessThan(1e-7);
  });

  it('LayerNorm (weight, bias), softmax, SwiGLU, scale and addcmul through runOp', async () => {
    const x = randomF32([6, 200], 38, 2);
    const w = randomF32([200], 39);
    const b = randomF32([200], 40);
    const [dx, dw, db] = [await up(x), await up(w), await up(b)];
    expect(relErr(await toHost(await runOp('layerNorm', [dx, dw, db, 1e-5])), layerNorm(x, w, b, 1e-5))).toBeLessThan(1e-6);
    expect(relErr(await toHost(await runOp('layerNorm', [dx, null, null, 1e-5])), layerNorm(x, null, null, 1e-5))).toBeLessThan(1e-6);
    expect(relErr(await toHost(await runOp('softmax', [dx])), softmax(x))).toBeLessThan(1e-6);
    expect(relErr(await toHost(await runOp('swiglu', [dx])), swiglu(x))).toBeLessThan(1e-6);
    expect(relErr(await toHost(await runOp('scale', [dx, 0.37])), scale(x, 0.37))).toBe(0);
    expect(relErr(await toHost(await runOp('addcmul', [dx, dw, db])), addcmul(x, w, b))).toBeLessThan(1e-7);
  });

  it('split-half RoPE on part of each head, large angles', async () => {
    const x = randomF32([7, 3, 20], 22);
    const angles = randomF32([7, 8], 23, 300);
    const cpu = ropeSplitHalf(x, angles, 16);
    expect(relErr(await toHost(await vkRopeSplitHalf(await up(x), angles, 16)), cpu)).toBeLessThan(1e-6);
  });

  it('flash-style attention over several key chunks, heads merged or not', async () => {
    const q = randomF32([2, 9, 24], 24);
    const k = randomF32([2, 150, 24], 25);
    const v = randomF32([2, 150, 24], 26);
    const cpu = await attention(q, k, v);
    const [dq, dk, dv] = [await up(q), await up(k), await up(v)];
    expect(relErr(await toHost(await vkAttention(dq, dk, dv)), cpu)).toBeLessThan(1e-5);
    const merged = await attention(q, k, v, { mergeHeads: true });
    expect(relErr(await toHost(await vkAttention(dq, dk, dv, { mergeHeads: true })), merged)).toBeLessThan(1e-5);
  });

  it('bad shapes are coded errors before anything runs', async () => {
    const x = await up(randomF32([2, 8], 27));
    const w = await up(randomF32([3, 9], 28));
    await expect(vkLinear(x, w)).rejects.toMatchObject({ code: 'SHAPE_MISMATCH' });
    // The native check catches what a caller of the raw dispatch gets wrong: y too small here.
    const raw = dev.empty('f32', [2]);
    const id = (t: Tensor) => (t.storage.buffer as VulkanBuffer).id;
    await expect(dev.run([{ op: 'linear_f32', buffers: [id(x), id(w), id(raw), id(raw)], push: new Uint32Array([2, 3, 8, 0, 0]) }])).rejects.toMatchObject({
      code: 'SHAPE_MISMATCH',
    });
    const freed = id(raw);
    raw.dispose();
    await expect(dev.run([{ op: 'elementwise', buffers: [freed, freed, freed, freed], push: new Uint32Array([2, 0, 1, 1]) }])).rejects.toMatchObject({ code: 'VULKAN_BUFFER_FREED' });
    await expect(vkLinear(x, await up(randomF32([3, 8], 29)), randomF32([3], 30))).rejects.toMatchObject({ code: 'DEVICE_MISMATCH' });
    expect(() => openVulkanDevice(1000)).toThrow(expect.objectContaining({ code: 'VULKAN_DEVICE_NOT_FOUND' }));
  });

  it('runs through the compute-device seam: runOp on vk tensors, OP_UNSUPPORTED where it has no kernel', async () => {
    const x = randomF32([3, 64], 31);
    const w = randomF32([5, 64], 32);
    const y = await runOp('linear', [await up(x), await up(w)]);
    expect(y.device).toBe(dev.name);
    expect(relErr(await toHost(y), await linear(x, w))).toBeLessThan(1e-6);
    const s = await runOp('rmsNorm', [await up(x), null, 1e-6]);
    expect(relErr(await toHost(s), rmsNorm(x, null, 1e-6))).toBeLessThan(1e-6);
    await expect(runOp('cast', [await up(x), 'bf16'])).rejects.toMatchObject({ code: 'OP_UNSUPPORTED' });
    expect(() => (y as Tensor<'f32'>).data).toThrow(expect.objectContaining({ code: 'TENSOR_NOT_ON_HOST' }));
  });

  it('int8 on quantized rows (the seam op int8LinearQuantized) equals the CPU bit for bit', async () => {
    const x = randomF32([5, 256], 33);
    const { q: qw, scale: ws } = quantizeWeightInt8(randomF32([12, 256], 34, 0.2), { convrot: 256 });
    const { q: qx, scale: xs } = quantizeRowsInt8(x, { convrot: 256 });
    const bias = randomF32([12], 35);
    const cpu = await int8LinearQuantized(qx, xs, qw, ws, { bias });
    const gpu = await runOp('int8LinearQuantized', [await up(qx), await up(xs), await up(qw), await up(ws), { bias: await up(bias) }]);
    expect(Array.from((await toHost(gpu)).data as Float32Array)).toEqual(Array.from(cpu.data));
  });
});
