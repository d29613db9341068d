// The committed h3-shapes model against references that are not ninodes' own output: float64
// PyTorch samples (tools/train-demo/evaluate.py), the float64 TS oracle in test-support, and the
// Python shape score on the same cases.
import { fileURLToPath } from 'node:url';
import { Tensor } from '@ninodes/kernels';
import { describe, expect, it } from 'vitest';
import { gaussianNoise } from './noise.js';
import { openH3Model } from './open-h3-model.js';
import { runSampler } from './sampler.js';
import { SHAPES_PALETTE, cleanShape, cleanShapeScore, paletteFraction, paletteScore } from './shape-score.js';
import { samplerHints, shapesModelPath } from './shapes-model.js';
import { readSafetensorsFile, tensorF64 } from '@ninodes/test-safetensors';
import { type RefConfig, refForward } from './test-support/reference-f64.js';
import { maxRelError } from '@ninodes/quant';

const expectPath = fileURLToPath(new URL('../fixtures/h3-shapes/expect.safetensors', import.meta.url));

describe('h3-shapes, the trained default model', () => {
  const fixture = readSafetensorsFile(expectPath);
  const f64 = (name: string): Float64Array => tensorF64(fixture, name);

  it('carries the sampler setting it was chosen with', () => {
    const { source, close } = openH3Model(shapesModelPath(), { compute: 'f32' });
    try {
      const hints = samplerHints(source);
      expect(hints).toMatchObject({ frames: 1, height: 16, width: 16 });
      expect(fixture.metadata.sample_f64).toContain(`${hints!.steps} steps, shift ${hints!.shift}`);
    } finally {
      close();
    }
  });

  it('refuses metadata past the CLI\'s limits (steps 2^53 - 1, a shift of 1e300) as INVALID_METADATA', () => {
    for (const bad of [{ steps: 2 ** 53 - 1, shift: 3 }, { steps: 1001, shift: 3 }, { steps: 8, shift: 1e300 }]) {
      const metadata = { 'ninodes.sampler': JSON.stringify({ ...bad, frames: 1, height: 16, width: 16 }) };
      expect(() => samplerHints({ path: 'x.safetensors', metadata })).toThrow(expect.objectContaining({ code: 'INVALID_METADATA' }));
    }
    expect(samplerHints({ path: 'x.safetensors', metadata: { 'ninodes.sampler': JSON.stringify({ steps: 1000, shift: 1e6, frames: 1, height: 16, width: 16 }) } })?.steps).toBe(1000);
  });

  it('samples seeds 0..3 in fp32 as float64 PyTorch does from the same weights and noise', async () => {
    const { model, source, close } = openH3Model(shapesModelPath(), { compute: 'f32' });
    try {
      const hints = samplerHints(source)!;
      const want = f64('sample_f64');
      const per = want.length / 4;
      for (let seed = 0; seed < 4; seed++) {
        const r = await runSampler(model, { seed, frames: hints.frames, height: hints.height, width: hints.width, steps: hints.steps, shift: hints.shift });
        const ref = want.subarray(seed * per, (seed + 1) * per);
        // fp32 against float64 through every step: a wrong op (rope, norm, gate, sign) is off by O(1).
        expect(maxRelError(r.latent.data, ref)).toBeLessThan(1e-3);
      }
    } finally {
      close();
    }
  });

  it('one fp32 forward matches the float64 TS oracle of the H3 video forward', async () => {
    const ck = readSafetensorsFile(shapesModelPath());
    const cfgJson = JSON.parse(ck.metadata['ninodes.h3_config']!) as Record<string, number>;
    const cfg: RefConfig = {
      layers: cfgJson.layers!,
      hidden: cfgJson.hidden!,
      heads: cfgJson.heads!,
      headDim: cfgJson.headDim!,
      ffn: cfgJson.ffn!,
      tDim: cfgJson.tDim!,
      channels: cfgJson.latentChannels!,
      ropeLen: cfgJson.ropeLen!,
      eps: cfgJson.eps!,
      qkEps: cfgJson.qkEps!,
      finalEps: cfgJson.finalEps!,
      freqDim: cfgJson.freqDim!,
    };
    const noise = gaussianNoise([1, 24, 1, 16, 16], 11);
    const want = refForward((n) => tensorF64(ck, n), cfg, Float64Array.from(noise.data), 1, 16, 16, 0.5);
    const { model, close } = openH3Model(shapesModelPath(), { compute: 'f32' });
    try {
      expect(maxRelError((await model.forward(noise, 0.5)).data, want)).toBeLessThan(1e-4);
    } finally {
      close();
    }
  });

  it('scores the fixture cases as the Python shape score does', () => {
    const cases = f64('score_cases');
    const fractions = f64('score_fractions');
    const n = fractions.length;
    const per = cases.length / n;
    const latents = Array.from({ length: n }, (_, i) => Tensor.fromArray('f32', [1, 3, 1, 16, 16], Float32Array.from(cases.subarray(i * per, (i + 1) * per))));
    expect(latents.map((l) => paletteFraction(l))).toEqual(Array.from(fractions));
    // drawings score 1, the noisiest cases fail: the cases cover both sides of the threshold
    expect(fractions.slice(0, 8).every((f) => f === 1)).toBe(true);
    expect(Math.min(...fractions)).toBeLessThan(0.9);
    expect(paletteScore(latents)).toBe(Number(fixture.metadata.score_cases_score));
  });

  it('calls the training drawings (made by tools/train-demo/shapes.py) clean shapes', () => {
    const cases = f64('score_cases');
    const per = 3 * 16 * 16;
    const drawings = Array.from({ length: 8 }, (_, i) => Tensor.fromArray('f32', [1, 3, 1, 16, 16], Float32Array.from(cases.subarray(i * per, (i + 1) * per))));
    expect(drawings.map((l) => cleanShape(l).reason)).toEqual(Array(8).fill('clean'));
    expect(cleanShapeScore(drawings)).toBe(1);
  });

  it('refuses what the palette score passes: a flat background, a speck, a ragged blob, two colours, scattered pieces', () => {
    // Frames drawn here, pixel by pixel: background 0 with shape colour 2 where `inside` says.
    const frame = (inside: (y: number, x: number) => number | false) => {
      const data = new Float32Array(3 * 256);
      for (let y = 0; y < 16; y++) {
        for (let x = 0; x < 16; x++) {
          const k = inside(y, x);
          const rgb = SHAPES_PALETTE[k === false ? 0 : k]!;
          for (let c = 0; c < 3; c++) data[c * 256 + y * 16 + x] = rgb[c]! * 2 - 1;
        }
      }
      return Tensor.fromArray('f32', [1, 3, 1, 16, 16], data);
    };
    const disk = frame((y, x) => ((y + 0.5 - 8) ** 2 + (x + 0.5 - 8) ** 2 <= 16 ? 2 : false));
    const cases = {
      clean: disk,
      'no-shape': frame(() => false),
      speck: frame((y, x) => (y >= 7 && y < 9 && x >= 7 && x < 9 ? 2 : false)),
      // a plus sign: 44 pixels in a 12x12 box (fill 0.31)
      ragged: frame((y, x) => ((y >= 2 && y < 14 && x >= 7 && x < 9) || (x >= 2 && x < 14 && y >= 7 && y < 9) ? 2 : false)),
      'mixed-colours': frame((y, x) => (y >= 4 && y < 12 && x >= 4 && x < 12 ? (x < 8 ? 2 : 3) : false)),
      // two 5x5 squares one above the other: their box is 0.83 full, but they are two parts
      scattered: frame((y, x) => ((y >= 2 && y < 7 && x >= 2 && x < 7) || (y >= 9 && y < 14 && x >= 2 && x < 7) ? 2 : false)),
    };
    const verdicts = Object.fromEntries(Object.entries(cases).map(([k, l]) => [k, cleanShape(l).reason]));
    expect(verdicts).toEqual({ clean: 'clean', 'no-shape': 'no-shape', speck: 'no-shape', ragged: 'ragged', 'mixed-colours': 'mixed-colours', scattered: 'scattered' });
    // every one of them passes the palette score
    expect(paletteScore(Object.values(cases))).toBe(1);
  });

  it('counts a pixel within 0.2 of a palette colour and not one just outside', () => {
    const [r, g, b] = SHAPES_PALETTE[2]!;
    const pixel = (dr: number) => Tensor.fromArray('f32', [1, 3, 1, 1, 1], Float32Array.from([(r + dr) * 2 - 1, g * 2 - 1, b * 2 - 1]));
    expect(paletteFraction(pixel(0.19))).toBe(1);
    expect(paletteFraction(pixel(-0.21))).toBe(0);
  });
});

describe('samplerHints', () => {
  it('is undefined without metadata and rejects a malformed setting', () => {
    expect(samplerHints({ path: 'x', metadata: {} })).toBeUndefined();
    expect(() => samplerHints({ path: 'x', metadata: { 'ninodes.sampler': '{"steps": 0, "shift": 1, "frames": 1, "height": 16, "width": 16}' } })).toThrow(
      expect.objectContaining({ code: 'INVALID_METADATA' }),
    );
    expect(() => samplerHints({ path: 'x', metadata: { 'ninodes.sampler': 'nope' } })).toThrow(expect.objectContaining({ code: 'INVALID_METADATA' }));
  });
});
