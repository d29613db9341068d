// One way to run an op on any backend: plan it once (the op's shared checks), find the backend that
// owns its operands, ask whether it supports them, run it there. Nothing moves between devices
// here: operands on two devices are an error, and copies are the caller's, explicit and async
// (transfer.ts).
import { KernelsError } from '../error-codes.js';
import { Tensor } from '../tensor.js';
import type { ComputeDevice } from './backend.js';
import { type OpArgs, type OpImpl, type OpName, type OpResult, planOp } from './ops.js';
import { getDevice } from './registry.js';

export interface RunOpOptions {
  /**
   * The device whose backend runs an op on host tensors: 'cpu' (default, the native code) or
   * 'reference', or any registered device that keeps tensors in host memory. Operands in a device
   * buffer name their own device; a different one here is DEVICE_MISMATCH.
   */
  device?: string;
}

// The tensors an op reads: its tensor arguments and the tensors in its options object (bias).
function operandsOf(args: readonly unknown[]): Tensor[] {
  const out: Tensor[] = [];
  for (const a of args) {
    if (a instanceof Tensor) out.push(a);
    else if (typeof a === 'object' && a !== null) for (const v of Object.values(a)) if (v instanceof Tensor) out.push(v);
  }
  return out;
}

/** The device that owns an op's operands (see RunOpOptions.device). */
export function deviceOfOperands(op: string, operands: readonly Tensor[], requested?: string): ComputeDevice {
  const onDevice = operands.filter((t) => !t.onHost);
  const first = onDevice[0];
  if (first === undefined) {
    const device = getDevice(requested ?? 'cpu');
    if (!device.bufferType.isHost) {
      throw new KernelsError('DEVICE_MISMATCH', `${op}: device '${device.name}' keeps tensors in its own buffers, but every operand is in host memory`, {
        value: device.name,
        where: op,
        hint: `copy the operands there first (await toDevice(t, '${device.name}'))`,
      });
    }
    return device;
  }
  const stray = operands.find((t) => t.device !== first.device || t.onHost);
  if (stray !== undefined || (requested !== undefined && requested !== first.device)) {
    const where = operands.map((t) => `${t.device}${t.onHost ? ' (host)' : ''}`);
    throw new KernelsError('DEVICE_MISMATCH', `${op}: operands live on different devices (${where.join(', ')})${requested === undefined ? '' : `; asked to run on '${requested}'`}`, {
      value: { operands: where, requested },
      where: op,
      hint: 'copy them to one device first (toDevice / toHost): ops never move tensors by themselves',
    });
  }
  return getDevice(first.device);
}

/**
 * Runs op `name` on the backend that owns its operands and resolves to its result, which lives on
 * that device. Bad operands throw the op's coded errors before any backend sees them; a backend that
 * does not run this op on these operands throws OP_UNSUPPORTED (never a silent fallback).
 */
export async function runOp<K extends OpName>(name: K, args: OpArgs<K>, options: RunOpOptions = {}): Promise<OpResult<K>> {
  planOp(name, args);
  const device = deviceOfOperands(name, operandsOf(args), options.device);
  const backend = device.backend();
  const impl = backend.ops[name] as OpImpl<K> | undefined;
  if (impl === undefined || !backend.supportsOp(name, args)) {
    throw new KernelsError('OP_UNSUPPORTED', `${name}: backend '${backend.name}' does not run it on these operands`, {
      value: { op: name, backend: backend.name, operands: operandsOf(args).map((t) => `${t.dtype} [${t.shape.join(', ')}]`) },
      where: name,
      hint: impl === undefined ? `'${backend.name}' has no ${name}; copy the operands to a device that has (toHost for the CPU)` : 'check the precision and dtypes the backend supports, or copy the operands to another device',
    });
  }
  return impl(...args);
}
