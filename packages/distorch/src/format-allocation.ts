import type { AllocationSpec } from './allocation-spec.js';

const UNITS = ['b', 'kb', 'mb', 'gb', 'tb'] as const;

/**
 * Bytes in the shortest exact form with a unit (`2.5gb`, `4mb`, `1000b`): dividing by a power of
 * two is exact in binary floating point, so the parser reads back exactly the same byte count.
 */
export function formatAllocationBytes(bytes: number): string {
  let best = `${bytes}b`;
  for (let p = 1; p < UNITS.length; p++) {
    const text = `${String(bytes / 1024 ** p)}${UNITS[p]}`;
    if (!text.includes('e') && text.length < best.length) best = text;
  }
  return best;
}

/**
 * A number as a plain decimal (`0.0000001`, never `1e-7`): the grammar has no exponents. The digits
 * are those of JavaScript's shortest round-trip form, only moved, so reading it back gives the same double.
 */
export function plainDecimal(x: number): string {
  const text = String(x);
  const m = /^(\d)(?:\.(\d+))?e([+-]\d+)$/.exec(text);
  if (m === null) return text;
  const digits = `${m[1]}${m[2] ?? ''}`;
  const point = 1 + Number(m[3]); // position of the decimal point within digits
  if (point <= 0) return `0.${'0'.repeat(-point)}${digits}`;
  if (point >= digits.length) return `${digits}${'0'.repeat(point - digits.length)}`;
  return `${digits.slice(0, point)}.${digits.slice(point)}`;
}

function amountText(mode: 'bytes' | 'ratio' | 'fraction', amount: number | '*'): string {
  if (amount === '*') return '*';
  if (mode === 'bytes') return formatAllocationBytes(amount);
  if (mode === 'ratio') return `${plainDecimal(amount)}%`;
  // A fraction always shows a decimal point, so no reader takes `1` for one byte.
  return Number.isInteger(amount) ? amount.toFixed(1) : plainDecimal(amount);
}

/** The canonical string of a spec; parseAllocation(formatAllocation(s)).spec equals s (columns aside). */
export function formatAllocation(spec: AllocationSpec): string {
  if (spec.mode === 'virtual') return `#${spec.compute};${formatAllocationBytes(spec.virtualBytes)};${spec.donors.join(',')}`;
  const list = spec.entries.map((e) => `${e.device},${amountText(spec.mode, e.amount)}`).join(';');
  return spec.compute === undefined ? list : `${list}#${spec.compute}`;
}
