// A fresh process for the Vulkan tests that need their own Vulkan instance (it is made once per
// process): under VK_LAYER_KHRONOS_validation, or with no driver installed. Imports the built
// kernels package (NINODES_VK_JOB: { dist, mode }) and prints one JSON line.
const job = JSON.parse(process.env.NINODES_VK_JOB);
const k = await import(job.dist);

const values = (n, seed) => Float32Array.from({ length: n }, (_, i) => Math.sin(i * 12.9898 + seed) * 2);
const f32 = (shape, seed) => k.Tensor.fromArray('f32', shape, values(shape.reduce((a, b) => a * b, 1), seed));

const out = {};
try {
  if (job.mode === 'nodriver') {
    out.probe = k.vulkanProbe();
    try {
      k.openVulkanDevice(0);
      out.opened = true;
    } catch (error) {
      out.code = error.code;
      out.message = error.message;
    }
  } else {
    const dev = k.openVulkanDevice(0);
    const up = (t) => k.toDevice(t, dev.name);
    const x = await up(f32([4, 256], 1));
    const w = await up(f32([8, 256], 2));
    const b = await up(f32([8], 3));
    await k.toHost(await k.vkLinear(x, w, b));
    await k.toHost(await k.vkLinear(x, await up(await k.cast(f32([8, 256], 4), 'bf16'))));
    const { q, scale } = k.quantizeWeightInt8(f32([8, 256], 5), { convrot: 256 });
    await k.toHost(await k.vkInt8Linear(x, await up(q), await up(scale), b));
    await k.toHost(await k.vkRmsNorm(x, { weight: await up(f32([256], 6)), modulate: { shift: await up(f32([256], 7)), scale: await up(f32([256], 8)) } }));
    await k.toHost(await k.vkGatedResidual(x, x, await up(f32([256], 9))));
    await k.toHost(await k.vkSilu(x));
    await k.toHost(await k.vkRopeSplitHalf(await up(f32([4, 2, 16], 10)), f32([4, 8], 11), 16));
    const qkv = await up(f32([2, 5, 32], 12));
    await k.toHost(await k.vkAttention(qkv, qkv, qkv));
    out.validation = k.vulkanValidation();
  }
} catch (error) {
  out.error = { code: error.code, message: error.message };
}
process.stdout.write(`${JSON.stringify(out)}\n`);
