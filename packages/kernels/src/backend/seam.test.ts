import { describe, expect, it } from 'vitest';
import { randomValues } from '../test-support/numeric.js';
import {
  type BufferType,
  type ComputeDevice,
  type DeviceBuffer,
  Tensor,
  add,
  byteSizeOf,
  getDevice,
  listDevices,
  reference,
  registerDevice,
  runOp,
  toDevice,
  toHost,
} from '../index.js';

// A device buffer kept in a private ArrayBuffer that only write/read reach: the smallest thing with
// device storage, for the Tensor and copy checks (a whole backend built this way is in
// @ninodes/device's compute-backend test).
function privateBufferType(device: string): BufferType {
  const type: BufferType = {
    name: `${device} private memory`,
    device,
    isHost: false,
    alignment: 64,
    // Pads to whole 64-byte lines, so a test sees the size come from the buffer type.
    allocSize: (dtype, shape) => Math.ceil(byteSizeOf(dtype, shape) / 64) * 64,
    allocate(byteLength): DeviceBuffer {
      let bytes: Uint8Array | undefined = new Uint8Array(byteLength);
      const live = (): Uint8Array => {
        if (bytes === undefined) throw new Error('released');
        return bytes;
      };
      return {
        bufferType: type,
        byteLength,
        get released() {
          return bytes === undefined;
        },
        release() {
          bytes = undefined;
        },
        write: async (offset, src) => void live().set(src, offset),
        read: async (offset, length) => live().slice(offset, offset + length),
      };
    },
  };
  return type;
}

function storageOnlyDevice(name: string): ComputeDevice {
  const device: ComputeDevice = {
    name,
    kind: 'gpu',
    description: 'device storage with no ops',
    bufferType: privateBufferType(name),
    memory: () => undefined,
    backend: () => ({ name, device, ops: {}, supportsOp: () => false, preparedWeightBytes: () => 0, synchronize: async () => {} }),
  };
  return device;
}

const f32 = (shape: number[], seed: number) => Tensor.fromArray('f32', shape, randomValues(shape.reduce((a, b) => a * b, 1), seed));

describe('the compute-device seam', () => {
  it('registers the CPU and the reference backend by default', () => {
    expect(listDevices().map((d) => d.name).slice(0, 2)).toEqual(['cpu', 'reference']);
    expect(getDevice('cpu').bufferType.isHost).toBe(true);
    expect(() => getDevice('vulkan:7')).toThrow(expect.objectContaining({ code: 'DEVICE_NOT_REGISTERED', value: 'vulkan:7' }));
  });

  it('runs an op on the reference backend: the same bits as the reference op, within an f32 rounding of an f64 sum', async () => {
    const a = f32([3, 8], 1);
    const b = f32([8], 2);
    const y = await runOp('add', [a, b], { device: 'reference' });
    expect(y.data).toEqual(reference.add(a, b).data);
    for (let i = 0; i < a.numel; i++) expect(y.data[i]).toBe(Math.fround((a.data[i] as number) + (b.data[i % 8] as number)));
  });

  it('runs host operands on the CPU backend by default: the native op bits', async () => {
    const x = f32([4, 16], 3);
    const w = f32([5, 16], 4);
    const bias = f32([5], 5);
    expect((await runOp('add', [x, x])).data).toEqual(add(x, x).data);
    const viaSeam = await runOp('linear', [x, w, bias]);
    const oracle = await runOp('linear', [x, w, bias], { device: 'reference' });
    for (let i = 0; i < viaSeam.numel; i++) expect(viaSeam.data[i]).toBeCloseTo(oracle.data[i] as number, 4);
  });

  it('plans every op once before any backend: bad shapes are the op coded errors', async () => {
    let called = 0;
    const spy: ComputeDevice = {
      ...getDevice('reference'),
      name: 'spy',
      backend: () => ({ ...getDevice('reference').backend(), name: 'spy', ops: { add: (a, b) => (called++, reference.add(a, b)) } }),
    };
    const unregister = registerDevice(spy);
    try {
      await expect(runOp('add', [f32([2, 3], 1), f32([4], 2)], { device: 'spy' })).rejects.toMatchObject({ code: 'SHAPE_MISMATCH' });
      await expect(runOp('add', [f32([2, 3], 1), Tensor.zeros('i8', [3]) as never], { device: 'spy' })).rejects.toMatchObject({ code: 'DTYPE_MISMATCH' });
      expect(called).toBe(0);
      await runOp('add', [f32([2, 3], 1), f32([3], 2)], { device: 'spy' });
      expect(called).toBe(1);
      await expect(runOp('mul', [f32([3], 1), f32([3], 2)], { device: 'spy' })).rejects.toMatchObject({ code: 'OP_UNSUPPORTED' });
    } finally {
      unregister();
    }
  });

  it('refuses what a backend does not support instead of running it elsewhere', async () => {
    const x = f32([2, 8], 1);
    const w = f32([3, 8], 2);
    await expect(runOp('linear', [x, w, undefined, { precision: 'bf16' }], { device: 'reference' })).rejects.toMatchObject({
      code: 'OP_UNSUPPORTED',
      value: expect.objectContaining({ op: 'linear', backend: 'reference' }),
    });
  });

  it('keeps device storage off the JS thread: .data, .bytes() and .buffer throw TENSOR_NOT_ON_HOST', async () => {
    const unregister = registerDevice(storageOnlyDevice('private:0'));
    try {
      const host = f32([4, 6], 7);
      const dev = await toDevice(host, 'private:0');
      expect(dev.onHost).toBe(false);
      expect(dev.device).toBe('private:0');
      expect(dev.storage.kind === 'device' && dev.storage.buffer.byteLength).toBe(128); // 96 bytes padded by the buffer type
      for (const read of [() => dev.data, () => dev.bytes(), () => dev.buffer, () => dev.copy()]) {
        expect(read).toThrow(expect.objectContaining({ code: 'TENSOR_NOT_ON_HOST', value: 'private:0' }));
      }
      // Views share the device buffer; a copy back reads just their bytes.
      const rows = dev.rows(1, 3);
      expect(rows.device).toBe('private:0');
      expect((await toHost(rows)).data).toEqual(host.rows(1, 3).data);
      expect((await toHost(dev.reshape([24]))).data).toEqual(host.data);
      // Ops never move tensors: mixing host and device operands is an error, as is an op the device lacks.
      await expect(runOp('add', [dev, host])).rejects.toMatchObject({ code: 'DEVICE_MISMATCH' });
      await expect(runOp('add', [dev, dev], { device: 'cpu' })).rejects.toMatchObject({ code: 'DEVICE_MISMATCH' });
      await expect(runOp('add', [dev, dev])).rejects.toMatchObject({ code: 'OP_UNSUPPORTED' });
      await expect(runOp('add', [host, host], { device: 'private:0' })).rejects.toMatchObject({ code: 'DEVICE_MISMATCH' });
      dev.dispose();
      expect(dev.disposed).toBe(true);
      await expect(toHost(dev)).rejects.toMatchObject({ code: 'TENSOR_DISPOSED' });
    } finally {
      unregister();
    }
  });

  it('refuses a second device under a taken name, and forgets one after its unregister', () => {
    expect(() => registerDevice(storageOnlyDevice('cpu'))).toThrow(expect.objectContaining({ code: 'DEVICE_ALREADY_REGISTERED', value: 'cpu' }));
    const unregister = registerDevice(storageOnlyDevice('private:1'));
    expect(getDevice('private:1').kind).toBe('gpu');
    unregister();
    expect(() => getDevice('private:1')).toThrow(expect.objectContaining({ code: 'DEVICE_NOT_REGISTERED' }));
  });

  it('a host tensor copied to a host device is itself (no copy)', async () => {
    const t = f32([2, 2], 1);
    expect(await toDevice(t, 'reference')).toBe(t);
    expect(await toHost(t)).toBe(t);
  });
});
