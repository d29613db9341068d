import { describe, expect, it } from 'vitest';
import { conv1d, convTranspose1d } from '../index.js';
import { expectClose, randomF32 } from '../test-support/numeric.js';

// The definitions in float64, loop by loop (PyTorch's conv1d / conv_transpose1d on one sequence).
function conv1dF64(x: Float32Array, w: Float32Array, b: Float32Array | undefined, cin: number, len: number, cout: number, k: number, stride: number, pad: number, dil: number): Float64Array {
  const lout = Math.floor((len + 2 * pad - dil * (k - 1) - 1) / stride) + 1;
  const y = new Float64Array(cout * lout);
  for (let o = 0; o < cout; o++) {
    for (let t = 0; t < lout; t++) {
      let acc = b === undefined ? 0 : (b[o] as number);
      for (let c = 0; c < cin; c++) {
        for (let j = 0; j < k; j++) {
          const at = t * stride - pad + j * dil;
          if (at >= 0 && at < len) acc += (w[(o * cin + c) * k + j] as number) * (x[c * len + at] as number);
        }
      }
      y[o * lout + t] = acc;
    }
  }
  return y;
}

function convT1dF64(x: Float32Array, w: Float32Array, b: Float32Array | undefined, cin: number, len: number, cout: number, k: number, stride: number, pad: number): Float64Array {
  const lout = (len - 1) * stride - 2 * pad + k;
  const y = new Float64Array(cout * lout);
  for (let o = 0; o < cout; o++) for (let t = 0; t < lout; t++) y[o * lout + t] = b === undefined ? 0 : (b[o] as number);
  for (let c = 0; c < cin; c++) {
    for (let t = 0; t < len; t++) {
      for (let o = 0; o < cout; o++) {
        for (let j = 0; j < k; j++) {
          const at = t * stride + j - pad;
          if (at >= 0 && at < lout) y[o * lout + at] = (y[o * lout + at] as number) + (x[c * len + t] as number) * (w[(c * cout + o) * k + j] as number);
        }
      }
    }
  }
  return y;
}

describe('conv1d', () => {
  it.each([
    [3, 17, 5, 7, 1, 3, 1],
    [4, 20, 6, 3, 1, 3, 3],
    [2, 23, 4, 4, 2, 1, 1],
    [5, 9, 2, 1, 1, 0, 1],
  ])('Cin %i, L %i, Cout %i, K %i, stride %i, padding %i, dilation %i: the float64 definition', async (cin, len, cout, k, stride, pad, dil) => {
    const x = randomF32([cin, len], 1);
    const w = randomF32([cout, cin, k], 2);
    const b = randomF32([cout], 3);
    const y = await conv1d(x, w, b, { stride, padding: pad, dilation: dil });
    const ref = conv1dF64(x.data, w.data, b.data, cin, len, cout, k, stride, pad, dil);
    expect(y.shape).toEqual([cout, ref.length / cout]);
    expectClose(y.data, ref, 1e-5, 1e-5);
  });

  it('refuses mismatched channels and a window longer than the padded input', async () => {
    await expect(conv1d(randomF32([3, 8], 1), randomF32([2, 4, 3], 2))).rejects.toMatchObject({ code: 'SHAPE_MISMATCH' });
    await expect(conv1d(randomF32([3, 2], 1), randomF32([2, 3, 5], 2))).rejects.toMatchObject({ code: 'SHAPE_MISMATCH' });
    await expect(conv1d(randomF32([3, 8], 1), randomF32([2, 3, 3], 2), undefined, { stride: 0 })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
  });
});

describe('convTranspose1d', () => {
  it.each([
    [4, 6, 3, 9, 5, 2],
    [3, 11, 2, 4, 2, 1],
    [2, 5, 4, 12, 2, 0],
  ])('Cin %i, L %i, Cout %i, K %i, stride %i, padding %i: the float64 definition', async (cin, len, cout, k, stride, pad) => {
    const x = randomF32([cin, len], 4);
    const w = randomF32([cin, cout, k], 5);
    const b = randomF32([cout], 6);
    const y = await convTranspose1d(x, w, b, { stride, padding: pad });
    const ref = convT1dF64(x.data, w.data, b.data, cin, len, cout, k, stride, pad);
    expect(y.shape).toEqual([cout, ref.length / cout]);
    expectClose(y.data, ref, 1e-5, 1e-5);
  });
});
