/**
 * Suite `gpu` (issue 30): the Vulkan device's GEMM per weight format and its attention, each beside
 * the CPU backend on the same operands. It runs on vk:0 whatever that is and says which: a real GPU,
 * or Mesa's lavapipe (a CPU implementation of Vulkan, `type: cpu`), whose numbers measure the code
 * path, not a GPU (the metric `is_gpu` says which). Every case fails with VULKAN_UNAVAILABLE where no Vulkan device exists (setup
 * installs lavapipe). The PyTorch-on-the-same-GPU peer is reported missing: the Python peer runs
 * PyTorch on the CPU only.
 */
import {
  Tensor,
  attention,
  cast,
  int8LinearQuantized,
  linear,
  openVulkanDevice,
  quantizeRowsInt8,
  quantizeWeightInt8,
  runOp,
  toDevice,
  toHost,
  vkAttention,
  vkInt8LinearQuantized,
  vkLinear,
  vulkanProbe,
} from '@ninodes/kernels';
import { attentionWork, intMmWork, linearWork } from '../peers/op-peers.js';
import type { BenchCase, Contender, Metric, Params, Suite } from '../suite.js';
import { randomF32 } from '../random-f32.js';


/** vk:0, and whether it is a GPU (lavapipe and other CPU implementations are not). */
function device(): { name: string; isGpu: Metric } {
  const vk = openVulkanDevice(0);
  const probe = vulkanProbe();
  const type = probe.available ? probe.devices[0]?.type : undefined;
  return { name: vk.name, isGpu: { value: type === 'discrete' || type === 'integrated' ? 1 : 0, unit: 'bool' } };
}

const noTorchGpu: Contender = { missing: 'the Python peer runs PyTorch on the CPU only: no CUDA / ROCm PyTorch peer yet' };

const GEMM_FULL: Params[] = [256, 1024].flatMap((m) => [1024, 3072].map((kn) => ({ m, k: kn, n: kn })));
const GEMM_QUICK: Params[] = [{ m: 64, k: 256, n: 256 }];
const shape = (p: Params) => ({ m: p.m as number, n: p.n as number, k: p.k as number });

function gemmCase(format: 'f32' | 'bf16'): BenchCase {
  return {
    name: `gemm_${format}`,
    description: `y = x·Wᵀ with an ${format} weight on vk:0 (tiles dequantized as they load), beside the CPU backend's linear`,
    params: { full: GEMM_FULL, quick: GEMM_QUICK },
    work: (p) => linearWork({ ...shape(p), bias: false }, format === 'f32' ? 'f32' : 'bf16'),
    setup: async (p) => {
      const { m, n, k } = shape(p);
      const dev = device();
      const x = randomF32([m, k], 1);
      const w32 = randomF32([n, k], 2);
      const w = format === 'f32' ? w32 : await cast(w32, 'bf16');
      const [dx, dw] = [await toDevice(x, dev.name), await toDevice(w, dev.name)];
      const wCpu = format === 'f32' ? w32 : await cast(w, 'f32');
      return {
        run: async () => (await vkLinear(dx, dw)).dispose(),
        against: { cpu_backend: { kind: 'baseline', contender: { run: () => linear(x, wCpu) } }, torch_gpu: { kind: 'peer', contender: noTorchGpu } },
        metrics: () => ({ is_gpu: dev.isGpu }),
        dispose: () => {
          dx.dispose();
          dw.dispose();
        },
      };
    },
  };
}

const int8Case: BenchCase = {
  name: 'gemm_int8',
  description: 'the int8 convrot GEMM on rows already quantized (int32 dot, dequant epilogue) on vk:0, beside the CPU backend',
  params: { full: GEMM_FULL, quick: GEMM_QUICK },
  work: (p) => intMmWork(shape(p)),
  setup: async (p) => {
    const { m, n, k } = shape(p);
    const dev = device();
    const { q: qx, scale: xs } = quantizeRowsInt8(randomF32([m, k], 3), { convrot: 256 });
    const { q: qw, scale: ws } = quantizeWeightInt8(randomF32([n, k], 4), { convrot: 256 });
    const on = await Promise.all([qx, xs, qw, ws].map((t) => toDevice(t as Tensor, dev.name)));
    const [dqx, dxs, dqw, dws] = on as [Tensor, Tensor, Tensor, Tensor];
    return {
      run: async () => (await vkInt8LinearQuantized(dqx, dxs, dqw, dws)).dispose(),
      against: { cpu_backend: { kind: 'baseline', contender: { run: () => int8LinearQuantized(qx, xs, qw, ws) } }, torch_gpu: { kind: 'peer', contender: noTorchGpu } },
      metrics: () => ({ is_gpu: dev.isGpu }),
      dispose: () => on.forEach((t) => t.dispose()),
    };
  },
};

const ATTN_FULL: Params[] = [256, 1024].map((seq) => ({ heads: 12, seq, dim: 128 }));
const ATTN_QUICK: Params[] = [{ heads: 2, seq: 64, dim: 64 }];

const attentionCase: BenchCase = {
  name: 'attention',
  description: 'flash-style attention (online softmax, O(S·D) memory) on vk:0, beside the CPU backend',
  params: { full: ATTN_FULL, quick: ATTN_QUICK },
  work: (p) => attentionWork({ batch: 1, heads: p.heads as number, seq: p.seq as number, dim: p.dim as number }, 'f32'),
  setup: async (p) => {
    const dims = [p.heads as number, p.seq as number, p.dim as number];
    const dev = device();
    const [q, k, v] = [randomF32(dims, 5), randomF32(dims, 6), randomF32(dims, 7)];
    const on = [await toDevice(q, dev.name), await toDevice(k, dev.name), await toDevice(v, dev.name)] as [Tensor<'f32'>, Tensor<'f32'>, Tensor<'f32'>];
    return {
      run: async () => (await vkAttention(...on)).dispose(),
      against: { cpu_backend: { kind: 'baseline', contender: { run: () => attention(q, k, v) } }, torch_gpu: { kind: 'peer', contender: noTorchGpu } },
      metrics: async () => {
        // The device's error against the CPU backend on these operands, so a fast wrong kernel shows.
        const gpu = (await toHost(await runOp('attention', on))).data as Float32Array;
        const cpu = (await attention(q, k, v)).data;
        let err = 0;
        for (let i = 0; i < cpu.length; i++) err = Math.max(err, Math.abs((gpu[i] as number) - (cpu[i] as number)));
        return { max_abs_error_vs_cpu: { value: err, unit: 'abs_error', better: 'lower' }, is_gpu: dev.isGpu };
      },
      dispose: () => on.forEach((t) => t.dispose()),
    };
  },
};

export const gpuSuite: Suite = {
  name: 'gpu',
  description: 'Vulkan device (vk:0): GEMM per weight format and attention beside the CPU backend; lavapipe is labelled as the CPU device it is',
  cases: [gemmCase('f32'), gemmCase('bf16'), int8Case, attentionCase],
};
