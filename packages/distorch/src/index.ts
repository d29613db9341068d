export { ALLOCATION_ERROR_CODES, AllocationError, type AllocationErrorCode } from './allocation-error.js';
export { allocationSpecSchema, validateAllocationSpec, type AllocationMode, type AllocationSpec, type ExpertSpec } from './allocation-spec.js';
export { tokenize, type Token, type TokenKind } from './allocation-tokens.js';
export { parseAllocation, type DeviceCapacity, type ParseAllocationOptions, type ParsedAllocation } from './parse-allocation.js';
export { formatAllocation, formatAllocationBytes, plainDecimal } from './format-allocation.js';
