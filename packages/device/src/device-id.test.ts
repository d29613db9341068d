import fc from 'fast-check';
import { isNinodesError } from '@ninodes/kernels';
import { describe, expect, it } from 'vitest';
import { MAX_DEVICE_INDEX, formatDeviceId, parseDeviceId, tryParseDeviceId, type DeviceId } from './device-id.js';

const idArb: fc.Arbitrary<DeviceId> = fc.oneof(
  fc.constantFrom<DeviceId>({ kind: 'cpu' }, { kind: 'disk' }, { kind: 'mps' }),
  fc.record({ kind: fc.constantFrom('cuda' as const, 'hip' as const, 'xpu' as const, 'vk' as const), index: fc.integer({ min: 0, max: MAX_DEVICE_INDEX }) }),
);

describe('parseDeviceId', () => {
  it('round-trips every canonical id', () => {
    fc.assert(fc.property(idArb, (id) => {
        expect(parseDeviceId(formatDeviceId(id))).toEqual(id);
      }));
  });

  it('accepts case and surrounding space variations of canonical ids', () => {
    fc.assert(
      fc.property(idArb, fc.boolean(), fc.constantFrom('', ' ', '\t'), (id, upper, pad) => {
        const text = formatDeviceId(id);
        expect(parseDeviceId(`${pad}${upper ? text.toUpperCase() : text}${pad}`)).toEqual(id);
      }),
    );
  });

  it('maps aliases: cuda = cuda:0, rocm:N = hip:N, rocm = hip:0', () => {
    expect(parseDeviceId('cuda')).toEqual({ kind: 'cuda', index: 0 });
    expect(parseDeviceId('hip')).toEqual({ kind: 'hip', index: 0 });
    expect(parseDeviceId('rocm')).toEqual({ kind: 'hip', index: 0 });
    expect(parseDeviceId('vulkan:1')).toEqual({ kind: 'vk', index: 1 });
    expect(parseDeviceId('vk')).toEqual({ kind: 'vk', index: 0 });
    fc.assert(fc.property(fc.integer({ min: 0, max: MAX_DEVICE_INDEX }), (n) => {
        expect(parseDeviceId(`rocm:${n}`)).toEqual({ kind: 'hip', index: n });
      }));
  });

  it('rejects malformed ids with DEVICE_ID_INVALID naming the id and listing valid ones', () => {
    const bad = ['', 'gpu0', 'cuda:', 'cuda:-1', 'cuda:01', 'cuda:1.5', 'cuda:x', 'cpu:0', 'disk:1', 'mps:0', 'cuda:0:1', 'tpu:0', `cuda:${MAX_DEVICE_INDEX + 1}`, 'cuda :0'];
    for (const text of bad) {
      let caught: unknown;
      try {
        parseDeviceId(text, { available: ['cpu', 'disk', 'hip:0'] });
      } catch (e) {
        caught = e;
      }
      expect(isNinodesError(caught, 'DEVICE_ID_INVALID'), text).toBe(true);
      const err = caught as Error & { value: unknown };
      expect(err.message).toContain(`'${text}'`);
      expect(err.message).toContain('cpu, disk, hip:0');
      expect(err.value).toBe(text);
    }
  });

  it('rejects arbitrary strings that are not in the grammar, never throwing anything but DEVICE_ID_INVALID', () => {
    const grammar = /^\s*(cpu|disk|mps|(cuda|hip|xpu|rocm|vk|vulkan)(:(0|[1-9][0-9]*))?)\s*$/i;
    fc.assert(
      fc.property(fc.string({ maxLength: 12 }), (text) => {
        const ok = grammar.test(text) && !/:(\d{5,})/.test(text) && Number(/:(\d+)/.exec(text)?.[1] ?? 0) <= MAX_DEVICE_INDEX;
        if (ok) expect(tryParseDeviceId(text)).toBeDefined();
        else {
          try {
            parseDeviceId(text);
            expect.unreachable(`accepted '${text}'`);
          } catch (e) {
            expect(isNinodesError(e, 'DEVICE_ID_INVALID')).toBe(true);
          }
        }
      }),
      { numRuns: 500 },
    );
  });

  it('rejects well-formed ids absent from this machine with DEVICE_NOT_FOUND', () => {
    expect(() => parseDeviceId('cuda:1', { available: ['cpu', 'disk', 'cuda:0'] })).toThrowError(/cuda:1.*valid ids here: cpu, disk, cuda:0/);
    try {
      parseDeviceId('rocm:3', { available: ['cpu', 'hip:0'], where: '--device' });
    } catch (e) {
      expect(isNinodesError(e, 'DEVICE_NOT_FOUND')).toBe(true);
      expect((e as { where: string }).where).toBe('--device');
      expect((e as Error).message).toContain('(hip:3)');
    }
    expect(parseDeviceId('cuda', { available: ['cpu', 'cuda:0'] })).toEqual({ kind: 'cuda', index: 0 });
  });
});
