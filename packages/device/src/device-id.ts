import { NinodesError } from '@ninodes/kernels';
import { DeviceError } from './error-codes.js';

/** Kinds of places a tensor can live. `disk` is a placement target (weights streamed from files); `vk` a Vulkan device. */
export const DEVICE_KINDS = ['cpu', 'disk', 'cuda', 'hip', 'xpu', 'mps', 'vk'] as const;
export type DeviceKind = (typeof DEVICE_KINDS)[number];

/** Kinds that come in numbered instances (`cuda:1`); the others are singletons. */
export const INDEXED_KINDS: readonly DeviceKind[] = ['cuda', 'hip', 'xpu', 'vk'];

export type DeviceId =
  | { kind: 'cpu' | 'disk' | 'mps' }
  | { kind: 'cuda' | 'hip' | 'xpu' | 'vk'; index: number };

/** Largest accepted device index; anything above is a typo, not a machine. */
export const MAX_DEVICE_INDEX = 1023;

const ALIASES: Record<string, DeviceKind> = { rocm: 'hip', vulkan: 'vk' };

/** The canonical text of an id: `cpu`, `cuda:0`, `hip:1`. */
export function formatDeviceId(id: DeviceId): string {
  return 'index' in id ? `${id.kind}:${id.index}` : id.kind;
}

export function isIndexedKind(kind: DeviceKind): kind is 'cuda' | 'hip' | 'xpu' | 'vk' {
  return INDEXED_KINDS.includes(kind);
}

function invalid(text: string, why: string, valid: readonly string[] | undefined, where: string | undefined): NinodesError {
  const list = valid === undefined ? 'cpu, disk, cuda:N, hip:N, xpu:N, vk:N, mps' : valid.join(', ');
  return new DeviceError('DEVICE_ID_INVALID', `invalid device id '${text}': ${why}; valid ids here: ${list}`, {
    value: text,
    where: where ?? 'device id',
    hint: `write one of: ${list} (aliases: cuda = cuda:0, rocm:N = hip:N, vulkan:N = vk:N)`,
  });
}

export interface ParseDeviceIdOptions {
  /** Canonical ids present on this machine; when given, an id that is well formed but absent is an error. */
  available?: readonly string[];
  /** Where the id came from (a CLI flag, a config key), for the error. */
  where?: string;
}

/**
 * Parses a device id as users type it. Grammar (case-insensitive, surrounding spaces ignored):
 * `cpu | disk | mps | (cuda|hip|xpu|vk)[:N]`, N a decimal index without leading zeros; aliases
 * `rocm[:N]` = `hip[:N]`; a bare indexed kind means index 0.
 */
export function parseDeviceId(text: string, options: ParseDeviceIdOptions = {}): DeviceId {
  const { available, where } = options;
  if (typeof text !== 'string') throw invalid(String(text), 'not a string', available, where);
  const trimmed = text.trim().toLowerCase();
  const match = /^([a-z]+)(?::(.*))?$/.exec(trimmed);
  if (match === null) throw invalid(text, 'expected <kind> or <kind>:<index>', available, where);
  const word = match[1] as string;
  const indexText = match[2];
  const kind = (DEVICE_KINDS as readonly string[]).includes(word) ? (word as DeviceKind) : ALIASES[word];
  if (kind === undefined) throw invalid(text, `unknown device kind '${word}'`, available, where);
  let id: DeviceId;
  if (!isIndexedKind(kind)) {
    if (indexText !== undefined) throw invalid(text, `'${kind}' takes no index`, available, where);
    id = { kind: kind as 'cpu' | 'disk' | 'mps' };
  } else {
    let index = 0;
    if (indexText !== undefined) {
      if (!/^(0|[1-9][0-9]*)$/.test(indexText)) {
        throw invalid(text, `index '${indexText}' is not a non-negative integer without leading zeros`, available, where);
      }
      index = Number(indexText);
      if (index > MAX_DEVICE_INDEX) throw invalid(text, `index ${indexText} exceeds ${MAX_DEVICE_INDEX}`, available, where);
    }
    id = { kind, index };
  }
  if (available !== undefined) {
    const canonical = formatDeviceId(id);
    if (!available.includes(canonical)) {
      throw new DeviceError('DEVICE_NOT_FOUND', `device '${text}' (${canonical}) is not present; valid ids here: ${available.join(', ')}`, {
        value: text,
        where: where ?? 'device id',
        hint: `run 'ninodes devices' to list this machine's devices; choose one of: ${available.join(', ')}`,
      });
    }
  }
  return id;
}

/** Like parseDeviceId, but returns undefined instead of throwing. */
export function tryParseDeviceId(text: string, options: ParseDeviceIdOptions = {}): DeviceId | undefined {
  try {
    return parseDeviceId(text, options);
  } catch {
    return undefined;
  }
}

export function sameDevice(a: DeviceId, b: DeviceId): boolean {
  return formatDeviceId(a) === formatDeviceId(b);
}
