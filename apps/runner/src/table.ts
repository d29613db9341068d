import { terminalSafe } from '@ninodes/kernels';

/**
 * Left-aligned text columns separated by two spaces; the last column is not padded. Cells often
 * hold names from a file (tensors, groups): each is made terminal-safe.
 */
export function formatRows(rawRows: readonly (readonly string[])[]): string {
  const rows = rawRows.map((r) => r.map(terminalSafe));
  // A loop, not Math.max(...column): spreading 120k rows into one call overflows the stack.
  const widths: number[] = [];
  for (const r of rows) for (let i = 0; i < r.length; i++) widths[i] = Math.max(widths[i] ?? 0, (r[i] ?? '').length);
  const line = (cells: readonly string[]) => cells.map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i]!))).join('  ');
  return rows.map(line).join('\n');
}

/** Left-aligned text columns separated by two spaces; header first. */
export function formatTable(header: readonly string[], rows: readonly (readonly string[])[]): string {
  return formatRows([header, ...rows]);
}
