// The compute-device seam: devices, backends, buffer types, the op dispatch and the copies.
export type { Backend, ComputeDevice, DeviceKind, DeviceMemory, PreparedWeightKind, PreparedWeightSpec } from './backend.js';
export { isDeviceBuffer, type BufferType, type DeviceBuffer } from './device-buffer.js';
export { hostBufferType } from './host-buffer-type.js';
export { OP_NAMES, asksBf16Units, planOp, type BackendOps, type OpArgs, type OpImpl, type OpName, type OpResult, type OpSignatures } from './ops.js';
export { cpuPreparedWeightBytes } from './cpu-device.js';
export { getDevice, listDevices, registerDevice } from './registry.js';
export { deviceOfOperands, runOp, type RunOpOptions } from './dispatch.js';
export { toDevice, toHost } from './transfer.js';
