// The compute devices ops can run on, by name. One registry per process, not per module build: a
// device registered through the ESM build of kernels is seen by the CJS build (and by packages
// above that load either), like Tensor's instanceof brand.
import { KernelsError } from '../error-codes.js';
import type { ComputeDevice } from './backend.js';
import { cpuDevice } from './cpu-device.js';
import { referenceDevice } from './reference-device.js';

const REGISTRY = Symbol.for('ninodes.compute-devices');

function devices(): Map<string, ComputeDevice> {
  const g = globalThis as { [REGISTRY]?: Map<string, ComputeDevice> };
  // The built-in devices register on first use (kernels has no import-time side effects).
  g[REGISTRY] ??= new Map([cpuDevice(), referenceDevice()].map((d) => [d.name, d]));
  return g[REGISTRY];
}

/**
 * Makes `device` available to runOp and the copies under its name. Returns a function that removes
 * it again. A second device under a taken name is refused (DEVICE_ALREADY_REGISTERED).
 */
export function registerDevice(device: ComputeDevice): () => void {
  const map = devices();
  if (map.has(device.name)) {
    throw new KernelsError('DEVICE_ALREADY_REGISTERED', `a compute device named '${device.name}' is registered already`, {
      value: device.name,
      where: 'registerDevice',
      hint: 'give each device its own name (vulkan:0, vulkan:1), or call the function registerDevice returned first',
    });
  }
  map.set(device.name, device);
  return () => {
    if (map.get(device.name) === device) map.delete(device.name);
  };
}

/** The device registered as `name`; DEVICE_NOT_REGISTERED if none is. */
export function getDevice(name: string): ComputeDevice {
  const device = devices().get(name);
  if (device === undefined) {
    throw new KernelsError('DEVICE_NOT_REGISTERED', `no compute device named ${JSON.stringify(name)} is registered`, {
      value: name,
      hint: `registered: ${[...devices().keys()].join(', ')}`,
    });
  }
  return device;
}

/** Every registered device, the built-in 'cpu' and 'reference' first. */
export function listDevices(): ComputeDevice[] {
  return [...devices().values()];
}
