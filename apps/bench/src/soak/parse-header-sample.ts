// What one soak mutation exercises: the header parser of its format, then architecture detection
// over the names and shapes it produced and, as `inspect` does, the per-block key walk sized by the
// detected config (structure derived from names must stay bounded too).
import { isNinodesError } from '@ninodes/kernels';
import { parseHeader, readHeaderLength } from '@ninodes/memory';
import { type TensorShapeInfo, detectArchitecture, h3UnusedKeys } from '@ninodes/models';
import { parseGguf } from '@ninodes/quant';
import type { HeaderSample } from './header-mutations.js';

/** `ok` when the damaged header still parses, else the NinodesError code it was refused with. */
export type ParseOutcome = { readonly kind: 'ok' } | { readonly kind: 'coded'; readonly code: string } | { readonly kind: 'uncoded'; readonly error: string };

function detect(tensors: readonly TensorShapeInfo[]): void {
  const found = detectArchitecture(tensors);
  if (found.family === 'h3' && found.h3 !== undefined) h3UnusedKeys(tensors.map((t) => t.name), found.h3, found.prefix);
}

export function parseHeaderSample(s: HeaderSample): ParseOutcome {
  try {
    if (s.format === 'safetensors') {
      const length = readHeaderLength(s.bytes.subarray(0, 8), s.fileSize, s.name);
      const header = parseHeader(s.bytes.subarray(8, 8 + length), s.fileSize - 8 - length, s.name);
      detect(header.entries);
    } else {
      const header = parseGguf(s.bytes, { fileSize: s.fileSize, where: s.name });
      detect(header.tensors);
    }
    return { kind: 'ok' };
  } catch (error) {
    // INTERNAL marks a bug in ninodes, never a user's bad file
    if (isNinodesError(error) && !/INTERNAL/.test(error.code)) return { kind: 'coded', code: error.code };
    return { kind: 'uncoded', error: error instanceof Error ? `${error.name}: ${error.message}`.slice(0, 300) : String(error) };
  }
}
