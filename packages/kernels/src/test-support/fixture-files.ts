// Test-only readers for the fixture files (the real safetensors and GGUF readers live in
// @ninodes/memory and @ninodes/quant, which kernels may not import). Minimal on purpose: enough to
// find a tensor's bytes, with bounds checks so a broken fixture fails the test instead of lying.
// Safetensors comes from the repository's one test reader (@ninodes/test-safetensors).
import { readFileSync } from 'node:fs';
import { GGML_TYPE_DTYPES } from '../gguf-dtypes.js';

export { type RawTensor as StEntry, f32Of, fixturePath, readSafetensorsFile as readSafetensors } from '@ninodes/test-safetensors';

export interface GgufTensor {
  name: string;
  dtype: string;
  /** Torch order (GGUF stores ne0 first). */
  shape: number[];
  offset: number;
}

/** Minimal GGUF v3 parse: skips the metadata values, returns tensor infos and the data section. */
export function readGguf(path: string): { file: Uint8Array; tensors: GgufTensor[]; dataStart: number } {
  const buf = readFileSync(path);
  let pos = 0;
  const u32 = () => {
    const v = buf.readUInt32LE(pos);
    pos += 4;
    return v;
  };
  const u64 = () => {
    const v = Number(buf.readBigUInt64LE(pos));
    pos += 8;
    return v;
  };
  const str = () => {
    const n = u64();
    const s = buf.subarray(pos, pos + n).toString('utf8');
    pos += n;
    return s;
  };
  const SIZES: Record<number, number> = { 0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8 };
  let alignment = 32;
  const skipValue = (type: number): number | undefined => {
    if (type === 8) {
      str();
      return undefined;
    }
    if (type === 9) {
      const itemType = u32();
      const count = u64();
      for (let i = 0; i < count; i++) skipValue(itemType);
      return undefined;
    }
    const size = SIZES[type];
    if (size === undefined) throw new Error(`unknown GGUF value type ${type}`);
    const v = type === 4 ? buf.readUInt32LE(pos) : undefined;
    pos += size;
    return v;
  };
  if (buf.subarray(0, 4).toString('latin1') !== 'GGUF') throw new Error('not a GGUF file');
  pos = 4;
  const version = u32();
  if (version !== 3) throw new Error(`GGUF version ${version}, expected 3`);
  const tensorCount = u64();
  const kvCount = u64();
  for (let i = 0; i < kvCount; i++) {
    const key = str();
    const type = u32();
    const v = skipValue(type);
    if (key === 'general.alignment' && v !== undefined) alignment = v;
  }
  const tensors: GgufTensor[] = [];
  for (let i = 0; i < tensorCount; i++) {
    const name = str();
    const nDims = u32();
    const dims: number[] = [];
    for (let d = 0; d < nDims; d++) dims.push(u64());
    const typeId = u32();
    const offset = u64();
    const dtype = GGML_TYPE_DTYPES[typeId];
    if (dtype === undefined) throw new Error(`tensor ${name}: unsupported ggml type ${typeId}`);
    tensors.push({ name, dtype, shape: dims.reverse(), offset });
  }
  const dataStart = Math.ceil(pos / alignment) * alignment;
  return { file: new Uint8Array(buf.buffer, buf.byteOffset, buf.byteLength), tensors, dataStart };
}
