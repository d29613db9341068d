import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Tensor } from '@ninodes/kernels';
import { afterAll, describe, expect, it } from 'vitest';
import { SafetensorsFile } from './safetensors-file.js';
import { ShardedSafetensors, openSafetensors } from './sharded-safetensors.js';
import { tensorSources, writeSafetensors } from './safetensors-writer.js';

const fixtures = process.env.NINODES_FIXTURES as string;
const dir = mkdtempSync(join(tmpdir(), 'ninodes-st-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

// Independent float decoders from the format definitions (float64 results).
function f16(bits: number): number {
  const s = bits >> 15 ? -1 : 1;
  const e = (bits >> 10) & 0x1f;
  const m = bits & 0x3ff;
  if (e === 0) return s * m * 2 ** -24;
  if (e === 31) return m ? NaN : s * Infinity;
  return s * (1 + m / 1024) * 2 ** (e - 15);
}
const bf16 = (bits: number): number => new Float32Array(new Uint32Array([bits << 16]).buffer)[0] as number;
function e4m3fn(b: number): number {
  const s = b & 0x80 ? -1 : 1;
  const e = (b >> 3) & 0xf;
  const m = b & 7;
  if ((b & 0x7f) === 0x7f) return NaN;
  return e === 0 ? s * (m / 8) * 2 ** -6 : s * (1 + m / 8) * 2 ** (e - 7);
}
function e5m2(b: number): number {
  const s = b & 0x80 ? -1 : 1;
  const e = (b >> 2) & 0x1f;
  const m = b & 3;
  if (e === 31) return m ? NaN : s * Infinity;
  return e === 0 ? s * (m / 4) * 2 ** -14 : s * (1 + m / 4) * 2 ** (e - 15);
}

function decoded(t: Tensor): (number | string)[] {
  const d = t.data as ArrayLike<number | bigint>;
  const out: (number | string)[] = [];
  for (let i = 0; i < d.length; i++) {
    const v = d[i] as number | bigint;
    if (typeof v === 'bigint') out.push(v.toString());
    else if (t.dtype === 'f16') out.push(f16(v));
    else if (t.dtype === 'bf16') out.push(bf16(v));
    else if (t.dtype === 'f8_e4m3fn') out.push(e4m3fn(v));
    else if (t.dtype === 'f8_e5m2') out.push(e5m2(v));
    else if (t.dtype === 'u32') out.push(String(v));
    else out.push(v);
  }
  return out;
}

const FILE_DTYPE: Record<string, string> = {
  f64: 'F64', f32: 'F32', f16: 'F16', bf16: 'BF16', i64: 'I64', i32: 'I32', i16: 'I16', i8: 'I8', u8: 'U8', bool: 'BOOL',
  f8_e4m3fn: 'F8_E4M3', f8_e5m2: 'F8_E5M2', u16: 'U16', u32: 'U32', u64: 'U64',
};

describe('safetensors reader', () => {
  it('reads every dtype, the scalar, the empty tensor and metadata of the fixture exactly', () => {
    const expected = JSON.parse(readFileSync(join(fixtures, 'safetensors', 'dtypes.json'), 'utf8')) as {
      tensors: Record<string, unknown> & { __metadata__: Record<string, string>; __header_length__: number };
    };
    const st = SafetensorsFile.open(join(fixtures, 'safetensors', 'dtypes.safetensors'));
    const { __metadata__: meta, __header_length__: headerLength, ...tensors } = expected.tensors;
    expect(st.metadata).toEqual(meta);
    expect(st.header.headerBytes).toBe(headerLength);
    expect(st.entries().map((e) => e.name).sort()).toEqual(Object.keys(tensors).sort());
    for (const [name, raw] of Object.entries(tensors)) {
      const want = raw as { dtype: string; shape: number[]; data_offsets: [number, number]; values: (number | string)[] };
      const e = st.entry(name);
      expect(FILE_DTYPE[e.dtype], name).toBe(want.dtype);
      expect(e.shape).toEqual(want.shape);
      expect(e.byteOffset - st.header.dataStart).toBe(want.data_offsets[0]);
      expect(e.byteLength).toBe(want.data_offsets[1] - want.data_offsets[0]);
      const t = st.tensor(name);
      expect(decoded(t), name).toEqual(want.values);
    }
    st.close();
  });

  it('close() detaches views: stale typed arrays read as empty and tensors refuse reads', () => {
    const st = SafetensorsFile.open(join(fixtures, 'safetensors', 'dtypes.safetensors'));
    const t = st.tensor('f32');
    const view = t.data;
    expect(view.length).toBe(7);
    st.close();
    expect(view.length).toBe(0);
    expect(t.disposed).toBe(true);
    expect(() => t.data).toThrow(expect.objectContaining({ code: 'TENSOR_DISPOSED' }));
    expect(() => st.tensor('f32')).toThrow(expect.objectContaining({ code: 'FILE_CLOSED' }));
  });

  it('dispose() of one tensor detaches only its own view', () => {
    const st = SafetensorsFile.open(join(fixtures, 'safetensors', 'dtypes.safetensors'));
    const a = st.tensor('i8');
    const b = st.tensor('i8');
    const view = a.data;
    a.dispose();
    expect(view.length).toBe(0);
    expect([...b.data]).toEqual([-38, 113, 62, 78, 104, 54, 118].map((x) => x));
    st.close();
  });

  it('names the missing tensor', () => {
    const st = SafetensorsFile.open(join(fixtures, 'safetensors', 'dtypes.safetensors'));
    expect(() => st.tensor('nope')).toThrow(expect.objectContaining({ code: 'TENSOR_NOT_FOUND', value: 'nope' }));
    st.close();
  });

  it('refuses to read a file truncated or replaced after it was mapped (no SIGBUS)', async () => {
    const path = join(dir, 'victim.safetensors');
    const big = Tensor.fromArray('f32', [4096], Float32Array.from({ length: 4096 }, (_, i) => i));
    await writeSafetensors(path, tensorSources({ a: big, b: big }));
    const st = SafetensorsFile.open(path);
    expect(st.tensor('b').data[5]).toBe(5);
    truncateSync(path, 100);
    expect(() => st.tensor('b')).toThrow(expect.objectContaining({ code: 'FILE_TRUNCATED' }));
    st.close();

    // Without the identity check, the native full read still survives the missing pages.
    await writeSafetensors(path, tensorSources({ a: big, b: big }));
    const unchecked = SafetensorsFile.open(path, { verifyOnUse: false });
    truncateSync(path, 100);
    expect(() => unchecked.sumBytes('b')).toThrow(expect.objectContaining({ code: 'FILE_TRUNCATED', where: path }));
    unchecked.close();

    await writeSafetensors(path, tensorSources({ a: big, b: big }));
    const st2 = SafetensorsFile.open(path);
    await writeSafetensors(path, tensorSources({ a: big, b: big })); // rename over it: a new inode
    expect(() => st2.tensor('a')).toThrow(expect.objectContaining({ code: 'FILE_REPLACED' }));
    st2.close();
  });
});

describe('sharded safetensors', () => {
  it('opens an index and its shards as one checkpoint', async () => {
    const a = Tensor.f32([2, 2], [1, 2, 3, 4]);
    const b = Tensor.f32([3], [5, 6, 7]);
    await writeSafetensors(join(dir, 'model-00001-of-00002.safetensors'), tensorSources({ 'blocks.0.w': a }));
    await writeSafetensors(join(dir, 'model-00002-of-00002.safetensors'), tensorSources({ 'blocks.1.w': b }));
    const index = join(dir, 'model.safetensors.index.json');
    writeFileSync(index, JSON.stringify({ metadata: { total_size: 28 }, weight_map: { 'blocks.0.w': 'model-00001-of-00002.safetensors', 'blocks.1.w': 'model-00002-of-00002.safetensors' } }));
    const ck = openSafetensors(index);
    expect(ck).toBeInstanceOf(ShardedSafetensors);
    expect(ck.metadata).toEqual({ total_size: '28' });
    expect(ck.entries().map((e) => e.name)).toEqual(['blocks.0.w', 'blocks.1.w']);
    expect([...(ck.tensor('blocks.1.w').data as Float32Array)]).toEqual([5, 6, 7]);
    expect(ck.entry('blocks.0.w').file).toBe(join(dir, 'model-00001-of-00002.safetensors'));
    ck.close();

    writeFileSync(index, JSON.stringify({ weight_map: { 'blocks.9.w': 'model-00001-of-00002.safetensors' } }));
    expect(() => openSafetensors(index)).toThrow(expect.objectContaining({ code: 'SAFETENSORS_INDEX_MISSING_TENSOR' }));
    writeFileSync(index, JSON.stringify({ weight_map: { x: '../etc/passwd' } }));
    expect(() => openSafetensors(index)).toThrow(expect.objectContaining({ code: 'SAFETENSORS_INDEX_INVALID' }));
  });
});

describe('safetensors writer', () => {
  const tensors = {
    'blocks.0.attn.qkv_proj.weight': Tensor.f32([3, 5], Array.from({ length: 15 }, (_, i) => i * 0.5 - 3)),
    'blocks.0.norm.weight': Tensor.fromArray('bf16', [3], new Uint16Array([0x3f80, 0xc000, 0x0000])),
    scalar: Tensor.fromArray('i64', [], new BigInt64Array([-7n])),
    empty: Tensor.zeros('f16', [0, 4]),
    flags: Tensor.fromArray('bool', [3], new Uint8Array([1, 0, 1])),
  };

  it('pads the header to 8 bytes with spaces and reads back exactly', async () => {
    const path = join(dir, 'written.safetensors');
    const result = await writeSafetensors(path, tensorSources(tensors), { metadata: { format: 'pt', note: 'ninodes' } });
    const bytes = readFileSync(path);
    const n = Number(bytes.readBigUInt64LE(0));
    expect(n % 8).toBe(0);
    expect(result.headerBytes).toBe(n);
    expect(bytes.byteLength).toBe(result.bytes);
    const text = bytes.subarray(8, 8 + n).toString('utf8');
    expect(text).toMatch(/^\{.*\} *$/);
    const st = SafetensorsFile.open(path);
    expect(st.metadata).toEqual({ format: 'pt', note: 'ninodes' });
    for (const [name, t] of Object.entries(tensors)) {
      const back = st.tensor(name);
      expect(back.dtype).toBe(t.dtype);
      expect(back.shape).toEqual(t.shape);
      expect([...back.bytes()]).toEqual([...t.bytes()]);
    }
    st.close();
  });

  it('leaves no file under the real name (nor a temp file) when a tensor fails mid-write', async () => {
    const path = join(dir, 'atomic.safetensors');
    const sources = tensorSources(tensors);
    const failing = sources.map((s, i) => (i === 2 ? { ...s, data: () => Promise.reject(new Error('provider exploded')) } : s));
    await expect(writeSafetensors(path, failing)).rejects.toThrow('provider exploded');
    expect(existsSync(path)).toBe(false);
    expect(readdirSync(dir).filter((f) => f.includes('atomic'))).toEqual([]);
    // An existing file survives a failed overwrite untouched.
    await writeSafetensors(path, sources);
    const before = readFileSync(path);
    await expect(writeSafetensors(path, failing)).rejects.toThrow('provider exploded');
    expect(readFileSync(path).equals(before)).toBe(true);
    const wrongSize = sources.map((s, i) => (i === 0 ? { ...s, data: () => new Uint8Array(3) } : s));
    await expect(writeSafetensors(path, wrongSize)).rejects.toThrow(expect.objectContaining({ code: 'SAFETENSORS_WRITE_MISMATCH' }));
    expect(readFileSync(path).equals(before)).toBe(true);
  });

  const python = spawnSync('python3', ['-c', 'import safetensors, numpy'], { encoding: 'utf8' });
  const pythonReason = python.error ? `python3 not runnable: ${python.error.message}` : python.status !== 0 ? `python3 cannot import safetensors/numpy: ${python.stderr.trim().split('\n').pop()}` : '';
  it.skipIf(pythonReason !== '')(`reads back in Python safetensors${pythonReason ? ` (skipped: ${pythonReason})` : ''}`, async () => {
    const path = join(dir, 'for-python.safetensors');
    await writeSafetensors(path, tensorSources(tensors), { metadata: { format: 'pt' } });
    // numpy has no bfloat16, so BF16 is checked by dtype and shape only (get_slice reads no data).
    const script = `
import json, sys
from safetensors import safe_open
out = {}
with safe_open(sys.argv[1], framework="numpy") as f:
    out["__metadata__"] = f.metadata()
    for k in f.keys():
        sl = f.get_slice(k)
        entry = {"shape": list(sl.get_shape()), "dtype": sl.get_dtype()}
        if entry["dtype"] != "BF16":
            entry["hex"] = f.get_tensor(k).tobytes().hex()
        out[k] = entry
print(json.dumps(out))`;
    const got = JSON.parse(execFileSync('python3', ['-c', script, path], { encoding: 'utf8' })) as Record<string, { shape: number[]; dtype: string; hex?: string }>;
    expect(got.__metadata__).toEqual({ format: 'pt' });
    for (const [name, t] of Object.entries(tensors)) {
      expect(got[name]?.shape).toEqual([...t.shape]);
      expect(got[name]?.dtype).toBe(FILE_DTYPE[t.dtype]);
      if (t.dtype !== 'bf16') expect(got[name]?.hex).toBe(Buffer.from(t.bytes()).toString('hex'));
    }
  });
});

