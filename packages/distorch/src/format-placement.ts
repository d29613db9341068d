import { formatBytes } from '@ninodes/device';
import type { Placement } from './plan-placement.js';

function runs(names: readonly string[]): string {
  // blocks.0 … blocks.15 reads better as blocks.0-15.
  const out: string[] = [];
  let start: number | undefined;
  let prev: number | undefined;
  const flush = (): void => {
    if (start !== undefined) out.push(start === prev ? `blocks.${start}` : `blocks.${start}-${prev}`);
    start = undefined;
  };
  for (const n of names) {
    const m = /^blocks\.(\d+)$/.exec(n);
    if (m === null) {
      flush();
      out.push(n);
      continue;
    }
    const i = Number(m[1]);
    if (start !== undefined && prev !== undefined && i === prev + 1) prev = i;
    else {
      flush();
      start = i;
      prev = i;
    }
  }
  flush();
  return out.join(', ');
}

/** The human table of `ninodes plan`: per device bytes, share and groups; the reserve; warnings; a suggestion. */
export function formatPlacement(p: Placement): string {
  const rows = p.devices.map((d) => [
    d.id === p.compute ? `${d.id} (compute)` : d.id,
    formatBytes(d.bytes),
    `${(d.share * 100).toFixed(1)}%`,
    d.quota === null ? '*' : formatBytes(d.quota),
    d.capacity === null ? '-' : formatBytes(d.capacity),
    runs(d.groups),
  ]);
  const head = ['device', 'weights', 'share', 'quota', 'memory', 'groups'];
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] as string).length)));
  const line = (r: string[]): string => r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i] as number))).join('  ').trimEnd();
  const out = [`allocation ${p.allocation} (${p.mode}, ${p.fillOrder}) for ${p.architecture}: ${formatBytes(p.totalBytes)} of weights`, line(head), ...rows.map(line)];
  const r = p.reserve;
  out.push(
    `reserve on ${r.device}: activations ${formatBytes(r.activationBytes)} (×${r.attentionMemoryModifier} profile modifier), staging ${formatBytes(r.stagingBytes)} (${r.stagingGroups} group${r.stagingGroups === 1 ? '' : 's'})`,
  );
  for (const w of p.warnings) out.push(`warning: ${w}`);
  if (!p.fits) out.push(p.suggestion === undefined ? 'does not fit, and no allocation of this machine would' : `does not fit; this would: --alloc "${p.suggestion}"`);
  return out.join('\n');
}
