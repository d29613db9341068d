// The one byte formatter of the project (device is the lowest package that prints sizes). Its
// output reads back through @ninodes/memory's byte-size grammar (`parseByteSize`) within rounding.
const UNITS = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'] as const;

/**
 * Binary units with at most `digits` decimals, trailing zeros dropped: `0 B`, `512 B`, `1.5 KiB`,
 * `22.35 GiB`, `-3 MiB`; `unknown` for null, undefined and non-finite values (unprobed figures).
 */
export function formatBytes(bytes: number | null | undefined, digits = 2): string {
  if (bytes === null || bytes === undefined || !Number.isFinite(bytes)) return 'unknown';
  const sign = bytes < 0 ? '-' : '';
  let value = Math.abs(bytes);
  let unit = 0;
  while (value >= 1024 && unit < UNITS.length - 1) {
    value /= 1024;
    unit += 1;
  }
  const text = unit === 0 ? String(Math.round(value)) : String(Number(value.toFixed(digits)));
  return `${sign}${text} ${UNITS[unit]}`;
}
