// A Vulkan device on the compute-device seam (../backend): `openVulkanDevice(N)` opens vk:N and
// registers it, so tensors reach it with `toDevice(t, 'vk:0')` / `toHost(t)` and ops run on it with
// `runOp` (or the vk* functions in vulkan-ops.ts). Its tensors live in VulkanBuffers: device memory
// with no `.data`, reached only by explicit, asynchronous copies.
import type { VulkanDispatch } from '@ninodes/native';
import type { Backend, ComputeDevice, DeviceMemory } from '../backend/backend.js';
import type { BufferType, DeviceBuffer } from '../backend/device-buffer.js';
import { byteSizeOf, type DType } from '../dtype.js';
import { KernelsError } from '../error-codes.js';
import { callNative, callNativeAsync } from '../native-addon.js';
import { Tensor } from '../tensor.js';
import { vulkanDeviceMemory, vulkanProbe } from './vulkan-probe.js';

// A buffer whose JS owner was collected without release() is freed here.
const collected = new FinalizationRegistry<number>((id) => {
  try {
    callNative('vulkanBufferFree', (n) => n.vkBufferFree(id));
  } catch {
    // The process is going away or the addon failed to load: nothing left to free.
  }
});

/** Device memory of one Vulkan device: a seam DeviceBuffer. Freed by release(), or when collected. */
export class VulkanBuffer implements DeviceBuffer {
  readonly device: VulkanDevice;
  readonly id: number;
  readonly byteLength: number;
  #released = false;

  constructor(device: VulkanDevice, byteLength: number) {
    this.device = device;
    this.byteLength = byteLength;
    this.id = callNative('vulkanBuffer', (n) => n.vkBufferCreate(device.index, byteLength));
    collected.register(this, this.id, this);
  }

  get bufferType(): BufferType {
    return this.device.bufferType;
  }

  get released(): boolean {
    return this.#released;
  }

  release(): void {
    if (this.#released) return;
    this.#released = true;
    collected.unregister(this);
    callNative('vulkanBufferFree', (n) => n.vkBufferFree(this.id));
  }

  async write(byteOffset: number, bytes: Uint8Array): Promise<void> {
    await callNativeAsync('vulkanUpload', (n) => n.vkUpload(this.id, byteOffset, bytes));
  }

  async read(byteOffset: number, byteLength: number): Promise<Uint8Array> {
    const out = new Uint8Array(byteLength);
    await callNativeAsync('vulkanDownload', (n) => n.vkDownload(this.id, byteOffset, out));
    return out;
  }
}

/** The Vulkan buffer under a tensor on `device`, or a coded error naming the operand. */
export function vulkanBufferOf(t: Tensor, device: VulkanDevice, op: string, name: string): VulkanBuffer {
  if (!(t instanceof Tensor)) throw new KernelsError('INVALID_ARGUMENT', `${op}: '${name}' is not a Tensor`, { value: t, where: `${op}(${name})` });
  const buffer = t.storage.kind === 'device' ? t.storage.buffer : undefined;
  if (!(buffer instanceof VulkanBuffer) || buffer.device !== device) {
    throw new KernelsError('DEVICE_MISMATCH', `${op}: '${name}' lives on ${t.device}, not ${device.name}`, {
      value: t.device,
      where: `${op}(${name})`,
      hint: `copy it there first: await toDevice(t, '${device.name}')`,
    });
  }
  if (buffer.released) throw new KernelsError('TENSOR_DISPOSED', `${op}: '${name}' was disposed`, { where: `${op}(${name})`, hint: 'do not use a tensor after dispose()' });
  // The shaders bind whole buffers: a view at an offset (rows()) is copied out first.
  if (t.byteOffset !== 0) {
    throw new KernelsError('INVALID_ARGUMENT', `${op}: '${name}' is a view at byte ${t.byteOffset} of its Vulkan buffer; Vulkan ops take whole buffers`, {
      value: t.byteOffset,
      where: `${op}(${name})`,
      hint: 'pass the whole tensor, or copy the rows to a tensor of their own',
    });
  }
  return buffer;
}

/** Vulkan device vk:N: a seam ComputeDevice (buffer type, backend) and the dispatch submission. */
export class VulkanDevice implements ComputeDevice {
  readonly index: number;
  readonly name: string;
  readonly kind = 'gpu' as const;
  readonly description: string;
  /** The largest buffer one op may bind (maxStorageBufferRange). */
  readonly maxBindingBytes: number;
  /** shaderFloat64: the int8 activation quantizer needs it. */
  readonly float64: boolean;
  readonly bufferType: BufferType;
  readonly #makeBackend: (device: VulkanDevice) => Backend;
  #backend: Backend | undefined;

  /** Use openVulkanDevice (vulkan-backend.ts), which opens each device once and registers it. */
  constructor(index: number, makeBackend: (device: VulkanDevice) => Backend) {
    this.#makeBackend = makeBackend;
    const info = callNative('vulkanOpen', (n) => n.vkOpen(index));
    const probe = vulkanProbe();
    const record = probe.available ? probe.devices[index] : undefined;
    this.index = index;
    this.name = `vk:${index}`;
    this.description = record === undefined ? this.name : `${record.name} (${record.driverName}, Vulkan ${record.apiVersion})`;
    this.maxBindingBytes = info.maxBindingBytes;
    this.float64 = info.float64;
    this.bufferType = {
      name: `${this.name} device memory`,
      device: this.name,
      isHost: false,
      alignment: 4,
      allocSize: (dtype: DType, shape: readonly number[]) => byteSizeOf(dtype, shape),
      allocate: (byteLength: number) => new VulkanBuffer(this, byteLength),
    };
  }

  /** Total and free device memory where the driver reports a budget (VK_EXT_memory_budget); else undefined. */
  memory(): DeviceMemory | undefined {
    const probe = vulkanProbe();
    const record = probe.available ? probe.devices[this.index] : undefined;
    if (record === undefined) return undefined;
    const { totalBytes, freeBytes } = vulkanDeviceMemory(record);
    return totalBytes === null || freeBytes === null ? undefined : { total: totalBytes, free: freeBytes };
  }

  backend(): Backend {
    this.#backend ??= this.#makeBackend(this);
    return this.#backend;
  }

  /** An uninitialized tensor in this device's memory. */
  empty<D extends DType>(dtype: D, shape: readonly number[]): Tensor<D> {
    return new Tensor(dtype, shape, new VulkanBuffer(this, byteSizeOf(dtype, shape)));
  }

  /** Submits dispatches as one command buffer (in order, each seeing the previous ones' writes) and waits. */
  async run(dispatches: VulkanDispatch[]): Promise<void> {
    await callNativeAsync('vulkanRun', (n) => n.vkRun(this.index, dispatches));
  }

  stats(): { buffers: number; bufferBytes: number; pipelines: number; pipelineCacheBytes: number } {
    return callNative('vulkanStats', (n) => n.vkStats(this.index));
  }
}
