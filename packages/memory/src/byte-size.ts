// The byte-size grammar used across ninodes:
//   size   := ws* number ws* unit? ws*
//   number := digits ('.' digits)?
//   unit   := b | k | kb | kib | m | mb | mib | g | gb | gib | t | tb | tib | p | pb | pib   (any case)
// All units are binary (k = 1024). `1tb` is a terabyte (2^40 bytes), never "1 byte" as some tools
// read it. Fractions are allowed with a unit and rounded down to whole bytes.
import { MemoryError } from './error-codes.js';

const POWERS: Record<string, number> = { b: 0, k: 1, m: 2, g: 3, t: 4, p: 5 };

function unitPower(unit: string): number | undefined {
  const u = unit.toLowerCase();
  if (u === 'b') return 0;
  const m = /^([kmgtp])(b|ib)?$/.exec(u);
  return m === null ? undefined : POWERS[m[1] as string];
}

function bad(text: string, position: number, why: string): never {
  throw new MemoryError('BYTE_SIZE_INVALID', `invalid byte size '${text}' at position ${position}: ${why}`, {
    value: text,
    where: `position ${position}`,
    hint: "write a number with an optional binary unit: 512, 64k, 1.5m, 2.5gb, 3gib, 1tb",
  });
}

/** Parses `2.5g`, `3GiB`, `512` ... into bytes (binary units). Throws BYTE_SIZE_INVALID / BYTE_SIZE_TOO_LARGE. */
export function parseByteSize(text: string): number {
  if (typeof text !== 'string') bad(String(text), 0, 'not a string');
  let i = 0;
  const ws = (): void => {
    while (i < text.length && /\s/.test(text[i] as string)) i++;
  };
  ws();
  const numStart = i;
  while (i < text.length && /[0-9]/.test(text[i] as string)) i++;
  if (i === numStart) bad(text, i, i < text.length ? `expected a digit, found '${text[i]}'` : 'expected a number');
  if (text[i] === '.') {
    i++;
    const fracStart = i;
    while (i < text.length && /[0-9]/.test(text[i] as string)) i++;
    if (i === fracStart) bad(text, i, 'expected a digit after the decimal point');
  }
  const number = Number(text.slice(numStart, i));
  ws();
  const unitStart = i;
  while (i < text.length && /[a-z]/i.test(text[i] as string)) i++;
  const unit = text.slice(unitStart, i);
  ws();
  if (i < text.length) bad(text, i, `unexpected '${text[i]}'`);
  const power = unit === '' ? 0 : unitPower(unit);
  if (power === undefined) bad(text, unitStart, `unknown unit '${unit}' (b, k, kb, kib, m, mb, mib, g, gb, gib, t, tb, tib, p, pb, pib)`);
  if (power === 0 && !Number.isInteger(number)) bad(text, numStart, 'a byte count must be a whole number');
  const bytes = Math.floor(number * 1024 ** power);
  if (!Number.isSafeInteger(bytes)) {
    throw new MemoryError('BYTE_SIZE_TOO_LARGE', `byte size '${text}' exceeds 2^53 bytes`, { value: text, where: 'position 0' });
  }
  return bytes;
}
