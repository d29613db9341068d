"""Minimal safetensors read/write (F32, F64, BF16) with numpy, so the tool needs only python3-torch."""

import json
import os
import struct

import numpy as np
import torch


def bf16_bits(x):
    """float32 tensor -> uint16 bfloat16 bits, round half to even (as ninodes' toBf16 and torch do)."""
    u = x.detach().to(torch.float32).contiguous().numpy().view(np.uint32).astype(np.uint64)
    return (((u + 0x7FFF + ((u >> 16) & 1)) >> 16) & 0xFFFF).astype(np.uint16)


def bf16_round(x):
    """The float32 value of x stored as bfloat16."""
    bits = bf16_bits(x).astype(np.uint32) << 16
    return torch.from_numpy(bits.view(np.float32).copy()).reshape(x.shape)


def write(path, tensors, metadata):
    """tensors: name -> (dtype 'F32' | 'F64' | 'BF16', torch tensor). Written to a temporary file, then renamed."""
    header = {'__metadata__': metadata}
    blobs = []
    offset = 0
    for name, (dtype, t) in tensors.items():
        if dtype == 'BF16':
            raw = bf16_bits(t).tobytes()
        elif dtype == 'F32':
            raw = t.detach().to(torch.float32).contiguous().numpy().tobytes()
        elif dtype == 'F64':
            raw = t.detach().to(torch.float64).contiguous().numpy().tobytes()
        else:
            raise ValueError(f'unsupported dtype {dtype}')
        header[name] = {'dtype': dtype, 'shape': list(t.shape), 'data_offsets': [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    js = json.dumps(header, separators=(',', ':')).encode()
    js += b' ' * ((8 - len(js) % 8) % 8)
    tmp = f'{path}.partial-{os.getpid()}'
    with open(tmp, 'wb') as f:
        f.write(struct.pack('<Q', len(js)))
        f.write(js)
        for b in blobs:
            f.write(b)
    os.replace(tmp, path)


def read(path):
    """-> (name -> float32/float64 torch tensor, metadata)."""
    with open(path, 'rb') as f:
        n = struct.unpack('<Q', f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    meta = header.pop('__metadata__', {})
    out = {}
    for name, e in header.items():
        a, b = e['data_offsets']
        raw = data[a:b]
        if e['dtype'] == 'BF16':
            bits = np.frombuffer(raw, dtype=np.uint16).astype(np.uint32) << 16
            arr = bits.view(np.float32)
        elif e['dtype'] == 'F32':
            arr = np.frombuffer(raw, dtype=np.float32)
        elif e['dtype'] == 'F64':
            arr = np.frombuffer(raw, dtype=np.float64)
        else:
            raise ValueError(f'{path}: {name} has unsupported dtype {e["dtype"]}')
        out[name] = torch.from_numpy(arr.copy()).reshape(e['shape'])
    return out, meta
