import { formatBytes } from '@ninodes/device';
import type { TargetResult } from './results-schema.js';

export function formatSeconds(s: number | null | undefined): string {
  if (s === null || s === undefined || !Number.isFinite(s)) return '–';
  if (s >= 1) return `${s.toFixed(3)} s`;
  if (s >= 1e-3) return `${(s * 1e3).toFixed(3)} ms`;
  return `${(s * 1e6).toFixed(2)} µs`;
}

export function formatNumber(v: number | null | undefined, unit = ''): string {
  if (v === null || v === undefined || !Number.isFinite(v)) return '–';
  if (unit === 'bytes') return formatBytes(v);
  const abs = Math.abs(v);
  const text = abs !== 0 && (abs < 1e-3 || abs >= 1e6) ? Number(v.toPrecision(4)).toExponential() : Number(v.toPrecision(4)).toString();
  return unit ? `${text} ${unit}` : text;
}

export function formatPercent(v: number | null | undefined): string {
  return v === null || v === undefined || !Number.isFinite(v) ? '–' : `±${(v * 100).toFixed(1)}%`;
}

export function targetText(t: TargetResult): string {
  const on = 'ratio' in t.on ? `time ours/${t.on.ratio}` : 'metric' in t.on ? t.on.metric : 'time' in t.on ? 'median s' : t.on.throughput;
  return `${on} ${t.op} ${formatNumber(t.value)}`;
}

export function metText(met: boolean | null): string {
  return met === null ? 'unknown' : met ? 'met' : 'NOT met';
}
