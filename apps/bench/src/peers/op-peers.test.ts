import { spawnSync } from 'node:child_process';
import { afterAll, describe, expect, it } from 'vitest';
import type { CaseContext } from '../suite.js';
import { measurePeakMemory, measureScriptPeakMemory } from '../peak-memory.js';
import { memcpyContender } from './memcpy-peer.js';
import { attentionContenders, attentionWork, intMmContenders, intMmWork, linearContenders, linearWork } from './op-peers.js';
import { PythonPeer } from './python-peer.js';

/** Byte and flop counts by walking the loops of the definitions, to check the closed forms. */
function countLinear(m: number, n: number, k: number) {
  let macs = 0;
  for (let i = 0; i < m; i++) for (let j = 0; j < n; j++) for (let p = 0; p < k; p++) macs++;
  return { flops: 2 * macs, elements: m * k + n * k + n + m * n };
}

describe('op work formulas', () => {
  it('linear, int_mm and attention count what their definitions do', () => {
    for (const [m, n, k] of [[1, 1, 1], [3, 5, 7], [17, 2, 33]] as const) {
      const c = countLinear(m, n, k);
      expect(linearWork({ m, n, k }, 'f32')).toEqual({ flops: c.flops, bytes: 4 * c.elements });
      expect(linearWork({ m, n, k }, 'bf16').bytes).toBe(2 * c.elements);
      expect(linearWork({ m, n, k, bias: false }, 'f32').bytes).toBe(4 * (c.elements - n));
      expect(intMmWork({ m, n, k })).toEqual({ flops: c.flops, bytes: m * k + k * n + 4 * m * n });
    }
    // Attention = q·kᵀ (s x s x d MACs) then p·v (s x d x s MACs), per batch and head.
    const s = { batch: 2, heads: 3, seq: 5, dim: 4 };
    const qk = countLinear(s.seq, s.seq, s.dim).flops;
    const pv = countLinear(s.seq, s.dim, s.seq).flops;
    expect(attentionWork(s, 'f32')).toEqual({ flops: s.batch * s.heads * (qk + pv), bytes: 4 * 4 * s.batch * s.heads * s.seq * s.dim });
  });
});

describe('op contenders', () => {
  const python = new PythonPeer();
  afterAll(() => python.close());
  const ctx: CaseContext = {
    quick: true,
    threads: 1,
    tmpDir: '/tmp',
    dropFileCache: async () => undefined,
    peakMemory: measurePeakMemory,
    peakMemoryOfScript: measureScriptPeakMemory,
    peers: {
      python: (kind, params) => python.job(kind, params),
      memcpy: memcpyContender,
      cat: async () => ({ missing: 'unused' }),
      dd: async () => ({ missing: 'unused' }),
    },
  };
  const torch = spawnSync('python3', ['-c', 'import torch']).status === 0;

  it('give a memcpy bound and a torch peer that is timed exactly when torch imports', async () => {
    for (const against of [
      await linearContenders(ctx, { m: 8, n: 16, k: 32 }, 'f32'),
      await intMmContenders(ctx, { m: 32, n: 16, k: 32 }),
      await attentionContenders(ctx, { batch: 1, heads: 2, seq: 8, dim: 16 }, 'f32'),
    ]) {
      expect(Object.keys(against)).toEqual(['memcpy', 'torch']);
      expect(against.memcpy?.kind).toBe('bound');
      expect('run' in (against.memcpy?.contender ?? {})).toBe(true);
      const t = against.torch?.contender;
      if (!torch) {
        expect(t).toHaveProperty('missing');
        continue;
      }
      if (!t || !('time' in t)) throw new Error('torch imports, so the peer must be timed');
      expect(await t.time(1)).toBeGreaterThan(0);
    }
  });
});
