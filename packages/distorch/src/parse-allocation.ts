import { DEVICE_KINDS, formatBytes, formatDeviceId, parseDeviceId, tryParseDeviceId } from '@ninodes/device';
import { isNinodesError } from '@ninodes/kernels';
import { parseByteSize } from '@ninodes/memory';
import { AllocationError } from './allocation-error.js';
import { type AllocationSpec, allocationSpecSchema } from './allocation-spec.js';
import { type Token, tokenize } from './allocation-tokens.js';

/*
 * The allocation grammar (whitespace between tokens is ignored; device ids and units are
 * case-insensitive):
 *
 *   allocation := expert ('#' virtual)? | '#' virtual
 *   expert     := entry (';' entry)* ';'?
 *   entry      := device ',' amount
 *   amount     := '*' | number unit '*'? | number '%' | number '*'?   ('*' in a ratio list: the rest of 100%)
 *   virtual    := device (';' size (';' device (',' device)*)?)?
 *   size       := number unit?              (no unit: GiB, as DisTorch's virtual_vram_gb)
 *
 * The mode is decided by the amounts alone (a unit: bytes; '%': ratio; a bare number: fraction),
 * never by the letters of a device name, so `mps,25%;cpu,75%` is a ratio. Units are binary and
 * include t/tb (`1tb` is 2^40 bytes). DisTorch's `5gb*` reads as `*` (the amount before the star is
 * not used, as in DisTorch), with a note. When an expert list is followed by `#device;...`, the
 * device after '#' is the compute device and the rest of that part is ignored (DisTorch's nodes
 * send `<expert>#<compute>;<virtual_vram_gb>;<donors>` and ignore the virtual part when the expert
 * part is set).
 */

/** What the parser checks device ids and capacities against. */
export interface DeviceCapacity {
  /** Canonical id: `cpu`, `cuda:0`, `hip:1`. */
  readonly id: string;
  /** Total memory; null when unknown (no capacity check then). */
  readonly totalBytes: number | null;
}

export interface ParseAllocationOptions {
  /** Devices of the machine being planned for: ids outside it and amounts above a device's memory are errors. `disk` is always allowed. */
  devices?: readonly DeviceCapacity[];
}

export interface ParsedAllocation {
  readonly spec: AllocationSpec;
  /** Things that parsed but deserve a word (DisTorch forms read in their DisTorch meaning). */
  readonly notes: readonly string[];
}

type ValueClass = 'bytes' | 'ratio' | 'fraction' | 'wildcard';

interface Value {
  readonly cls: ValueClass;
  readonly amount: number;
  readonly column: number;
  readonly text: string;
}

interface RawEntry {
  readonly device: string;
  readonly deviceColumn: number;
  readonly value: Value;
}

const MODE_EXAMPLE: Record<Exclude<ValueClass, 'wildcard'>, string> = { bytes: '2.5gb', ratio: '25%', fraction: '0.5' };
const GIB = 1024 ** 3;
const UNIT = /^(b|[kmgtp](b|ib)?)$/i;

// Edit distance with adjacent transpositions (optimal string alignment): `cdua` is one edit from `cuda`.
function editDistance(a: string, b: string): number {
  const d: number[][] = Array.from({ length: a.length + 1 }, (_, i) => Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)));
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let v = Math.min((d[i - 1]?.[j] as number) + 1, (d[i]?.[j - 1] as number) + 1, (d[i - 1]?.[j - 1] as number) + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) v = Math.min(v, (d[i - 2]?.[j - 2] as number) + 1);
      (d[i] as number[])[j] = v;
    }
  }
  return d[a.length]?.[b.length] as number;
}

class Parser {
  private pos = 0;
  readonly notes: string[] = [];
  private readonly tokens: Token[];

  constructor(
    private readonly text: string,
    private readonly options: ParseAllocationOptions,
  ) {
    this.tokens = tokenize(text);
  }

  private peek(offset = 0): Token {
    return this.tokens[Math.min(this.pos + offset, this.tokens.length - 1)] as Token;
  }

  private next(): Token {
    const t = this.peek();
    if (t.kind !== 'end') this.pos++;
    return t;
  }

  private fail(code: ConstructorParameters<typeof AllocationError>[0], column: number, why: string, value: unknown, hint: string): never {
    throw new AllocationError(code, this.text, column, why, { value, hint });
  }

  private available(): string[] | undefined {
    const devices = this.options.devices;
    if (devices === undefined) return undefined;
    const ids = devices.map((d) => d.id);
    return ids.includes('disk') ? ids : [...ids, 'disk'];
  }

  private device(token: Token): string {
    if (token.kind !== 'word') {
      this.fail('ALLOC_SYNTAX', token.column, token.kind === 'end' ? 'expected a device id, found the end' : `expected a device id, found '${token.text}'`, token.text, "each entry starts with a device id: cpu, disk, cuda:0, hip:1, xpu:0, mps");
    }
    const available = this.available();
    try {
      return formatDeviceId(parseDeviceId(token.text, available === undefined ? {} : { available }));
    } catch (error) {
      if (!isNinodesError(error)) throw error;
      const word = (/^[a-z_]+/i.exec(token.text)?.[0] ?? token.text).toLowerCase();
      const known = [...DEVICE_KINDS, 'rocm'];
      const nearest = known.map((k) => ({ k, d: editDistance(word, k) })).sort((x, y) => x.d - y.d)[0];
      const suffix = token.text.includes(':') ? token.text.slice(token.text.indexOf(':')) : '';
      const guess = nearest !== undefined && nearest.d <= 2 && nearest.k !== word ? ` did you mean '${nearest.k}${suffix}'?` : '';
      const present = available === undefined ? 'cpu, disk, cuda:N, hip:N, xpu:N, mps' : available.join(', ');
      const why = error.code === 'DEVICE_NOT_FOUND' ? `device '${token.text}' is not present on this machine` : `unknown device '${token.text}'`;
      return this.fail('ALLOC_UNKNOWN_DEVICE', token.column, why, token.text, `${guess === '' ? '' : `${guess.trim()} `}devices here: ${present}`);
    }
  }

  private value(): Value {
    const first = this.peek();
    if (first.kind === 'sign') {
      this.next();
      const after = this.peek();
      if (first.text === '-' && (after.kind === 'number' || after.kind === 'star')) {
        this.fail('ALLOC_NEGATIVE_VALUE', first.column, `negative amount '-${after.text}'`, `-${after.text}`, 'amounts are zero or more: 2.5gb, 25%, 0.5, or * for the rest');
      }
      this.fail('ALLOC_INVALID_VALUE', first.column, `unexpected '${first.text}' before an amount`, first.text, 'write an amount without a sign: 2.5gb, 25%, 0.5 or *');
    }
    if (first.kind === 'star') {
      this.next();
      return { cls: 'wildcard', amount: 0, column: first.column, text: '*' };
    }
    if (first.kind !== 'number') {
      const shown = first.kind === 'end' ? 'nothing' : `'${first.text}'`;
      this.fail('ALLOC_INVALID_VALUE', first.column, `expected an amount, found ${shown}`, first.text, 'amounts are bytes (2.5gb, 512mb, 1tb), a ratio (25%), a fraction of the device (0.5), or * for the rest');
    }
    this.next();
    const number = Number(first.text);
    let cls: ValueClass = 'fraction';
    let amount = number;
    let text = first.text;
    const unit = this.peek();
    if (unit.kind === 'word' && tryParseDeviceId(unit.text) !== undefined) {
      this.fail('ALLOC_SYNTAX', unit.column, `missing ';' before '${unit.text}'`, unit.text, "separate entries with ';': 'cuda:0,2.5gb;cpu,*'");
    }
    if (unit.kind === 'word') {
      this.next();
      text = `${first.text}${unit.text}`;
      if (!UNIT.test(unit.text)) {
        this.fail('ALLOC_INVALID_VALUE', unit.column, `unknown unit '${unit.text}'`, text, 'byte units are b, kb, mb, gb, tb (k, m, g, t, kib, mib, gib, tib also read); binary: 1gb = 2^30 bytes');
      }
      try {
        amount = parseByteSize(text);
      } catch (error) {
        if (!isNinodesError(error)) throw error;
        this.fail('ALLOC_INVALID_VALUE', first.column, `'${text}' is not a whole number of bytes within 2^53`, text, 'use a larger unit for fractions (0.5kb, not 0.5b)');
      }
      cls = 'bytes';
    }
    if (this.peek().kind === 'percent') {
      const p = this.next();
      if (cls === 'bytes') this.fail('ALLOC_INVALID_VALUE', p.column, `'${text}%' has both a unit and '%'`, `${text}%`, 'write bytes (2.5gb) or a ratio (25%), not both');
      cls = 'ratio';
      text = `${text}%`;
    }
    if (this.peek().kind === 'star') {
      const s = this.next();
      if (cls === 'ratio') this.fail('ALLOC_WILDCARD_IN_RATIO', s.column, `'${text}*' mixes a ratio and '*'`, `${text}*`, "ratios already cover the whole model; drop the '*'");
      this.notes.push(`'${text}*' at column ${first.column} reads as '*' (the rest), as in DisTorch: the amount before '*' is not used`);
      return { cls: 'wildcard', amount: 0, column: first.column, text: `${text}*` };
    }
    const after = this.peek();
    if (after.kind === 'word' && tryParseDeviceId(after.text) !== undefined) {
      this.fail('ALLOC_SYNTAX', after.column, `missing ';' before '${after.text}'`, after.text, "separate entries with ';': 'cuda:0,2.5gb;cpu,*'");
    }
    if (after.kind === 'word' || after.kind === 'number') {
      this.fail('ALLOC_INVALID_VALUE', after.column, `unexpected '${after.text}' after the amount '${text}'`, after.text, "end each entry after its amount; separate entries with ';'");
    }
    return { cls, amount, column: first.column, text };
  }

  private entry(): RawEntry {
    const deviceToken = this.peek();
    if (deviceToken.kind === 'semi') {
      this.fail('ALLOC_SYNTAX', deviceToken.column, "empty entry (two ';' in a row)", ';', "remove the extra ';'");
    }
    if (deviceToken.kind === 'number' || deviceToken.kind === 'star' || deviceToken.kind === 'sign') {
      this.fail('ALLOC_SYNTAX', deviceToken.column, `expected a device id, found '${deviceToken.text}'`, deviceToken.text, "each entry is '<device>,<amount>', e.g. 'cpu,*'; for the virtual-VRAM form put '#' first: '#cuda:0;4gb;cpu'");
    }
    const device = this.device(this.next());
    const comma = this.peek();
    if (comma.kind !== 'comma') {
      const end = deviceToken.column + deviceToken.text.length;
      this.fail('ALLOC_MISSING_COMMA', end, `entry '${deviceToken.text}' has no ',' and no amount`, deviceToken.text, `write '${deviceToken.text},<amount>' (e.g. '${deviceToken.text},*'); for the virtual-VRAM form put '#' first: '#${deviceToken.text};4gb;cpu'`);
    }
    this.next();
    return { device, deviceColumn: deviceToken.column, value: this.value() };
  }

  private expert(): RawEntry[] {
    const entries: RawEntry[] = [this.entry()];
    while (this.peek().kind === 'semi') {
      this.next();
      const t = this.peek();
      if (t.kind === 'end' || t.kind === 'hash') break; // a trailing ';' is harmless
      entries.push(this.entry());
    }
    const t = this.peek();
    if (t.kind !== 'end' && t.kind !== 'hash') {
      this.fail('ALLOC_SYNTAX', t.column, `unexpected '${t.text}'`, t.text, "separate entries with ';': 'cuda:0,2.5gb;cpu,*'");
    }
    return entries;
  }

  private size(): { bytes: number; column: number } {
    const t = this.peek();
    if (t.kind === 'sign' && t.text === '-') this.fail('ALLOC_NEGATIVE_VALUE', t.column, 'negative virtual VRAM amount', t.text, 'the virtual amount is bytes moved off the compute device: 4gb, 4.0 (GiB) or 0');
    if (t.kind !== 'number') this.fail('ALLOC_INVALID_VALUE', t.column, `expected the virtual VRAM amount, found ${t.kind === 'end' ? 'nothing' : `'${t.text}'`}`, t.text, "write '#<compute>;<amount>;<donors>', e.g. '#cuda:0;4gb;cpu' (a bare number is GiB: '#cuda:0;4.0;cpu')");
    this.next();
    const unit = this.peek();
    if (unit.kind === 'word') {
      this.next();
      try {
        return { bytes: parseByteSize(`${t.text}${unit.text}`), column: t.column };
      } catch (error) {
        if (!isNinodesError(error)) throw error;
        this.fail('ALLOC_INVALID_VALUE', unit.column, `unknown unit '${unit.text}'`, `${t.text}${unit.text}`, 'byte units are b, kb, mb, gb, tb; a bare number is GiB');
      }
    }
    return { bytes: Math.floor(Number(t.text) * GIB), column: t.column };
  }

  parse(): AllocationSpec {
    const first = this.peek();
    if (first.kind === 'end') {
      this.fail('ALLOC_EMPTY', 1, 'the allocation string is empty', this.text, "e.g. 'cuda:0,2.5gb;cpu,*', 'cpu,4gb;disk,*', 'cuda:0,25%;cpu,75%' or '#cuda:0;4gb;cpu'");
    }
    const entries = first.kind === 'hash' ? undefined : this.expert();
    let compute: { id: string; column: number } | undefined;
    let virtual: { bytes: number; column: number; donors: { id: string; column: number }[] } | undefined;
    if (this.peek().kind === 'hash') {
      this.next();
      const c = this.peek();
      const id = this.device(this.next());
      if (id === 'disk') this.fail('ALLOC_DISK_COMPUTE', c.column, "'disk' cannot be the compute device", c.text, "name the device that computes (cuda:0, hip:0, cpu); disk is a donor: '#cpu;4gb;disk'");
      compute = { id, column: c.column };
      if (this.peek().kind === 'semi') {
        this.next();
        const size = this.size();
        const donors: { id: string; column: number }[] = [];
        if (this.peek().kind === 'semi') {
          this.next();
          do {
            const d = this.peek();
            donors.push({ id: this.device(this.next()), column: d.column });
          } while (this.peek().kind === 'comma' && this.next());
        }
        virtual = { ...size, donors };
      }
      const t = this.peek();
      if (t.kind !== 'end') this.fail('ALLOC_SYNTAX', t.column, `unexpected '${t.text}'`, t.text, "the part after '#' is '<compute>;<amount>;<donor>,<donor>', e.g. '#cuda:0;4gb;cpu,disk'");
    }
    if (entries !== undefined) {
      if (virtual !== undefined && (virtual.bytes > 0 || virtual.donors.length > 0)) {
        this.notes.push(`the virtual-VRAM part after '#' only names the compute device here: the expert list before it decides the placement (as in DisTorch)`);
      }
      return this.expertSpec(entries, compute?.id);
    }
    return this.virtualSpec(compute as { id: string; column: number }, virtual);
  }

  private expertSpec(entries: RawEntry[], compute: string | undefined): AllocationSpec {
    const seen = new Map<string, RawEntry>();
    for (const e of entries) {
      const prior = seen.get(e.device);
      if (prior !== undefined) {
        this.fail('ALLOC_DUPLICATE_DEVICE', e.deviceColumn, `device '${e.device}' appears twice (first at column ${prior.deviceColumn})`, e.device, `give each device one entry: merge the two amounts into one '${e.device},...'`);
      }
      seen.set(e.device, e);
    }
    const decided = entries.find((e) => e.value.cls !== 'wildcard');
    const mode = decided === undefined ? 'bytes' : (decided.value.cls as Exclude<ValueClass, 'wildcard'>);
    for (const e of entries) {
      const cls = e.value.cls;
      if (cls !== 'wildcard' && cls !== mode && decided !== undefined) {
        this.fail('ALLOC_MIXED_MODES', e.value.column, `'${e.value.text}' is a ${cls} amount but '${decided.value.text}' (column ${decided.value.column}) made this a ${mode} allocation`, e.value.text, `use one mode for every entry: bytes (${MODE_EXAMPLE.bytes}), ratio (${MODE_EXAMPLE.ratio}) or fraction of the device (${MODE_EXAMPLE.fraction})`);
      }
    }
    const wildcards = entries.filter((e) => e.value.cls === 'wildcard');
    if (wildcards.length > 1) {
      const w = wildcards[1] as RawEntry;
      this.fail('ALLOC_WILDCARD_TWICE', w.value.column, `a second '*' (the first is on '${(wildcards[0] as RawEntry).device}')`, '*', "only one device can take the rest; give the others amounts");
    }
    // A superset of DisTorch's grammar: in a ratio allocation '*' is the rest of 100%
    // (ComfyUI-MultiGPU's own documentation shows `cuda:0,50%;cpu,*`).
    let rest = 0;
    const w = wildcards[0];
    if (mode === 'ratio' && w !== undefined) {
      const given = entries.reduce((a, e) => a + (e.value.cls === 'ratio' ? e.value.amount : 0), 0);
      if (given > 100) {
        this.fail('ALLOC_WILDCARD_IN_RATIO', w.value.column, `'*' takes the rest of 100%, but the other shares already sum to ${given}%`, '*', `lower the other shares to 100% in all, or give '${w.device}' a percentage`);
      }
      rest = 100 - given;
      this.notes.push(`'*' at column ${w.value.column} is the rest of 100%: ${w.device} takes ${Number(rest.toPrecision(12))}%`);
    }
    if (mode === 'fraction') {
      for (const e of entries) {
        if (e.value.cls === 'fraction' && e.value.amount > 1) {
          this.fail('ALLOC_VALUE_OUT_OF_RANGE', e.value.column, `fraction ${e.value.text} is more than the whole device`, e.value.text, `a bare number is a share of the device's memory (0 to 1); for bytes add a unit ('${e.value.text}gb'), for a ratio add '%' ('${e.value.text}%')`);
        }
      }
    }
    if (mode === 'ratio' && entries.every((e) => e.value.amount === 0)) {
      this.fail('ALLOC_RATIOS_ZERO', (entries[0] as RawEntry).value.column, 'every ratio is zero', this.text, 'give at least one device a share above 0%');
    }
    this.checkCapacities(entries, mode);
    const spec = {
      mode,
      entries: entries.map((e) => ({ device: e.device, amount: e.value.cls !== 'wildcard' ? e.value.amount : mode === 'ratio' ? rest : ('*' as const), column: e.deviceColumn, valueColumn: e.value.column })),
      ...(compute === undefined ? {} : { compute }),
    };
    return allocationSpecSchema.parse(spec);
  }

  private capacity(id: string): number | null {
    if (id === 'disk') return null; // the mapped checkpoint: never the limit
    return this.options.devices?.find((d) => d.id === id)?.totalBytes ?? null;
  }

  private checkCapacities(entries: RawEntry[], mode: string): void {
    if (mode !== 'bytes') return;
    for (const e of entries) {
      const cap = this.capacity(e.device);
      if (e.value.cls === 'bytes' && cap !== null && e.value.amount > cap) {
        const most = Math.floor(cap / 1024 ** 2);
        this.fail('ALLOC_EXCEEDS_DEVICE', e.value.column, `${e.value.text} is more than ${e.device}'s ${formatBytes(cap)}`, e.value.text, `give ${e.device} at most ${most}mb ('${e.device},${most}mb') and the rest to another device with '*', e.g. 'cpu,*' or 'disk,*'`);
      }
    }
  }

  private virtualSpec(compute: { id: string; column: number }, virtual: { bytes: number; column: number; donors: { id: string; column: number }[] } | undefined): AllocationSpec {
    if (virtual === undefined || virtual.donors.length === 0) {
      const column = virtual === undefined ? this.text.length + 1 : virtual.column;
      this.fail('ALLOC_SYNTAX', column, 'the virtual-VRAM form needs an amount and at least one donor', this.text, `write '#${compute.id};<amount>;<donor>', e.g. '#${compute.id};4gb;cpu' or '#${compute.id};4gb;cpu,disk'`);
    }
    const seen = new Set<string>([compute.id]);
    for (const d of virtual.donors) {
      if (seen.has(d.id)) {
        this.fail('ALLOC_DUPLICATE_DEVICE', d.column, d.id === compute.id ? `the compute device '${d.id}' cannot donate to itself` : `donor '${d.id}' appears twice`, d.id, 'list each donor once, not the compute device');
      }
      seen.add(d.id);
    }
    const caps = virtual.donors.map((d) => (d.id === 'disk' ? null : this.capacity(d.id)));
    if (this.options.devices !== undefined && caps.every((c) => c !== null)) {
      const total = (caps as number[]).reduce((a, b) => a + b, 0);
      if (virtual.bytes > total) {
        this.fail('ALLOC_EXCEEDS_DEVICE', virtual.column, `the donors hold ${formatBytes(total)}, less than the ${formatBytes(virtual.bytes)} asked for`, virtual.bytes, `ask for at most ${Math.floor(total / 1024 ** 2)}mb, or add 'disk' as the last donor: '#${compute.id};...;${virtual.donors.map((d) => d.id).join(',')},disk'`);
      }
    }
    return allocationSpecSchema.parse({ mode: 'virtual', compute: compute.id, virtualBytes: virtual.bytes, donors: virtual.donors.map((d) => d.id), column: compute.column, valueColumn: virtual.column });
  }
}

/** Parses an allocation string (see the grammar above). Throws AllocationError with the column. */
export function parseAllocation(text: string, options: ParseAllocationOptions = {}): ParsedAllocation {
  if (typeof text !== 'string') throw new AllocationError('ALLOC_EMPTY', String(text), 1, 'the allocation is not a string', { value: text, hint: "e.g. 'cuda:0,2.5gb;cpu,*'" });
  const parser = new Parser(text, options);
  const spec = parser.parse();
  return { spec, notes: parser.notes };
}
