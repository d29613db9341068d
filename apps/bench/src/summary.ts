/** summary.md: per suite, ours against each contender, and every target with its measured value. */
import { instanceLabel } from './charts.js';
import { formatNumber, formatPercent, formatSeconds, metText, targetText } from './format.js';
import type { CaseResult, Results } from './results-schema.js';

const cell = (s: string): string => s.replace(/\|/g, '\\|').replace(/\n/g, ' ');
const row = (cells: readonly string[]): string => `| ${cells.map(cell).join(' | ')} |`;

function throughputText(c: CaseResult, name: string): string {
  const k = c.contenders.find((x) => x.name === name);
  return k?.throughput.map((t) => formatNumber(t.value, t.unit)).join(', ') || '–';
}

export function envLines(r: Results): string[] {
  const e = r.env;
  const addon = e.addon.ok ? `oneDNN ${e.addon.onednn}, Gloo ${e.addon.gloo}, ${e.addon.compiler}, simd ${e.addon.simd}, ${e.addon.threads} threads` : `unavailable (${e.addon.error})`;
  const peers = Object.entries(e.peers)
    .map(([name, p]) => (p.available ? `${name} ${p.version ?? ''}`.trim() : `${name} missing`))
    .join('; ');
  return [
    `CPU: ${e.cpu.model}, ${e.cpu.logicalCores} logical cores (${e.cpu.availableParallelism} usable), ${formatNumber(e.memory.totalBytes, 'bytes')} RAM`,
    `Software: node ${e.versions.node}, python ${e.versions.python ?? 'missing'}, addon ${addon}`,
    `Threads: ${Object.entries(e.threads.env).map(([k, v]) => `${k}=${v}`).join(' ') || 'no thread variables set'}; torch ${e.threads.torchThreads ?? '–'}`,
    `Git: ${e.git.commit ?? 'unknown'}${e.git.dirty ? ' (dirty)' : ''}`,
    `Peers: ${peers}`,
    `Mode: ${r.options.quick ? 'quick (small sizes; numbers not for judging)' : 'full'}, suites ${r.options.suites.join(', ') || '(none)'}`,
  ];
}

export function renderSummary(r: Results): string {
  const out: string[] = ['# ninodes bench summary', ''];
  for (const l of envLines(r)) out.push(`- ${l}`);
  const targets = r.cases.flatMap((c) => c.targets);
  const failed = r.cases.filter((c) => c.error);
  const slower = r.cases.filter((c) => c.comparison?.verdict === 'slower');
  out.push(
    '',
    `Targets: ${targets.filter((t) => t.met === true).length} met, ${targets.filter((t) => t.met === false).length} not met, ${targets.filter((t) => t.met === null).length} unknown, of ${targets.length}.` +
      (failed.length ? ` Failed cases: ${failed.length}.` : '') +
      (r.options.compare ? ` Slower than baseline: ${slower.length}.` : ''),
  );
  if (!r.suites.length) out.push('', 'No suites ran.');
  for (const s of r.suites) {
    const cases = r.cases.filter((c) => c.suite === s.name);
    out.push('', `## ${s.name}`, '', s.description, '');
    out.push(row(['case', 'ours (median)', 'spread', 'ours throughput', 'against', 'theirs (median)', 'theirs throughput', 'time ours/theirs', 'vs baseline']));
    out.push(row(Array(9).fill('---')));
    for (const c of cases) {
      const label = instanceLabel(c);
      if (c.error) {
        out.push(row([label, `FAILED: ${c.error}`, '', '', '', '', '', '', '']));
        continue;
      }
      const ours = c.contenders[0];
      const cmp = c.comparison ? `${c.comparison.verdict} (${formatNumber(c.comparison.ratio)}x, noise ${formatPercent(c.comparison.noise)})` : '–';
      const oursCells = [formatSeconds(ours?.stats?.median), formatPercent(ours?.stats?.spread), throughputText(c, 'ours')];
      const others = c.contenders.slice(1);
      if (!others.length) out.push(row([label, ...oursCells, '–', '–', '–', '–', cmp]));
      for (const k of others) {
        const ratio = c.ratios.find((x) => x.against === k.name)?.timeRatio;
        const theirs = k.status === 'ok' ? formatSeconds(k.stats?.median) : `${k.status}: ${k.reason ?? ''}`;
        out.push(row([label, ...oursCells, `${k.name} (${k.kind})`, theirs, throughputText(c, k.name), ratio ? `${formatNumber(ratio.median)} (${formatPercent(ratio.spread)})` : '–', cmp]));
      }
      // With several peers (e.g. PyTorch fp32 and bf16), ours against the fastest of them.
      const peers = others.filter((k) => k.kind === 'peer' && k.status === 'ok' && k.stats);
      if (peers.length > 1) {
        const best = peers.reduce((a, b) => ((b.stats?.median ?? Infinity) < (a.stats?.median ?? Infinity) ? b : a));
        const ratio = c.ratios.find((x) => x.against === best.name)?.timeRatio;
        out.push(row([label, ...oursCells, `fastest peer: ${best.name}`, formatSeconds(best.stats?.median), throughputText(c, best.name), ratio ? `${formatNumber(ratio.median)} (${formatPercent(ratio.spread)})` : '–', cmp]));
      }
      const metrics = Object.entries(c.metrics);
      if (metrics.length) out.push(row([label, metrics.map(([n, m]) => `${n} = ${formatNumber(m.value, m.unit)}`).join('; '), '', '', '', '', '', '', '']));
    }
    const ts = cases.flatMap((c) => c.targets.map((t) => ({ c, t })));
    if (ts.length) {
      out.push('', `### ${s.name} targets`, '', row(['source', 'case', 'target', 'measured', 'met']), row(Array(5).fill('---')));
      for (const { c, t } of ts) out.push(row([t.source, `${instanceLabel(c)}: ${t.description}`, targetText(t), t.measured === null ? `– (${t.note ?? ''})` : formatNumber(t.measured), metText(t.met)]));
    }
  }
  return out.join('\n') + '\n';
}
