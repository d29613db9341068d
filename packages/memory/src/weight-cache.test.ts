import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type Lease, TINY_WEIGHT_BYTES, WeightCache } from './weight-cache.js';

interface Value {
  key: string;
  serial: number;
}

function layerModel(n: number, bytes: number): { key: string; bytes: number }[] {
  return Array.from({ length: n }, (_, i) => ({ key: `blocks.${i}.weight`, bytes }));
}

describe('WeightCache semantics', () => {
  it('a cyclic pass over twice the budget keeps the first half and serves the rest as temporaries (no thrash)', () => {
    const n = 10;
    const size = 1000;
    const disposed: string[] = [];
    const cache = new WeightCache<Value>({ budgets: { cpu: 5 * size }, dispose: (v) => disposed.push(v.key) });
    cache.registerModel('m', layerModel(n, size));
    let serial = 0;
    const kinds: string[][] = [];
    for (let pass = 0; pass < 3; pass++) {
      cache.beginPass();
      const row: string[] = [];
      for (let i = 0; i < n; i++) {
        const lease = cache.acquire('cpu', 'm', `blocks.${i}.weight`, () => ({ key: `blocks.${i}.weight`, serial: serial++ }));
        expect(lease.value.key).toBe(`blocks.${i}.weight`);
        row.push(lease.kind);
        lease.release();
      }
      kinds.push(row);
    }
    const firstHalf = (k: string): string[] => [...Array(5).fill(k), ...Array(5).fill('temporary')];
    expect(kinds[0]).toEqual(firstHalf('materialized'));
    expect(kinds[1]).toEqual(firstHalf('hit'));
    expect(kinds[2]).toEqual(firstHalf('hit'));
    const s = cache.stats('cpu');
    expect(s.evictions).toBe(0);
    expect(s.residentBytes).toBe(5 * size);
    expect(s.temporaries).toBe(15);
    expect(disposed.length).toBe(15); // every temporary was freed on release
  });

  it('evicts the weights of an older pass before those of the current one, and only less important ones', () => {
    const cache = new WeightCache<string>({ budgets: { cpu: 300 } });
    cache.registerModel('m', ['a', 'b', 'c', 'd'].map((key) => ({ key, bytes: 100 })));
    cache.beginPass();
    for (const k of ['b', 'c', 'd']) cache.acquire('cpu', 'm', k, () => k).release();
    cache.beginPass();
    cache.acquire('cpu', 'm', 'd', () => 'd').release();
    const a = cache.acquire('cpu', 'm', 'a', () => 'a');
    expect(a.kind).toBe('materialized');
    a.release();
    // b and c were last used in the older pass; c has the lower priority (later load order) and goes.
    expect(cache.resident('cpu').map((r) => r.key).sort()).toEqual(['a', 'b', 'd']);
    // c outranks d (used in this pass, but less important), so c may evict d; b it may not.
    expect(cache.acquire('cpu', 'm', 'c', () => 'c').kind).toBe('materialized');
    expect(cache.resident('cpu').map((r) => r.key).sort()).toEqual(['a', 'b', 'c']);
    // d is now the least important: it may evict nothing and is served as a temporary.
    expect(cache.acquire('cpu', 'm', 'd', () => 'd').kind).toBe('temporary');
    expect(cache.stats('cpu').evictions).toBe(2);
  });

  it('never evicts a pinned weight: a request that needs its room is a temporary', () => {
    const cache = new WeightCache<string>({ budgets: { cpu: 150 } });
    cache.registerModel('m', [{ key: 'a', bytes: 100 }, { key: 'b', bytes: 100 }]);
    const a = cache.acquire('cpu', 'm', 'a', () => 'a');
    const b = cache.acquire('cpu', 'm', 'b', () => 'b');
    expect(b.kind).toBe('temporary');
    expect(cache.has('cpu', 'm', 'a')).toBe(true);
    b.release();
    a.release();
    // b is less important than a: next pass it is still a temporary, once a went a whole pass unused
    // it is stale and b may take its room.
    cache.beginPass();
    expect(cache.acquire('cpu', 'm', 'b', () => 'b').kind).toBe('temporary');
    cache.beginPass();
    expect(cache.acquire('cpu', 'm', 'b', () => 'b').kind).toBe('materialized');
    expect(cache.has('cpu', 'm', 'a')).toBe(false);
  });

  it('ranks tiny and force-loaded weights first, then load order', () => {
    const cache = new WeightCache<string>({ budgets: { cpu: 2 * TINY_WEIGHT_BYTES + 10 } });
    const big = TINY_WEIGHT_BYTES * 2;
    cache.registerModel('m', [{ key: 'big0', bytes: big }, { key: 'norm', bytes: 10 }, { key: 'forced', bytes: big, forceLoad: true }]);
    cache.beginPass();
    cache.acquire('cpu', 'm', 'big0', () => 'big0').release();
    cache.acquire('cpu', 'm', 'norm', () => 'norm').release();
    // 'forced' outranks big0 (same pass), so it may evict it.
    expect(cache.acquire('cpu', 'm', 'forced', () => 'forced').kind).toBe('materialized');
    expect(cache.has('cpu', 'm', 'big0')).toBe(false);
    expect(cache.has('cpu', 'm', 'norm')).toBe(true);
  });

  it('re-prioritizes per model: the most recently used model wins the budget', () => {
    const cache = new WeightCache<string>({ budgets: { cpu: 200 } });
    cache.registerModel('A', [{ key: 'w0', bytes: TINY_WEIGHT_BYTES }, { key: 'w1', bytes: TINY_WEIGHT_BYTES }].map((w) => ({ ...w, bytes: 100 })));
    cache.registerModel('B', [{ key: 'w0', bytes: 100 }, { key: 'w1', bytes: 100 }]);
    cache.beginPass();
    for (const k of ['w0', 'w1']) cache.acquire('cpu', 'A', k, () => `A.${k}`).release();
    for (const k of ['w0', 'w1']) expect(cache.acquire('cpu', 'B', k, () => `B.${k}`).kind).toBe('materialized');
    expect(cache.resident('cpu').map((r) => `${r.model}.${r.key}`).sort()).toEqual(['B.w0', 'B.w1']);
  });

  it('shrink() evicts unpinned weights down to a target; unknown devices and weights are typed errors', () => {
    const cache = new WeightCache<string>({ budgets: { cpu: 1000 } });
    cache.registerModel('m', layerModel(5, 100));
    const held = cache.acquire('cpu', 'm', 'blocks.0.weight', () => 'x');
    for (let i = 1; i < 5; i++) cache.acquire('cpu', 'm', `blocks.${i}.weight`, () => 'x').release();
    expect(cache.shrink('cpu', 0)).toBe(400);
    expect(cache.stats('cpu').residentBytes).toBe(100);
    held.release();
    expect(() => cache.acquire('cuda:0', 'm', 'blocks.0.weight', () => 'x')).toThrow(expect.objectContaining({ code: 'CACHE_UNKNOWN_DEVICE' }));
    expect(() => cache.acquire('cpu', 'm', 'nope', () => 'x')).toThrow(expect.objectContaining({ code: 'CACHE_UNKNOWN_WEIGHT' }));
  });

  it('lowering a budget evicts unpinned weights now and pinned ones when released', () => {
    const disposed: string[] = [];
    const cache = new WeightCache<string>({ budgets: { cpu: 300 }, dispose: (v) => disposed.push(v) });
    cache.registerModel('m', ['a', 'b', 'c'].map((key) => ({ key, bytes: 100 })));
    const a = cache.acquire('cpu', 'm', 'a', () => 'a');
    cache.acquire('cpu', 'm', 'b', () => 'b').release();
    cache.acquire('cpu', 'm', 'c', () => 'c').release();
    cache.setBudget('cpu', 50);
    expect(disposed.sort()).toEqual(['b', 'c']);
    expect(cache.stats('cpu').residentBytes).toBe(100);
    a.release();
    expect(disposed.sort()).toEqual(['a', 'b', 'c']);
    expect(cache.stats('cpu').residentBytes).toBe(0);
  });

  it('materializes an async weight once for concurrent requests, and a failure keeps nothing', async () => {
    const cache = new WeightCache<string>({ budgets: { cpu: 1000 } });
    cache.registerModel('m', layerModel(2, 100));
    let calls = 0;
    const make = async (): Promise<string> => {
      calls++;
      await new Promise((r) => setTimeout(r, 5));
      return 'v';
    };
    const [a, b] = await Promise.all([cache.acquireAsync('cpu', 'm', 'blocks.0.weight', make), cache.acquireAsync('cpu', 'm', 'blocks.0.weight', make)]);
    expect(calls).toBe(1);
    expect([a.kind, b.kind].sort()).toEqual(['hit', 'materialized']);
    expect(a.value).toBe('v');
    expect(b.value).toBe('v');
    a.release();
    b.release();
    await expect(cache.acquireAsync('cpu', 'm', 'blocks.1.weight', () => Promise.reject(new Error('boom')))).rejects.toThrow('boom');
    const s = cache.stats('cpu');
    expect(s.residentBytes).toBe(100);
    expect(s.pinnedBytes).toBe(0);
    expect(s.requests).toBe(s.hits + s.materializations + s.temporaries + s.failures);
  });
});

type Op =
  | { kind: 'acquire'; device: number; model: number; weight: number; hold: boolean; fail: boolean }
  | { kind: 'release'; index: number }
  | { kind: 'pass' }
  | { kind: 'shrink'; device: number; fraction: number };

describe('WeightCache invariants (property)', () => {
  it('never exceeds a budget, never evicts a pinned weight, serves every request, and its statistics add up', () => {
    const opArb: fc.Arbitrary<Op> = fc.oneof(
      { weight: 6, arbitrary: fc.record({ kind: fc.constant('acquire' as const), device: fc.nat(1), model: fc.nat(1), weight: fc.nat(11), hold: fc.boolean(), fail: fc.boolean() }) },
      { weight: 3, arbitrary: fc.record({ kind: fc.constant('release' as const), index: fc.nat(20) }) },
      { weight: 1, arbitrary: fc.constant({ kind: 'pass' as const }) },
      { weight: 1, arbitrary: fc.record({ kind: fc.constant('shrink' as const), device: fc.nat(1), fraction: fc.double({ min: 0, max: 1, noNaN: true }) }) },
    );
    fc.assert(
      fc.property(
        fc.array(fc.nat(5000), { minLength: 2, maxLength: 2 }),
        fc.array(fc.array(fc.oneof(fc.nat(200), fc.integer({ min: 60_000, max: 70_000 }), fc.nat(3000)), { minLength: 12, maxLength: 12 }), { minLength: 2, maxLength: 2 }),
        fc.array(fc.array(fc.boolean(), { minLength: 12, maxLength: 12 }), { minLength: 2, maxLength: 2 }),
        fc.array(opArb, { minLength: 1, maxLength: 120 }),
        fc.array(fc.boolean(), { minLength: 120, maxLength: 120 }),
        (budgets, sizes, forced, ops, failures) => {
          const devices = ['cpu', 'cuda:0'];
          const models = ['A', 'B'];
          const held: { lease: Lease<Value>; device: string; model: string; key: string }[] = [];
          const liveValues = new Set<Value>();
          let disposals = 0;
          let evictedCached = 0;
          const cache = new WeightCache<Value>({
            budgets: { cpu: budgets[0] as number, 'cuda:0': budgets[1] as number },
            dispose: (v) => {
              // A value still held through a pinned (non-temporary) lease must never be freed.
              expect(held.some((h) => h.lease.kind !== 'temporary' && h.lease.value === v)).toBe(false);
              expect(liveValues.has(v)).toBe(true);
              liveValues.delete(v);
              disposals++;
            },
          });
          models.forEach((m, mi) => cache.registerModel(m, (sizes[mi] as number[]).map((bytes, i) => ({ key: `w${i}`, bytes, forceLoad: (forced[mi] as boolean[])[i] as boolean }))));
          const byteOf = (mi: number, wi: number): number => (sizes[mi] as number[])[wi] as number;
          let serial = 0;
          let expectFailures = 0;
          ops.forEach((op, step) => {
            if (op.kind === 'acquire') {
              const device = devices[op.device] as string;
              const model = models[op.model] as string;
              const key = `w${op.weight}`;
              const shouldFail = op.fail && failures[step] === true && step % 5 === 0;
              const wasResident = cache.has(device, model, key);
              const make = (): Value => {
                if (shouldFail) throw new Error('materialize failed');
                const v = { key: `${model}.${key}`, serial: serial++ };
                liveValues.add(v);
                return v;
              };
              let lease: Lease<Value>;
              try {
                lease = cache.acquire(device, model, key, make);
              } catch (error) {
                expect(shouldFail && !wasResident).toBe(true);
                expectFailures++;
                return;
              }
              expect(lease.value.key).toBe(`${model}.${key}`);
              expect(lease.bytes).toBe(byteOf(op.model, op.weight));
              expect(lease.kind === 'hit').toBe(wasResident);
              if (lease.kind === 'temporary') expect(cache.has(device, model, key)).toBe(false);
              else expect(cache.has(device, model, key)).toBe(true);
              if (op.hold) held.push({ lease, device, model, key });
              else lease.release();
            } else if (op.kind === 'release') {
              const h = held.splice(op.index % Math.max(1, held.length), 1)[0];
              h?.lease.release();
            } else if (op.kind === 'pass') {
              cache.beginPass();
            } else {
              const device = devices[op.device] as string;
              cache.shrink(device, Math.floor(cache.budget(device) * op.fraction));
            }
            for (const [di, device] of devices.entries()) {
              const s = cache.stats(device);
              const resident = cache.resident(device);
              expect(s.residentBytes).toBeLessThanOrEqual(budgets[di] as number);
              expect(resident.reduce((a, r) => a + r.bytes, 0)).toBe(s.residentBytes);
              expect(s.requests).toBe(s.hits + s.materializations + s.temporaries + s.failures);
              expect(s.bytesMaterialized - s.bytesEvicted).toBe(s.residentBytes);
              expect(s.peakResidentBytes).toBeGreaterThanOrEqual(s.residentBytes);
              const openTemps = held.filter((h) => h.device === device && h.lease.kind === 'temporary').reduce((a, h) => a + h.lease.bytes, 0);
              expect(s.temporaryBytes).toBe(openTemps);
              expect(s.peakBytes).toBeGreaterThanOrEqual(s.residentBytes + s.temporaryBytes);
              const pinned = new Set(held.filter((h) => h.device === device && h.lease.kind !== 'temporary').map((h) => `${h.model}.${h.key}`));
              for (const p of pinned) expect(resident.some((r) => `${r.model}.${r.key}` === p)).toBe(true);
              expect(resident.filter((r) => r.pinned).map((r) => `${r.model}.${r.key}`).sort()).toEqual([...pinned].sort());
            }
          });
          for (const h of held) h.lease.release();
          let failuresSeen = 0;
          for (const device of devices) {
            const s = cache.stats(device);
            evictedCached += s.evictions;
            failuresSeen += s.failures;
          }
          // Every value still alive is resident; every other one was disposed exactly once.
          expect(failuresSeen).toBe(expectFailures);
          const residentCount = devices.reduce((a, d) => a + cache.resident(d).length, 0);
          expect(liveValues.size).toBe(residentCount);
          const temps = devices.reduce((a, d) => a + cache.stats(d).temporaries, 0);
          expect(disposals).toBe(evictedCached + temps);
        },
      ),
      { numRuns: 200, seed: 4242 },
    );
  });
});

describe('WeightCache async invariants (property)', () => {
  it('concurrent async requests stay within budget, materialize each resident weight once, and add up', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.nat(3000),
        fc.array(fc.nat(1500), { minLength: 6, maxLength: 6 }),
        fc.array(fc.record({ weight: fc.nat(5), delay: fc.nat(3), hold: fc.nat(3), fail: fc.boolean() }), { minLength: 1, maxLength: 40 }),
        async (budget, sizes, requests) => {
          const cache = new WeightCache<string>({ budgets: { cpu: budget } });
          cache.registerModel('m', sizes.map((bytes, i) => ({ key: `w${i}`, bytes })));
          const tick = (n: number): Promise<void> => new Promise((r) => setTimeout(r, n));
          const check = (): void => {
            const s = cache.stats('cpu');
            expect(s.residentBytes).toBeLessThanOrEqual(budget);
            expect(cache.resident('cpu').reduce((a, r) => a + r.bytes, 0)).toBe(s.residentBytes);
          };
          const results = await Promise.allSettled(
            requests.map(async (r, i) => {
              await tick(i % 3);
              const key = `w${r.weight}`;
              const shouldFail = r.fail && i % 4 === 0;
              const lease = await cache.acquireAsync('cpu', 'm', key, async () => {
                await tick(r.delay);
                if (shouldFail) throw new Error('materialize failed');
                return key;
              });
              check();
              expect(lease.value).toBe(key);
              expect(lease.bytes).toBe(sizes[r.weight]);
              await tick(r.hold);
              lease.release();
              check();
            }),
          );
          const s = cache.stats('cpu');
          const rejected = results.filter((x) => x.status === 'rejected');
          for (const x of rejected) expect(String((x as PromiseRejectedResult).reason)).toContain('materialize failed');
          expect(s.requests).toBe(requests.length);
          expect(s.requests).toBe(s.hits + s.materializations + s.temporaries + s.failures);
          expect(s.failures).toBe(rejected.length);
          expect(s.pinnedBytes).toBe(0);
          expect(s.temporaryBytes).toBe(0);
          expect(s.bytesMaterialized - s.bytesEvicted).toBe(s.residentBytes);
        },
      ),
      { numRuns: 60, seed: 99 },
    );
  });
});

describe('invalidate', () => {
  it('drops and disposes an unpinned weight so the next acquire materializes again; a pinned one is CACHE_PINNED', () => {
    const disposed: string[] = [];
    const cache = new WeightCache<string>({ budgets: { cpu: 1000 }, dispose: (v) => disposed.push(v) });
    cache.registerModel('m', [{ key: 'a', bytes: 100 }]);
    cache.acquire('cpu', 'm', 'a', () => 'a1').release();
    expect(cache.invalidate('m', 'a')).toBe(100);
    expect(disposed).toEqual(['a1']);
    expect(cache.stats('cpu').residentBytes).toBe(0);
    const again = cache.acquire('cpu', 'm', 'a', () => 'a2');
    expect(again.kind).toBe('materialized');
    expect(again.value).toBe('a2');
    expect(() => cache.invalidate('m', 'a')).toThrow(expect.objectContaining({ code: 'CACHE_PINNED' }));
    again.release();
    expect(cache.invalidate('m', 'nothing-there')).toBe(0);
  });
});
