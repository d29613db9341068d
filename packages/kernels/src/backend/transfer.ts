// The explicit copies between host memory and a device's buffers. They are the only way bytes cross
// (a device tensor has no .data), and they are async like the device's own queue.
import { KernelsError } from '../error-codes.js';
import { Tensor } from '../tensor.js';
import { getDevice } from './registry.js';

/**
 * `t` in device `deviceName`'s buffer type. A host tensor bound for a host device comes back as
 * itself (no copy: host memory is host memory); anything else is copied through the host.
 */
export async function toDevice<T extends Tensor>(t: T, deviceName: string): Promise<T> {
  if (!(t instanceof Tensor)) throw new KernelsError('INVALID_ARGUMENT', 'toDevice: expected a Tensor', { value: t, where: 'toDevice' });
  const device = getDevice(deviceName);
  const bufferType = device.bufferType;
  if (t.onHost && bufferType.isHost) return t;
  if (!t.onHost && t.device === device.name) return t;
  const host = await toHost(t);
  const storage = bufferType.allocate(bufferType.allocSize(host.dtype, host.shape));
  const out = new Tensor(host.dtype, host.shape, storage);
  if (!out.onHost && out.storage.kind === 'device') await out.storage.buffer.write(out.byteOffset, host.bytes());
  else out.bytes().set(host.bytes());
  return out as T;
}

/** `t` in host memory: itself when it is there already, else a fresh copy read from its device. */
export async function toHost<T extends Tensor>(t: T): Promise<T> {
  if (!(t instanceof Tensor)) throw new KernelsError('INVALID_ARGUMENT', 'toHost: expected a Tensor', { value: t, where: 'toHost' });
  if (t.storage.kind === 'host') return t;
  if (t.disposed) throw new KernelsError('TENSOR_DISPOSED', `${t.toString()} was disposed`, { where: 'toHost', hint: 'do not use a tensor after dispose()' });
  const bytes = await t.storage.buffer.read(t.byteOffset, t.byteLength);
  if (bytes.byteLength !== t.byteLength) {
    throw new KernelsError('INTERNAL', `device '${t.device}' returned ${bytes.byteLength} bytes for a ${t.byteLength}-byte read`, { value: bytes.byteLength, where: 'toHost' });
  }
  const out = Tensor.zeros(t.dtype, t.shape);
  out.bytes().set(bytes);
  return out as T;
}
