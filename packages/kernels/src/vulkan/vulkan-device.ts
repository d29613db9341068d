// A Vulkan device and the tensors that live on it. Device memory is reached only through explicit
// uploads and downloads (ggml-backend's rule: host and device buffers are distinct); an op reads
// and writes DeviceTensors, and `download` brings a result back as an ordinary host Tensor.
import type { VulkanDispatch } from '@ninodes/native';
import { byteSizeOf, type DType } from '../dtype.js';
import { KernelsError } from '../error-codes.js';
import { callNative, callNativeAsync } from '../native-addon.js';
import { Tensor } from '../tensor.js';

// A buffer whose JS owner was collected without free() is released here.
const collected = new FinalizationRegistry<number>((id) => {
  try {
    callNative('vulkanBufferFree', (n) => n.vkBufferFree(id));
  } catch {
    // The process is going away or the addon failed to load: nothing left to release.
  }
});

/** Device memory of one Vulkan device. Freed by free(), or when it is garbage-collected. */
export class VulkanBuffer {
  readonly device: VulkanDevice;
  readonly id: number;
  readonly bytes: number;
  #freed = false;

  constructor(device: VulkanDevice, bytes: number) {
    this.device = device;
    this.bytes = bytes;
    this.id = callNative('vulkanBuffer', (n) => n.vkBufferCreate(device.index, bytes));
    collected.register(this, this.id, this);
  }

  get freed(): boolean {
    return this.#freed;
  }

  free(): void {
    if (this.#freed) return;
    this.#freed = true;
    collected.unregister(this);
    callNative('vulkanBufferFree', (n) => n.vkBufferFree(this.id));
  }
}

/** A tensor whose bytes live in a Vulkan buffer: dtype and shape, no `.data` (download it). */
export class DeviceTensor<D extends DType = DType> {
  readonly dtype: D;
  readonly shape: readonly number[];
  readonly buffer: VulkanBuffer;

  constructor(dtype: D, shape: readonly number[], buffer: VulkanBuffer) {
    const bytes = byteSizeOf(dtype, shape);
    if (bytes > buffer.bytes) {
      throw new KernelsError('TENSOR_OUT_OF_BOUNDS', `a ${dtype} [${shape.join(', ')}] tensor needs ${bytes} bytes but its Vulkan buffer has ${buffer.bytes}`, {
        value: { bytes, bufferBytes: buffer.bytes },
        where: 'DeviceTensor',
      });
    }
    this.dtype = dtype;
    this.shape = Object.freeze([...shape]);
    this.buffer = buffer;
  }

  get device(): string {
    return `vk:${this.buffer.device.index}`;
  }

  get numel(): number {
    return this.shape.reduce((a, b) => a * b, 1);
  }

  get byteLength(): number {
    return byteSizeOf(this.dtype, this.shape);
  }

  free(): void {
    this.buffer.free();
  }
}

const opened = new Map<number, VulkanDevice>();

/** Vulkan device vk:N: buffers, transfers and dispatch submission. */
export class VulkanDevice {
  readonly index: number;
  /** The largest buffer one op may bind (maxStorageBufferRange). */
  readonly maxBindingBytes: number;
  /** shaderFloat64: the int8 activation quantizer needs it. */
  readonly float64: boolean;

  private constructor(index: number) {
    this.index = index;
    const info = callNative('vulkanOpen', (n) => n.vkOpen(index));
    this.maxBindingBytes = info.maxBindingBytes;
    this.float64 = info.float64;
  }

  /**
   * Opens vk:`index` (once per process). VULKAN_UNAVAILABLE where no loader or driver is usable,
   * VULKAN_DEVICE_NOT_FOUND for an index past the devices present.
   */
  static open(index = 0): VulkanDevice {
    if (!Number.isSafeInteger(index) || index < 0) {
      throw new KernelsError('INVALID_ARGUMENT', `a Vulkan device index must be a non-negative integer, not ${String(index)}`, { value: index, where: 'VulkanDevice.open' });
    }
    let device = opened.get(index);
    if (device === undefined) {
      device = new VulkanDevice(index);
      opened.set(index, device);
    }
    return device;
  }

  get id(): string {
    return `vk:${this.index}`;
  }

  /** An uninitialized device tensor. */
  empty<D extends DType>(dtype: D, shape: readonly number[]): DeviceTensor<D> {
    return new DeviceTensor(dtype, shape, new VulkanBuffer(this, byteSizeOf(dtype, shape)));
  }

  /** Copies a host tensor to the device. */
  async upload<D extends DType>(tensor: Tensor<D>): Promise<DeviceTensor<D>> {
    const out = this.empty(tensor.dtype, tensor.shape);
    try {
      const bytes = tensor.bytes();
      await callNativeAsync('vulkanUpload', (n) => n.vkUpload(out.buffer.id, 0, bytes));
    } catch (error) {
      out.free();
      throw error;
    }
    return out;
  }

  /** Copies a device tensor back into a new host tensor. */
  async download<D extends DType>(tensor: DeviceTensor<D>): Promise<Tensor<D>> {
    if (tensor.buffer.device !== this) {
      throw new KernelsError('INVALID_ARGUMENT', `a tensor on ${tensor.device} was given to ${this.id}`, { value: tensor.device, where: 'VulkanDevice.download' });
    }
    const host = Tensor.zeros(tensor.dtype, tensor.shape);
    await callNativeAsync('vulkanDownload', (n) => n.vkDownload(tensor.buffer.id, 0, host.bytes()));
    return host;
  }

  /** Submits dispatches as one command buffer (in order, each seeing the previous ones' writes) and waits. */
  async run(dispatches: VulkanDispatch[]): Promise<void> {
    await callNativeAsync('vulkanRun', (n) => n.vkRun(this.index, dispatches));
  }

  stats(): { buffers: number; bufferBytes: number; pipelines: number; pipelineCacheBytes: number } {
    return callNative('vulkanStats', (n) => n.vkStats(this.index));
  }
}
