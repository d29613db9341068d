/** report.html: one static page, charts inlined as SVG, no scripts and nothing fetched at view time. */
import { instanceLabel, type RenderedChart } from './charts.js';
import { formatNumber, formatPercent, formatSeconds, metText, targetText } from './format.js';
import type { Results } from './results-schema.js';
import { envLines } from './summary.js';

const esc = (s: string): string => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');

const CSS = `
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:2rem auto;max-width:1100px;padding:0 1rem;color:#1d1d1f}
h1{font-size:1.6rem}h2{margin-top:2.2rem;border-bottom:1px solid #ddd;padding-bottom:.3rem}
table{border-collapse:collapse;margin:.8rem 0;font-size:13px}th,td{border:1px solid #ddd;padding:.25rem .5rem;text-align:left;vertical-align:top}
th{background:#f4f4f6}.met{color:#0a7a2f;font-weight:600}.notmet{color:#b00020;font-weight:600}.unknown{color:#777}
.chart{margin:1.2rem 0;padding:.6rem;border:1px solid #eee;border-radius:6px;overflow-x:auto}.chart figcaption{font-weight:600;margin-bottom:.4rem}
ul.env{color:#444}.failed{color:#b00020}.slower{color:#b00020;font-weight:600}
`;

function metClass(met: boolean | null): string {
  return met === null ? 'unknown' : met ? 'met' : 'notmet';
}

export function renderReport(r: Results, charts: ReadonlyMap<string, readonly RenderedChart[]>): string {
  const parts: string[] = [];
  parts.push('<!doctype html><html lang="en"><head><meta charset="utf-8">', '<meta name="viewport" content="width=device-width,initial-scale=1">', `<title>ninodes bench ${esc(r.startedAt)}</title><style>${CSS}</style></head><body>`);
  parts.push(`<h1>ninodes bench</h1><p>${esc(r.startedAt)} – ${esc(r.finishedAt)}</p><ul class="env">${envLines(r).map((l) => `<li>${esc(l)}</li>`).join('')}</ul>`);
  const targets = r.cases.flatMap((c) => c.targets.map((t) => ({ c, t })));
  if (targets.length) {
    parts.push('<h2>Targets</h2><table><thead><tr><th>source</th><th>suite</th><th>case</th><th>target</th><th>measured</th><th>met</th></tr></thead><tbody>');
    for (const { c, t } of targets) {
      parts.push(`<tr><td>${esc(t.source)}</td><td>${esc(c.suite)}</td><td>${esc(instanceLabel(c))}: ${esc(t.description)}</td><td>${esc(targetText(t))}</td><td>${esc(t.measured === null ? `– (${t.note ?? ''})` : formatNumber(t.measured))}</td><td class="${metClass(t.met)}">${metText(t.met)}</td></tr>`);
    }
    parts.push('</tbody></table>');
  }
  if (!r.suites.length) parts.push('<p>No suites ran.</p>');
  for (const s of r.suites) {
    parts.push(`<h2 id="suite-${esc(s.name)}">${esc(s.name)}</h2><p>${esc(s.description)}</p>`);
    for (const c of charts.get(s.name) ?? []) {
      parts.push(`<figure class="chart" data-chart="${esc(c.id)}"><figcaption>${esc(c.title)}</figcaption>${c.svg}</figure>`);
    }
    parts.push('<table><thead><tr><th>case</th><th>ours (median)</th><th>spread</th><th>contenders (median, time ours/theirs)</th><th>metrics</th><th>vs baseline</th></tr></thead><tbody>');
    for (const c of r.cases.filter((x) => x.suite === s.name)) {
      if (c.error) {
        parts.push(`<tr><td>${esc(instanceLabel(c))}</td><td colspan="5" class="failed">FAILED: ${esc(c.error)}</td></tr>`);
        continue;
      }
      const ours = c.contenders[0];
      const others = c.contenders
        .slice(1)
        .map((k) => {
          if (k.status !== 'ok') return `${esc(k.name)}: ${esc(k.status)} (${esc(k.reason ?? '')})`;
          const ratio = c.ratios.find((x) => x.against === k.name)?.timeRatio;
          return `${esc(k.name)}: ${esc(formatSeconds(k.stats?.median))}, ratio ${esc(formatNumber(ratio?.median))}`;
        })
        .join('<br>');
      const metrics = Object.entries(c.metrics)
        .map(([n, m]) => `${esc(n)} = ${esc(formatNumber(m.value, m.unit))}`)
        .join('<br>');
      const cmp = c.comparison ? `<span class="${c.comparison.verdict === 'slower' ? 'slower' : ''}">${esc(c.comparison.verdict)} (${esc(formatNumber(c.comparison.ratio))}x)</span>` : '–';
      parts.push(`<tr><td>${esc(instanceLabel(c))}</td><td>${esc(formatSeconds(ours?.stats?.median))}</td><td>${esc(formatPercent(ours?.stats?.spread))}</td><td>${others || '–'}</td><td>${metrics || '–'}</td><td>${cmp}</td></tr>`);
    }
    parts.push('</tbody></table>');
  }
  parts.push('</body></html>');
  return parts.join('\n');
}
