// Linears on a compute device of the kernels seam (a Vulkan GPU, or any registered non-host
// device): each layer's weight is prepared on the host by the inner provider, copied to the device
// once and kept there; a forward copies x in, runs the seam's op on the device and copies y back.
// int8 convrot layers quantize their activations on the host exactly as the CPU op does and run
// int8LinearQuantized on the device (the same bits as the CPU); the other formats run the device's
// f32 linear on the weight dequantized once (the values the CPU multiplies).
import { type Tensor, getDevice, quantizeRowsInt8, runOp, toDevice, toHost } from '@ninodes/kernels';
import { QuantError } from './error-codes.js';
import { type LinearOp, type LinearProvider, type LinearSpec, isPreparedLinearOp } from './linear-op.js';

interface DeviceWeight {
  int8?: { q: Tensor<'i8'>; scale: Tensor<'f32'>; convrot: number | false };
  w?: Tensor<'f32'>;
  bias?: Tensor<'f32'>;
}

class DeviceLinearOp implements LinearOp {
  readonly spec: LinearSpec;
  readonly format: string;
  readonly #inner: LinearOp;
  readonly #device: string;
  #weight: Promise<DeviceWeight> | undefined;

  constructor(inner: LinearOp, device: string) {
    this.spec = inner.spec;
    this.format = inner.format;
    this.#inner = inner;
    this.#device = device;
  }

  #prepare(): Promise<DeviceWeight> {
    this.#weight ??= (async () => {
      const inner = this.#inner;
      if (!isPreparedLinearOp(inner)) {
        throw new QuantError('UNSUPPORTED_COMPUTE', `${this.spec.name}: a ${inner.format} op that does not declare its prepared weight cannot move to ${this.#device}`, {
          value: inner.format,
          where: this.spec.name,
          hint: 'run this layer on the CPU',
        });
      }
      const bias = inner.addedBias();
      const onDevice = { ...(bias ? { bias: await toDevice(bias, this.#device) } : {}) };
      const int8 = await inner.int8Operands();
      if (int8 !== undefined) {
        return { ...onDevice, int8: { q: await toDevice(int8.q, this.#device), scale: await toDevice(int8.scale, this.#device), convrot: int8.convrot } };
      }
      const w = await toDevice(await inner.materializedWeight(), this.#device);
      // The host copies are the inner op's to keep or drop: the device holds its own now.
      inner.release();
      return { ...onDevice, w };
    })();
    this.#weight.catch(() => {
      this.#weight = undefined;
    });
    return this.#weight;
  }

  async forward(x: Tensor<'f32'>): Promise<Tensor<'f32'>> {
    const weight = await this.#prepare();
    const bias = weight.bias;
    let y: Tensor<'f32'>;
    if (weight.int8 !== undefined) {
      const { q, scale } = quantizeRowsInt8(x, { convrot: weight.int8.convrot });
      const [dq, ds] = [await toDevice(q, this.#device), await toDevice(scale, this.#device)];
      y = await runOp('int8LinearQuantized', [dq, ds, weight.int8.q, weight.int8.scale, bias ? { bias } : {}]);
      dq.dispose();
      ds.dispose();
    } else {
      const dx = await toDevice(x, this.#device);
      y = await runOp('linear', [dx, weight.w as Tensor<'f32'>, bias]);
      dx.dispose();
    }
    const host = await toHost(y);
    y.dispose();
    return host;
  }

  async materializedWeight(): Promise<Tensor<'f32'>> {
    return this.#inner.materializedWeight();
  }
}

/**
 * Runs every linear of `inner` on the registered compute device `device` ('vk:0' once
 * openVulkanDevice(0) registered it), weights resident there after their first use.
 */
export function deviceLinearProvider(inner: LinearProvider, device: string): LinearProvider {
  const target = getDevice(device);
  if (target.bufferType.isHost) {
    throw new QuantError('INVALID_ARGUMENT', `deviceLinearProvider: '${device}' computes in host memory; the linears run there without a device provider`, { value: device, where: 'deviceLinearProvider' });
  }
  return { linear: (spec) => new DeviceLinearOp(inner.linear(spec), target.name) };
}
