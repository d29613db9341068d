// The valid files the soak damages: reference files from the fixtures (Hugging Face safetensors,
// gguf-py GGUF) and a small H3 checkpoint with the real key layout, so damaged names reach
// architecture detection.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { type TensorSource, buildHeader } from '@ninodes/memory';
import { H3_DEFAULTS, type H3Config, h3Linears, h3Parameters } from '@ninodes/models';
import { parseGguf } from '@ninodes/quant';
import type { HeaderSample } from './header-mutations.js';

const TINY_H3: H3Config = { ...H3_DEFAULTS, layers: 3, hidden: 32, heads: 2, headDim: 16, ffn: 32, tDim: 32, timeHidden: 32, freqDim: 32, ropeLen: 2, latentChannels: 4 };

function safetensorsSample(name: string, bytes: Uint8Array): HeaderSample {
  const headerEnd = 8 + Number(new DataView(bytes.buffer, bytes.byteOffset, 8).getBigUint64(0, true));
  return { format: 'safetensors', name, bytes, fileSize: bytes.length, headerEnd };
}

/** A bf16 H3 checkpoint (zeros) with every key and shape of the video path, built in memory. */
function tinyH3Safetensors(): HeaderSample {
  const sources: TensorSource[] = [];
  const add = (name: string, shape: readonly number[]): void => {
    sources.push({ name, dtype: 'bf16', shape, data: () => new Uint8Array(0) });
  };
  for (const l of h3Linears(TINY_H3)) {
    add(`${l.name}.weight`, [l.outFeatures, l.inFeatures]);
    if (l.bias) add(`${l.name}.bias`, [l.outFeatures]);
  }
  for (const p of h3Parameters(TINY_H3)) add(p.name, p.shape);
  const { json, sizes } = buildHeader(sources, { format: 'pt' });
  const data = sizes.reduce((a, b) => a + b, 0);
  const bytes = new Uint8Array(8 + json.length + data);
  new DataView(bytes.buffer).setBigUint64(0, BigInt(json.length), true);
  bytes.set(json, 8);
  return safetensorsSample('h3-tiny.safetensors', bytes);
}

export function headerSeeds(fixtures: string): HeaderSample[] {
  const gguf = new Uint8Array(readFileSync(join(fixtures, 'gguf', 'quants.gguf')));
  return [
    safetensorsSample('dtypes.safetensors', new Uint8Array(readFileSync(join(fixtures, 'safetensors', 'dtypes.safetensors')))),
    { format: 'gguf', name: 'quants.gguf', bytes: gguf, fileSize: gguf.length, headerEnd: parseGguf(gguf).dataOffset },
    tinyH3Safetensors(),
  ];
}
