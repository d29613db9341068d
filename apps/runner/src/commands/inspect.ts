import { statSync } from 'node:fs';
import { formatBytes } from '@ninodes/device';
import { terminalSafe } from '@ninodes/kernels';
import { type H3Config, bytesByGroup, detectArchitecture, h3UnusedKeys } from '@ninodes/models';
import { detectFormats, openCheckpoint } from '@ninodes/quant';
import { z } from 'zod';
import { defineCommand } from '../command.js';
import { formatTable } from '../table.js';

export interface InspectResult {
  path: string;
  format: 'safetensors' | 'gguf';
  fileBytes: number;
  tensors: number;
  tensorBytes: number;
  architecture: ReturnType<typeof detectArchitecture>;
  byDtype: Array<{ dtype: string; tensors: number; bytes: number }>;
  byFormat: Array<{ format: string; layers: number; bytes: number }>;
  formatConflicts: Array<{ layer: string; detail: string }>;
  byGroup: Array<{ group: string; bytes: number }>;
  unusedKeys: string[];
}

function tally<K>(items: Iterable<[K, number]>): Map<K, { count: number; bytes: number }> {
  const out = new Map<K, { count: number; bytes: number }>();
  for (const [key, bytes] of items) {
    const t = out.get(key) ?? { count: 0, bytes: 0 };
    t.count++;
    t.bytes += bytes;
    out.set(key, t);
  }
  return out;
}

export function inspectCheckpoint(path: string): InspectResult {
  const source = openCheckpoint(path);
  try {
    const entries = source.entries();
    const bytesOf = new Map(entries.map((e) => [e.name, e.byteLength]));
    const architecture = detectArchitecture(entries.map((e) => ({ name: e.name, shape: e.shape })));
    const detection = detectFormats(source, { filename: path });
    const layerBytes = (l: { tensors: Record<string, string | undefined> }) =>
      Object.values(l.tensors).reduce((a, name) => a + (name === undefined ? 0 : (bytesOf.get(name) ?? 0)), 0);
    const prefix = architecture.family === 'unknown' ? '' : architecture.prefix;
    return {
      path,
      format: source.format,
      fileBytes: statSync(path).size,
      tensors: entries.length,
      tensorBytes: entries.reduce((a, e) => a + e.byteLength, 0),
      architecture,
      byDtype: [...tally(entries.map((e) => [e.dtype, e.byteLength] as [string, number]))].map(([dtype, t]) => ({ dtype, tensors: t.count, bytes: t.bytes })),
      byFormat: [...tally([...detection.layers.values()].map((l) => [l.format, layerBytes(l)] as [string, number]))].map(([format, t]) => ({
        format,
        layers: t.count,
        bytes: t.bytes,
      })),
      formatConflicts: detection.conflicts.map((c) => ({ layer: String((c as { layer?: string }).layer ?? ''), detail: JSON.stringify(c) })),
      byGroup: [...bytesByGroup(entries, prefix)].map(([group, bytes]) => ({ group, bytes })),
      unusedKeys: architecture.family === 'h3' && architecture.h3 ? h3UnusedKeys(entries.map((e) => e.name), architecture.h3, prefix) : [],
    };
  } finally {
    source.close();
  }
}

/** Form, PDD heads and streams of an H3 config, one line. */
function h3Form(c: H3Config): string {
  const form = c.curveGrid === undefined ? 'full (time embedder)' : `curve (adaln_t_table ${c.curveGrid} x ${c.tDim}, rank-${c.tDim} adaLN)`;
  const streams = ['video', ...(c.audioChannels === undefined ? [] : [`audio (${c.audioChannels} ch stereo)`]), ...(c.textDim === undefined ? [] : [`text (${c.textDim} -> refiner x${c.refinerLayers ?? 0})`])];
  return `${form}, ${c.pddHeads ?? 1} output head${(c.pddHeads ?? 1) > 1 ? 's (PDD bank)' : ''}, streams ${streams.join(' + ')}`;
}

function render(r: InspectResult): string {
  const size = (b: number) => formatBytes(b);
  // Names and the path come from the file system and the file: never written raw to a terminal.
  const t = terminalSafe;
  const a = r.architecture;
  const arch =
    a.family === 'unknown'
      ? `unknown (${t(a.evidence.join('; '))})`
      : `${a.family}: ${a.layers} layers, hidden ${a.hidden}, ${a.heads} heads x ${a.headDim}, ffn ${a.ffn}${a.prefix ? `, prefix '${t(a.prefix)}'` : ''}`;
  const lines = [
    `file          ${t(r.path)} (${r.format}, ${size(r.fileBytes)})`,
    `tensors       ${r.tensors} (${size(r.tensorBytes)})`,
    `architecture  ${arch}`,
    ...(a.family === 'h3' && a.h3 ? [`h3 form       ${h3Form(a.h3)}`] : []),
    '',
    formatTable(['DTYPE', 'TENSORS', 'BYTES'], r.byDtype.map((d) => [d.dtype, String(d.tensors), size(d.bytes)])),
    '',
    r.byFormat.length === 0
      ? 'no linear layers (no tensor named <layer>.weight with a matrix shape)'
      : formatTable(['FORMAT', 'LAYERS', 'BYTES'], r.byFormat.map((f) => [f.format, String(f.layers), size(f.bytes)])),
    '',
    formatTable(['GROUP', 'BYTES'], r.byGroup.map((g) => [g.group, size(g.bytes)])),
  ];
  if (r.formatConflicts.length > 0) lines.push('', ...r.formatConflicts.map((c) => `format conflict (header wins): ${t(c.detail)}`));
  if (r.unusedKeys.length > 0) lines.push('', `unused by the model: ${r.unusedKeys.length} tensors (${t(r.unusedKeys.slice(0, 5).join(', '))}${r.unusedKeys.length > 5 ? ', ...' : ''})`);
  return `${lines.join('\n')}\n`;
}

export const inspect = defineCommand({
  name: 'inspect',
  summary: 'show a checkpoint: format, architecture, dtypes, quant formats, size per block',
  usage: 'ninodes inspect <ckpt> [--json]',
  arguments: [{ name: 'ckpt', description: 'a .safetensors, .safetensors.index.json or .gguf file' }],
  options: { json: { type: 'boolean', description: 'print the result as JSON on stdout' } },
  positionals: [1, 1],
  examples: ['ninodes inspect model.safetensors', 'ninodes inspect model.gguf --json'],
  schema: z.object({ json: z.boolean().default(false), positionals: z.tuple([z.string().min(1)]) }),
  async run(args, context) {
    const result = inspectCheckpoint(args.positionals[0]);
    context.stdout.write(context.json ? `${JSON.stringify(result, null, 2)}\n` : render(result));
    return 0;
  },
});
