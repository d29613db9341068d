import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { AllocationError, type AllocationErrorCode } from './allocation-error.js';
import { type AllocationSpec, validateAllocationSpec } from './allocation-spec.js';
import { formatAllocation, plainDecimal } from './format-allocation.js';
import { type DeviceCapacity, parseAllocation } from './parse-allocation.js';

const GiB = 2 ** 30;
const MiB = 2 ** 20;
const strip = (spec: AllocationSpec): unknown => JSON.parse(JSON.stringify(spec, (k, v) => (k === 'column' || k === 'valueColumn' ? undefined : v)));
const spec = (text: string, devices?: DeviceCapacity[]): unknown => strip(parseAllocation(text, devices === undefined ? {} : { devices }).spec);

function error(text: string, devices?: DeviceCapacity[]): AllocationError {
  try {
    parseAllocation(text, devices === undefined ? {} : { devices });
  } catch (e) {
    if (e instanceof AllocationError) return e;
    throw e;
  }
  throw new Error(`'${text}' parsed`);
}

describe('parseAllocation: the modes', () => {
  it('bytes: units are binary, t/tb is a terabyte, * takes the rest', () => {
    expect(spec('cuda:0,2.5gb;cpu,*')).toEqual({ mode: 'bytes', entries: [{ device: 'cuda:0', amount: 2.5 * GiB }, { device: 'cpu', amount: '*' }] });
    expect(spec('cpu,1tb;disk,*')).toEqual({ mode: 'bytes', entries: [{ device: 'cpu', amount: 2 ** 40 }, { device: 'disk', amount: '*' }] });
    expect(spec('cpu, 512 MB ; disk , *')).toEqual({ mode: 'bytes', entries: [{ device: 'cpu', amount: 512 * MiB }, { device: 'disk', amount: '*' }] });
    expect(spec('cpu,*')).toEqual({ mode: 'bytes', entries: [{ device: 'cpu', amount: '*' }] });
    expect(spec('cpu,100b;disk,*')).toEqual({ mode: 'bytes', entries: [{ device: 'cpu', amount: 100 }, { device: 'disk', amount: '*' }] });
  });

  it('ratio: percentages normalized later by their sum', () => {
    expect(spec('cuda:0,25%;cpu,75%')).toEqual({ mode: 'ratio', entries: [{ device: 'cuda:0', amount: 25 }, { device: 'cpu', amount: 75 }] });
  });

  it('fraction: a bare number is a share of the device', () => {
    expect(spec('cuda:0,0.5;cpu,1.0')).toEqual({ mode: 'fraction', entries: [{ device: 'cuda:0', amount: 0.5 }, { device: 'cpu', amount: 1 }] });
    expect(spec('hip:0,0.25;disk,*')).toEqual({ mode: 'fraction', entries: [{ device: 'hip:0', amount: 0.25 }, { device: 'disk', amount: '*' }] });
  });

  it('virtual VRAM: compute device, bytes moved off it (bare number = GiB), donors in order', () => {
    expect(spec('#cuda:0;4.0;cpu')).toEqual({ mode: 'virtual', compute: 'cuda:0', virtualBytes: 4 * GiB, donors: ['cpu'] });
    expect(spec('#cuda:1;512mb;cpu,disk')).toEqual({ mode: 'virtual', compute: 'cuda:1', virtualBytes: 512 * MiB, donors: ['cpu', 'disk'] });
    expect(spec('#cpu;2gb;disk')).toEqual({ mode: 'virtual', compute: 'cpu', virtualBytes: 2 * GiB, donors: ['disk'] });
  });

  it('an expert list followed by #device names the compute device (DisTorch node strings)', () => {
    const parsed = parseAllocation('cuda:0,2.5gb;cpu,*#cuda:0;0.0;cpu');
    expect(strip(parsed.spec)).toEqual({ mode: 'bytes', entries: [{ device: 'cuda:0', amount: 2.5 * GiB }, { device: 'cpu', amount: '*' }], compute: 'cuda:0' });
    expect(parsed.notes).toEqual([expect.stringMatching(/only names the compute device/)]);
    expect(spec('cpu,4mb;disk,*#cpu')).toMatchObject({ compute: 'cpu' });
  });

  it('device names with letters never switch the mode (mps is a device, not megabytes)', () => {
    expect(spec('mps,25%;cpu,75%')).toMatchObject({ mode: 'ratio' });
    expect(spec('mps,0.5;cpu,0.5')).toMatchObject({ mode: 'fraction' });
    expect(spec('xpu:0,0.5;cpu,*')).toMatchObject({ mode: 'fraction' });
    // mlu is not a ninodes device: the error is about the device, not about modes.
    expect(error('mlu:0,25%;cpu,75%').code).toBe('ALLOC_UNKNOWN_DEVICE');
  });

  it('device ids are canonicalized: cuda = cuda:0, rocm:1 = hip:1, any case', () => {
    expect(spec('CUDA,1gb;ROCM:1,2gb;Cpu,*')).toEqual({ mode: 'bytes', entries: [{ device: 'cuda:0', amount: GiB }, { device: 'hip:1', amount: 2 * GiB }, { device: 'cpu', amount: '*' }] });
  });

  it('columns point at each entry and amount', () => {
    const { spec: s } = parseAllocation('cuda:0,2.5gb; cpu,*');
    expect(s.mode === 'virtual' ? [] : s.entries.map((e) => [e.column, e.valueColumn])).toEqual([[1, 8], [15, 19]]);
  });
});

describe('parseAllocation reads the ComfyUI-MultiGPU strings as users paste them', () => {
  // The examples of its README and of its DisTorch2 nodes' log lines.
  it.each([
    ['cuda:0,2.5gb;cpu,*', { mode: 'bytes', entries: [{ device: 'cuda:0', amount: 2.5 * GiB }, { device: 'cpu', amount: '*' }] }],
    ['cuda:0,25%;cpu,75%', { mode: 'ratio', entries: [{ device: 'cuda:0', amount: 25 }, { device: 'cpu', amount: 75 }] }],
    ['cuda:0,8%;cuda:1,8%;cpu,4%', { mode: 'ratio', entries: [{ device: 'cuda:0', amount: 8 }, { device: 'cuda:1', amount: 8 }, { device: 'cpu', amount: 4 }] }],
    ['cuda:0,0.1;cpu,0.5', { mode: 'fraction', entries: [{ device: 'cuda:0', amount: 0.1 }, { device: 'cpu', amount: 0.5 }] }],
    ['cuda:0,0.0207;cuda:1,0.1273;cpu,0.0808', { mode: 'fraction', entries: [{ device: 'cuda:0', amount: 0.0207 }, { device: 'cuda:1', amount: 0.1273 }, { device: 'cpu', amount: 0.0808 }] }],
    ['cuda:1,4gb;cpu,*', { mode: 'bytes', entries: [{ device: 'cuda:1', amount: 4 * GiB }, { device: 'cpu', amount: '*' }] }],
    ['#cuda:0;4.0;cpu', { mode: 'virtual', compute: 'cuda:0', virtualBytes: 4 * GiB, donors: ['cpu'] }],
  ])('%s', (text, expected) => {
    expect(spec(text)).toEqual(expected);
  });

  it("'cuda:0,50%;cpu,*' (its expert_mode_allocations example): '*' in a ratio list is the rest of 100%, with a note", () => {
    const parsed = parseAllocation('cuda:0,50%;cpu,*');
    expect(strip(parsed.spec)).toEqual({ mode: 'ratio', entries: [{ device: 'cuda:0', amount: 50 }, { device: 'cpu', amount: 50 }] });
    expect(parsed.notes).toEqual([expect.stringMatching(/'\*' at column 16 is the rest of 100%: cpu takes 50%/)]);
    expect(spec('cuda:0,8%;cuda:1,12%;cpu,*')).toMatchObject({ entries: [{ amount: 8 }, { amount: 12 }, { device: 'cpu', amount: 80 }] });
    // Shares that reach 100% leave '*' nothing; it may still be written.
    expect(spec('cuda:0,100%;cpu,*')).toMatchObject({ entries: [{ amount: 100 }, { device: 'cpu', amount: 0 }] });
  });

  it("'cuda:0,500mb;cuda:1,3.0g;cpu,5gb*': 5gb* is the wildcard, with a note", () => {
    const parsed = parseAllocation('cuda:0,500mb;cuda:1,3.0g;cpu,5gb*');
    expect(strip(parsed.spec)).toEqual({ mode: 'bytes', entries: [{ device: 'cuda:0', amount: 500 * MiB }, { device: 'cuda:1', amount: 3 * GiB }, { device: 'cpu', amount: '*' }] });
    expect(parsed.notes).toEqual([expect.stringMatching(/'5gb\*' at column 30 reads as '\*'/)]);
  });
});

describe('parseAllocation errors: a code, the column and a suggestion', () => {
  const cases: [string, AllocationErrorCode, number, RegExp][] = [
    ['', 'ALLOC_EMPTY', 1, /e\.g\./],
    ['   ', 'ALLOC_EMPTY', 1, /cuda:0,2\.5gb;cpu,\*/],
    ['cuda:0,2gb;cpu', 'ALLOC_MISSING_COMMA', 15, /'cpu,<amount>'/],
    ['cuda:0;4.0;cpu', 'ALLOC_MISSING_COMMA', 7, /'#cuda:0;4gb;cpu'/],
    ['cuda:0,2gb;cpu,50%', 'ALLOC_MIXED_MODES', 16, /one mode/],
    ['cuda:0,0.5;cpu,2gb', 'ALLOC_MIXED_MODES', 16, /bytes \(2\.5gb\), ratio \(25%\) or fraction/],
    ['cuda:0,25%;cpu,0.75', 'ALLOC_MIXED_MODES', 16, /one mode/],
    ['cpu,1gb;cpu,*', 'ALLOC_DUPLICATE_DEVICE', 9, /merge/],
    ['cuda,1gb;cuda:0,*', 'ALLOC_DUPLICATE_DEVICE', 10, /merge/],
    ['cpu,-1gb;disk,*', 'ALLOC_NEGATIVE_VALUE', 5, /zero or more/],
    ['cpu,-5%;disk,5%', 'ALLOC_NEGATIVE_VALUE', 5, /zero or more/],
    ['cpu,lots;disk,*', 'ALLOC_INVALID_VALUE', 5, /amounts are bytes/],
    ['cpu,;disk,*', 'ALLOC_INVALID_VALUE', 5, /amounts are bytes/],
    ['cpu,2.5xb;disk,*', 'ALLOC_INVALID_VALUE', 8, /byte units/],
    ['cpu,0.5b;disk,*', 'ALLOC_INVALID_VALUE', 5, /larger unit/],
    ['cpu,2gb%;disk,*', 'ALLOC_INVALID_VALUE', 8, /not both/],
    ['cpu,2gb cuda:0,1gb', 'ALLOC_SYNTAX', 9, /separate entries with ';'/],
    ['cpu,2gb;;disk,*', 'ALLOC_SYNTAX', 9, /extra ';'/],
    ['cpu,2gb;disk,*&', 'ALLOC_SYNTAX', 15, /entries are/],
    ['2gb;cpu,*', 'ALLOC_SYNTAX', 1, /'<device>,<amount>'/],
    ['cpu,*;disk,*', 'ALLOC_WILDCARD_TWICE', 12, /only one device/],
    ['cuda:0,75%;cuda:1,50%;cpu,*', 'ALLOC_WILDCARD_IN_RATIO', 27, /lower the other shares to 100%/],
    ['cuda:0,0%;cpu,0%', 'ALLOC_RATIOS_ZERO', 8, /above 0%/],
    ['cuda:0,1.5;cpu,*', 'ALLOC_VALUE_OUT_OF_RANGE', 8, /'1\.5gb'.*'1\.5%'/],
    ['gpu:0,1gb;cpu,*', 'ALLOC_UNKNOWN_DEVICE', 1, /devices here/],
    ['cdua:0,1gb;cpu,*', 'ALLOC_UNKNOWN_DEVICE', 1, /did you mean 'cuda:0'/],
    ['mlu:0,1gb;cpu,*', 'ALLOC_UNKNOWN_DEVICE', 1, /cpu, disk, cuda:N/],
    ['#disk;4gb;cpu', 'ALLOC_DISK_COMPUTE', 2, /disk is a donor/],
    ['#cuda:0;4gb;cuda:0', 'ALLOC_DUPLICATE_DEVICE', 13, /not the compute device/],
    ['#cuda:0;4gb;cpu,cpu', 'ALLOC_DUPLICATE_DEVICE', 17, /each donor once/],
    ['#cuda:0;-4;cpu', 'ALLOC_NEGATIVE_VALUE', 9, /bytes moved off/],
    ['#cuda:0;4gb', 'ALLOC_SYNTAX', 9, /'#cuda:0;4gb;cpu'/],
    ['#cuda:0', 'ALLOC_SYNTAX', 8, /at least one donor|'#cuda:0;4gb;cpu'/],
  ];
  it.each(cases)('%j -> %s at column %i', (text, code, column, hint) => {
    const e = error(text);
    expect(e.code).toBe(code);
    expect(e.column).toBe(column);
    expect(e.hint).toMatch(hint);
    expect(e.message).toContain(`column ${column}`);
    // The caret sits under the column.
    expect(e.message.split('\n').at(-1)).toBe(`  ${' '.repeat(column - 1)}^`);
  });

  const w7900: DeviceCapacity[] = [
    { id: 'cpu', totalBytes: 256 * GiB },
    { id: 'hip:0', totalBytes: 48 * GiB },
    { id: 'hip:1', totalBytes: 48 * GiB },
  ];

  it('devices absent from the machine are errors listing what is there', () => {
    const e = error('cuda:0,2gb;cpu,*', w7900);
    expect([e.code, e.column]).toEqual(['ALLOC_UNKNOWN_DEVICE', 1]);
    expect(e.message).toMatch(/not present on this machine/);
    expect(e.hint).toMatch(/cpu, hip:0, hip:1, disk/);
    // disk is always a valid donor, even when the enumeration left it out.
    expect(spec('hip:0,2gb;disk,*', w7900)).toMatchObject({ mode: 'bytes' });
  });

  it('amounts above a device memory are errors with the most it can take', () => {
    const e = error('hip:0,2gb;hip:1,50gb;cpu,*', w7900);
    expect([e.code, e.column]).toEqual(['ALLOC_EXCEEDS_DEVICE', 17]);
    expect(e.hint).toMatch(/'hip:1,49152mb'/);
    expect(spec('hip:0,48gb;cpu,*', w7900)).toMatchObject({ entries: [{ amount: 48 * GiB }, { amount: '*' }] });
    const v = error('#hip:0;600gb;cpu,hip:1', w7900);
    expect([v.code, v.column]).toEqual(['ALLOC_EXCEEDS_DEVICE', 8]);
    expect(v.hint).toMatch(/add 'disk'/);
    expect(spec('#hip:0;600gb;cpu,disk', w7900)).toMatchObject({ mode: 'virtual', virtualBytes: 600 * GiB });
  });
});

describe('formatAllocation', () => {
  it.each([
    ['cuda:0,2.5gb;cpu,*', 'cuda:0,2.5gb;cpu,*'],
    ['cuda:0,2560MiB;cpu,*', 'cuda:0,2.5gb;cpu,*'],
    ['cpu,4194304b;disk,*', 'cpu,4mb;disk,*'],
    ['cpu,1000b;disk,*', 'cpu,1000b;disk,*'],
    ['cuda:0,25%;cpu,75%', 'cuda:0,25%;cpu,75%'],
    ['cuda:0,1;cpu,0.5', 'cuda:0,1.0;cpu,0.5'],
    ['#cuda:0;4.0;cpu', '#cuda:0;4gb;cpu'],
    ['cuda:0,500mb;cuda:1,3.0g;cpu,5gb*', 'cuda:0,500mb;cuda:1,3gb;cpu,*'],
    ['cpu,4mb;disk,*#cpu;0;disk', 'cpu,4mb;disk,*#cpu'],
  ])('%s -> %s', (text, canonical) => {
    expect(formatAllocation(parseAllocation(text).spec)).toBe(canonical);
  });

  it('plainDecimal never writes an exponent and keeps the value', () => {
    expect([plainDecimal(1e-7), plainDecimal(1.5e-7), plainDecimal(1e21), plainDecimal(1.25e22), plainDecimal(0.5)]).toEqual(['0.0000001', '0.00000015', '1000000000000000000000', '12500000000000000000000', '0.5']);
    expect(Number(plainDecimal(5e-324))).toBe(5e-324);
  });

  const device = fc.oneof(
    fc.constantFrom('cpu', 'disk', 'mps'),
    fc.tuple(fc.constantFrom('cuda', 'hip', 'xpu'), fc.integer({ min: 0, max: 15 })).map(([k, i]) => `${k}:${i}`),
  );
  const devices = fc.uniqueArray(device, { minLength: 1, maxLength: 6 });
  const withWildcard = <T>(amounts: fc.Arbitrary<T>, n: number): fc.Arbitrary<(T | '*')[]> =>
    fc.tuple(fc.array(amounts, { minLength: n, maxLength: n }), fc.option(fc.integer({ min: 0, max: n - 1 }), { nil: undefined })).map(([a, w]) => a.map((x, i) => (i === w ? '*' : x)));
  const compute = fc.option(device.filter((d) => d !== 'disk'), { nil: undefined });
  const expert = devices.chain((ids) =>
    fc.oneof(
      fc.tuple(withWildcard(fc.integer({ min: 0, max: Number.MAX_SAFE_INTEGER }), ids.length), compute).map(([a, c]) => ({ mode: 'bytes' as const, entries: ids.map((device, i) => ({ device, amount: a[i] as number | '*' })), ...(c === undefined ? {} : { compute: c }) })),
      fc.tuple(withWildcard(fc.double({ min: 0, max: 1, noNaN: true }), ids.length).filter((a) => a.some((x) => x !== '*')), compute).map(([a, c]) => ({ mode: 'fraction' as const, entries: ids.map((device, i) => ({ device, amount: a[i] as number | '*' })), ...(c === undefined ? {} : { compute: c }) })),
      fc.tuple(fc.array(fc.double({ min: 0, max: 1e6, noNaN: true }), { minLength: ids.length, maxLength: ids.length }).filter((a) => a.some((x) => x > 0)), compute).map(([a, c]) => ({ mode: 'ratio' as const, entries: ids.map((device, i) => ({ device, amount: a[i] as number })), ...(c === undefined ? {} : { compute: c }) })),
    ),
  );
  const virtual = fc
    .tuple(device.filter((d) => d !== 'disk'), fc.integer({ min: 0, max: Number.MAX_SAFE_INTEGER }), fc.uniqueArray(device, { minLength: 1, maxLength: 4 }))
    .filter(([c, , d]) => !d.includes(c))
    .map(([c, bytes, donors]) => ({ mode: 'virtual' as const, compute: c, virtualBytes: bytes, donors }));

  it('random valid plans round-trip through the string form', () => {
    fc.assert(
      fc.property(fc.oneof(expert, virtual), (s) => {
        const valid = validateAllocationSpec(s);
        const text = formatAllocation(valid);
        expect(strip(parseAllocation(text).spec)).toEqual(strip(valid));
        // And the string itself is a fixed point.
        expect(formatAllocation(parseAllocation(text).spec)).toBe(text);
      }),
      { numRuns: 500 },
    );
  });

  it('validateAllocationSpec rejects what the grammar rejects', () => {
    expect(() => validateAllocationSpec({ mode: 'bytes', entries: [{ device: 'cpu', amount: '*' }, { device: 'disk', amount: '*' }] })).toThrowError(/'\*' may appear once/);
    expect(() => validateAllocationSpec({ mode: 'fraction', entries: [{ device: 'cpu', amount: 1.5 }] })).toThrowError(/entries\.0\.amount/);
    expect(() => validateAllocationSpec({ mode: 'fraction', entries: [{ device: 'cpu', amount: '*' }] })).toThrowError(/only '\*' is a bytes allocation/);
    expect(() => validateAllocationSpec({ mode: 'virtual', compute: 'disk', virtualBytes: 1, donors: ['cpu'] })).toThrowError(/disk cannot compute/);
    expect(() => validateAllocationSpec({ mode: 'bytes', entries: [{ device: 'gpu', amount: 1 }] })).toThrowError(/canonical device id/);
  });
});
