// Every error code device throws, with what it means; device re-throws kernels' codes too.
// tools/repo-checks fails on a code that is in no list or that nothing throws.
import { NinodesError, type CodedError, type KernelsErrorCode } from '@ninodes/kernels';

export const DEVICE_ERROR_CODES = {
  DEVICE_ID_INVALID: "a device id is not a known kind with a valid index ('cpu', 'disk', 'cuda:0', 'hip:1', ...)",
  DEVICE_NOT_FOUND: 'a well-formed device id names a device this machine does not have',
  PROFILE_CONFIG_INVALID: 'the architecture profile config is not valid JSON, breaks its schema, or its "extends" do not resolve',
} as const;

export type DeviceErrorCode = keyof typeof DEVICE_ERROR_CODES;
/** What device may throw: its own codes and kernels'. */
export type DeviceThrownCode = DeviceErrorCode | KernelsErrorCode;

/** NinodesError for the codes device may throw. */
export const DeviceError: CodedError<DeviceThrownCode> = NinodesError;
