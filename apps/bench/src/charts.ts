/**
 * Generic chart builders: each turns a suite's results plus a ChartRequest into a Vega-Lite spec,
 * rendered to SVG in Node (no canvas, no network) so the report page is static. Suites only say
 * which charts they want; the data comes from the results.
 */
import * as vega from 'vega';
import * as vl from 'vega-lite';
import type { TopLevelSpec } from 'vega-lite';
import type { CaseResult } from './results-schema.js';
import type { ChartRequest } from './suite.js';

export interface BuiltChart {
  id: string;
  title: string;
  spec: TopLevelSpec;
}

export interface RenderedChart {
  id: string;
  title: string;
  svg: string;
}

type Row = Record<string, string | number>;

// Case labels carry every parameter (m=256 k=3072 n=3072 ...): the default 180 px cut them off.
const INSTANCE_AXIS = { labelLimit: 420 } as const;
const WIDTH = 560;

/** Short label of an instance: case name and parameter values. */
export function instanceLabel(c: CaseResult): string {
  const p = Object.entries(c.parameters).map(([k, v]) => `${k}=${String(v)}`);
  return p.length ? `${c.case} ${p.join(' ')}` : c.case;
}

function select(cases: readonly CaseResult[], names: readonly string[] | undefined): CaseResult[] {
  return cases.filter((c) => !c.error && (!names || names.includes(c.case)));
}

/** "ours" always first and always the same dark colour, so it stands out against bounds and peers. */
function contenderScale(rows: readonly Row[]): { domain: string[]; range: string[] } {
  const names = [...new Set(rows.map((r) => String(r.contender)))].sort((a, b) => (a === 'ours' ? -1 : b === 'ours' ? 1 : a.localeCompare(b)));
  const palette = ['#1b4f9c', '#f28e2b', '#59a14f', '#e15759', '#76b7b2', '#b07aa1', '#edc948', '#9c755f', '#bab0ac'];
  return { domain: names, range: names.map((_, i) => palette[i % palette.length] as string) };
}

function throughputCharts(idBase: string, req: Extract<ChartRequest, { kind: 'throughput' }>, cases: CaseResult[]): BuiltChart[] {
  const out: BuiltChart[] = [];
  for (const unit of ['GFLOP/s', 'GB/s'] as const) {
    const rows: Row[] = [];
    for (const c of cases) {
      // An instance with flops is charted in GFLOP/s only, so one op never appears twice.
      const primary = c.work?.flops !== undefined ? 'GFLOP/s' : 'GB/s';
      if (primary !== unit) continue;
      for (const k of c.contenders) {
        const t = k.throughput.find((x) => x.unit === unit);
        if (k.status === 'ok' && t) rows.push({ instance: instanceLabel(c), contender: k.name, kind: k.kind, value: t.value });
      }
    }
    if (!rows.length) continue;
    out.push({
      id: `${idBase}-${unit === 'GB/s' ? 'gbs' : 'gflops'}`,
      title: `${req.title} (${unit})`,
      spec: {
        $schema: 'https://vega.github.io/schema/vega-lite/v5.json',
        width: WIDTH,
        data: { values: rows },
        mark: { type: 'bar', tooltip: true },
        encoding: {
          y: { field: 'instance', type: 'nominal', title: null, sort: null, axis: INSTANCE_AXIS },
          yOffset: { field: 'contender', type: 'nominal', sort: contenderScale(rows).domain },
          x: { field: 'value', type: 'quantitative', title: unit },
          color: { field: 'contender', type: 'nominal', title: 'who', scale: contenderScale(rows) },
        },
      },
    });
  }
  return out;
}

function ratioChart(id: string, req: Extract<ChartRequest, { kind: 'ratio' }>, cases: CaseResult[]): BuiltChart[] {
  const rows: Row[] = [];
  for (const c of cases) {
    for (const r of c.ratios) {
      if (r.timeRatio.median === null) continue;
      rows.push({ instance: instanceLabel(c), against: r.against, ratio: r.timeRatio.median, lo: r.timeRatio.min ?? r.timeRatio.median, hi: r.timeRatio.max ?? r.timeRatio.median });
    }
  }
  if (!rows.length) return [];
  return [
    {
      id,
      title: `${req.title} (time ours / theirs, below 1 = ours faster)`,
      spec: {
        $schema: 'https://vega.github.io/schema/vega-lite/v5.json',
        width: WIDTH,
        data: { values: rows },
        layer: [
          {
            mark: { type: 'bar', tooltip: true },
            encoding: {
              y: { field: 'instance', type: 'nominal', title: null, sort: null, axis: INSTANCE_AXIS },
              yOffset: { field: 'against', type: 'nominal' },
              x: { field: 'ratio', type: 'quantitative', title: 'median per-pair time ratio' },
              color: { field: 'against', type: 'nominal', title: 'against' },
            },
          },
          { mark: { type: 'rule', color: 'black', strokeDash: [4, 3] }, encoding: { x: { datum: 1 } } },
        ],
      },
    },
  ];
}

function paramField(c: CaseResult, name: string | undefined): string {
  if (name === undefined) return instanceLabel(c);
  const v = c.parameters[name];
  return v === undefined ? '(none)' : String(v);
}

function xyChart(id: string, title: string, axes: { x: string; y: string }, rows: Row[], hasColor: boolean, whiskers: boolean): BuiltChart[] {
  if (!rows.length) return [];
  const color = hasColor ? { color: { field: 'color', type: 'nominal' as const, title: null } } : {};
  const offset = hasColor ? { xOffset: { field: 'color', type: 'nominal' as const } } : {};
  const x = { field: 'x', type: 'nominal' as const, title: axes.x, sort: null, axis: { labelAngle: -30, ...INSTANCE_AXIS } };
  const yTitle = axes.y;
  return [
    {
      id,
      title,
      spec: {
        $schema: 'https://vega.github.io/schema/vega-lite/v5.json',
        width: WIDTH,
        data: { values: rows },
        layer: [
          { mark: { type: 'bar', tooltip: true }, encoding: { x, y: { field: 'y', type: 'quantitative', title: yTitle, axis: { format: '.3~g' } }, ...offset, ...color } },
          ...(whiskers ? [{ mark: { type: 'rule' as const, color: 'black' }, encoding: { x, y: { field: 'lo', type: 'quantitative' as const }, y2: { field: 'hi' }, ...offset } }] : []),
          // Each bar's value written on it: a bar of 0 (no GC in the step, say) is a number, not an empty chart.
          { mark: { type: 'text' as const, dy: -4, fontSize: 9 }, encoding: { x, y: { field: 'y', type: 'quantitative' as const }, text: { field: 'y', type: 'quantitative' as const, format: '.3~g' }, ...offset } },
        ],
      } as TopLevelSpec,
    },
  ];
}

function timeChart(id: string, req: Extract<ChartRequest, { kind: 'time' }>, cases: CaseResult[]): BuiltChart[] {
  const rows: Row[] = [];
  for (const c of cases) {
    const s = c.contenders[0]?.stats;
    if (!s || s.median === null) continue;
    rows.push({ x: paramField(c, req.x), color: req.color ? paramField(c, req.color) : '', y: s.median, lo: s.q25 ?? s.median, hi: s.q75 ?? s.median });
  }
  return xyChart(id, `${req.title} (median seconds, whiskers: quartiles)`, { x: req.x ?? 'case', y: 'seconds per run' }, rows, req.color !== undefined, true);
}

function metricChart(id: string, req: Extract<ChartRequest, { kind: 'metric' }>, cases: CaseResult[]): BuiltChart[] {
  const rows: Row[] = [];
  let unit = '';
  for (const c of cases) {
    const m = c.metrics[req.metric];
    if (!m) continue;
    unit = m.unit;
    // Bytes are charted in MiB: nobody reads 100,000,000 on an axis.
    rows.push({ x: paramField(c, req.x), color: req.color ? paramField(c, req.color) : '', y: m.unit === 'bytes' ? m.value / 2 ** 20 : m.value });
  }
  const shown = unit === 'bytes' ? 'MiB' : unit;
  return xyChart(id, req.title, { x: req.x ?? 'case', y: shown ? `${req.metric} (${shown})` : req.metric }, rows, req.color !== undefined, false);
}

/** The charts a suite gets when it names none: throughput or time, ratios, one per metric. */
export function defaultCharts(suiteName: string, cases: readonly CaseResult[]): ChartRequest[] {
  const own = cases.filter((c) => c.suite === suiteName && !c.error);
  const out: ChartRequest[] = [];
  if (own.some((c) => c.work)) out.push({ kind: 'throughput', title: `${suiteName}: throughput` });
  else if (own.length) out.push({ kind: 'time', title: `${suiteName}: time per run` });
  if (own.some((c) => c.ratios.length)) out.push({ kind: 'ratio', title: `${suiteName}: ours against others` });
  const metrics = new Set(own.flatMap((c) => Object.keys(c.metrics)));
  for (const m of metrics) out.push({ kind: 'metric', title: `${suiteName}: ${m}`, metric: m });
  return out;
}

export function buildCharts(suiteName: string, requests: readonly ChartRequest[], allCases: readonly CaseResult[]): BuiltChart[] {
  const suiteCases = allCases.filter((c) => c.suite === suiteName);
  return requests.flatMap((req, i) => {
    const cases = select(suiteCases, req.cases);
    const id = `${suiteName}-${i}-${req.kind}`;
    switch (req.kind) {
      case 'throughput':
        return throughputCharts(id, req, cases);
      case 'ratio':
        return ratioChart(id, req, cases);
      case 'time':
        return timeChart(id, req, cases);
      case 'metric':
        return metricChart(id, req, cases);
    }
  });
}

export async function renderSvg(spec: TopLevelSpec): Promise<string> {
  const compiled = vl.compile(spec).spec;
  const view = new vega.View(vega.parse(compiled), { renderer: 'none' });
  try {
    return await view.toSVG();
  } finally {
    view.finalize();
  }
}

export async function renderCharts(charts: readonly BuiltChart[]): Promise<RenderedChart[]> {
  const out: RenderedChart[] = [];
  for (const c of charts) out.push({ id: c.id, title: c.title, svg: await renderSvg(c.spec) });
  return out;
}
