// What a file given as a checkpoint looks like, by its first bytes: a checkpoint ninodes reads
// (GGUF, safetensors), or something a user can mistake for one — a README, a picture, a PyTorch
// .pt/.ckpt (a zip of pickles) — which gets its own words instead of "header length
// 7306087015507697699".

export type FileKind =
  | { readonly kind: 'gguf' }
  | { readonly kind: 'safetensors' }
  /** Not recognizably anything: the reader of the named format says what is wrong with it. */
  | { readonly kind: 'unknown' }
  | { readonly kind: 'other'; readonly looksLike: string; readonly hint: string };

const SAFETENSORS_HINT = 'pass a .safetensors or .gguf checkpoint (ninodes inspect <file> says what a file holds)';

const torchHint = (path: string): string =>
  `convert it to safetensors first (PyTorch): python3 -c "import torch, safetensors.torch as st; sd = torch.load('${path.replace(/'/g, '')}', map_location='cpu', weights_only=True); st.save_file(sd.get('state_dict', sd), 'model.safetensors')"`;

/** Classifies `head` (the first 16 or more bytes of a file of `size` bytes named `path`). */
export function fileKind(head: Uint8Array, size: number, path: string): FileKind {
  const ascii = Buffer.from(head).toString('latin1');
  if (ascii.startsWith('GGUF')) return { kind: 'gguf' };
  if (head.length >= 9) {
    const n = Buffer.from(head).readBigUInt64LE(0);
    // safetensors: an 8-byte little-endian header length that fits the file, then the JSON's '{'.
    if (n >= 2n && n <= BigInt(Math.max(0, size - 8)) && head[8] === 0x7b) return { kind: 'safetensors' };
  }
  if (ascii.startsWith('\x89PNG')) return { kind: 'other', looksLike: 'a PNG image', hint: SAFETENSORS_HINT };
  if (head[0] === 0xff && head[1] === 0xd8 && head[2] === 0xff) return { kind: 'other', looksLike: 'a JPEG image', hint: SAFETENSORS_HINT };
  if (ascii.startsWith('PK\x03\x04')) return { kind: 'other', looksLike: 'a zip archive (a PyTorch .pt/.ckpt is one)', hint: torchHint(path) };
  if (head[0] === 0x80 && head[1] !== undefined && head[1] >= 2 && head[1] <= 5) return { kind: 'other', looksLike: 'a Python pickle (a legacy PyTorch .pt/.ckpt)', hint: torchHint(path) };
  if (head[0] === 0x1f && head[1] === 0x8b) return { kind: 'other', looksLike: 'a gzip archive', hint: `unpack it first; ${SAFETENSORS_HINT}` };
  const text = head.length > 0 && head.every((b) => b === 0x09 || b === 0x0a || b === 0x0d || (b >= 0x20 && b < 0x7f) || b >= 0x80);
  if (text) return { kind: 'other', looksLike: ascii.trimStart().startsWith('{') ? 'a JSON text file' : 'a text file', hint: SAFETENSORS_HINT };
  return { kind: 'unknown' };
}
