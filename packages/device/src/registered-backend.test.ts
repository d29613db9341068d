// A compute backend registered from outside @ninodes/kernels runs ops through kernels' seam: the
// shape a second backend (Vulkan) takes. Its "device" keeps tensors in private memory that only its
// buffers' write/read reach, and runs each op by the reference math on its own bytes.
import {
  type Backend,
  type BackendOps,
  type BufferType,
  type ComputeDevice,
  type DeviceBuffer,
  type OpName,
  Tensor,
  byteSizeOf,
  reference,
  registerDevice,
  runOp,
  toDevice,
  toHost,
} from '@ninodes/kernels';
import { describe, expect, it } from 'vitest';

function simulatedDevice(name: string): ComputeDevice {
  const bufferType: BufferType = {
    name: `${name} memory`,
    device: name,
    isHost: false,
    alignment: 256,
    allocSize: (dtype, shape) => byteSizeOf(dtype, shape),
    allocate(byteLength): DeviceBuffer {
      let memory: Uint8Array | undefined = new Uint8Array(byteLength);
      const live = (): Uint8Array => {
        if (memory === undefined) throw new Error(`${name}: buffer released`);
        return memory;
      };
      return {
        bufferType,
        byteLength,
        get released() {
          return memory === undefined;
        },
        release: () => void (memory = undefined),
        write: async (offset, bytes) => void live().set(bytes, offset),
        read: async (offset, length) => live().slice(offset, offset + length),
      };
    },
  };
  // "Kernels" of the device: read the operands' device bytes, compute, leave the result on the device.
  const onDevice = async (t: Tensor<'f32'>): Promise<Tensor<'f32'>> => toDevice(t, name);
  const ops: BackendOps = {
    add: async (a, b) => onDevice(reference.add(await toHost(a), await toHost(b))),
    rmsNorm: async (x, weight, eps) => onDevice(reference.rmsNorm(await toHost(x), weight ? await toHost(weight) : weight, eps)),
  };
  const supported: readonly OpName[] = ['add', 'rmsNorm'];
  let backend: Backend | undefined;
  const device: ComputeDevice = {
    name,
    kind: 'gpu',
    description: 'a device simulated in private host memory',
    bufferType,
    memory: () => ({ free: 1 << 30, total: 1 << 30 }),
    backend: () =>
      (backend ??= {
        name,
        device,
        ops,
        supportsOp: (op) => supported.includes(op),
        preparedWeightBytes: ({ kind, shape: [n, k] }) => (kind === 'f32' ? 4 * n * k : n * k),
        synchronize: async () => {},
      }),
  };
  return device;
}

describe('a backend registered from outside kernels', () => {
  it('runs ops on its own tensors, equal to the reference backend on host copies', async () => {
    const unregister = registerDevice(simulatedDevice('sim:0'));
    try {
      const x = Tensor.f32([2, 4], [1, -2, 3, 0.5, 4, 5, -6, 7]);
      const w = Tensor.f32([4], [0.5, 1, 2, -1]);
      const dx = await toDevice(x, 'sim:0');
      const dw = await toDevice(w, 'sim:0');
      expect(() => dx.data).toThrow(expect.objectContaining({ code: 'TENSOR_NOT_ON_HOST' }));

      const sum = await runOp('add', [dx, dw]);
      expect(sum.device).toBe('sim:0');
      expect(sum.onHost).toBe(false);
      // x + w by hand: every value is exact in f32.
      expect(Array.from((await toHost(sum)).data)).toEqual([1.5, -1, 5, -0.5, 4.5, 6, -4, 6]);

      const normed = await runOp('rmsNorm', [sum, dw, 1e-6]);
      expect((await toHost(normed)).data).toEqual((await runOp('rmsNorm', [await toHost(sum), w, 1e-6], { device: 'reference' })).data);

      // What it lacks it refuses: no silent trip through the CPU.
      await expect(runOp('softmax', [dx])).rejects.toMatchObject({ code: 'OP_UNSUPPORTED', value: expect.objectContaining({ backend: 'sim:0' }) });
      await expect(runOp('add', [dx, w])).rejects.toMatchObject({ code: 'DEVICE_MISMATCH' });
    } finally {
      unregister();
    }
  });
});
