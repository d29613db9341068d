import { basename } from 'node:path';
import { type DType, NinodesError, isBlockDType } from '@ninodes/kernels';
import { QuantError, type QuantThrownCode } from './error-codes.js';
import type { CheckpointSource, TensorEntry } from '@ninodes/memory';
import { type ComfyQuantConfig, parseComfyQuantBytes, quantizationMetadataSchema } from './comfy-quant-config.js';
import { CONVROT_GROUP, type WeightFormat, weightFormatInfo } from './weight-format.js';

/** What told us a layer's format. */
export type DetectionSource = 'comfy_quant' | 'quantization_metadata' | 'scaled_fp8' | 'dtype' | 'gguf' | 'filename';

/** One layer (`<name>.weight` and its companions) as detected. */
export interface DetectedLayer {
  /** Layer prefix: the weight is `${name}.weight`. */
  readonly name: string;
  readonly format: WeightFormat;
  readonly source: DetectionSource;
  /** Torch shape of the weight. */
  readonly shape: readonly number[];
  /** File tensor names (legacy `scale_weight`/`scale_input` appear here under their file names). */
  readonly tensors: {
    readonly weight: string;
    readonly weightScale?: string;
    readonly inputScale?: string;
    readonly bias?: string;
  };
  /** The parsed comfy_quant config when a marker said it. */
  readonly config?: ComfyQuantConfig;
}

/** A disagreement between the file name and what the header says (the header wins). */
export interface FormatConflict {
  readonly filenameWord: string;
  readonly filenameSays: string;
  readonly headerSays: readonly WeightFormat[];
  readonly message: string;
}

export interface FormatDetection {
  readonly layers: ReadonlyMap<string, DetectedLayer>;
  /** Modern (ComfyUI) tensor name -> the name in the file, for renamed legacy tensors. */
  readonly renames: ReadonlyMap<string, string>;
  /** Legacy `scale_input` tensors equal to 1.0 that ComfyUI drops (file names). */
  readonly dropped: readonly string[];
  readonly conflicts: readonly FormatConflict[];
  /** Format named by the file name, when it names one. */
  readonly filenameHint?: FilenameHint;
  /** Count of layers per format. */
  readonly summary: Readonly<Partial<Record<WeightFormat, number>>>;
}

export interface DetectOptions {
  /** Name to read format words from; default the source path. */
  filename?: string;
}

/** A format family or exact format named by a file-name word. */
export interface FilenameHint {
  readonly word: string;
  readonly family: 'float' | 'int8' | 'fp8' | 'gguf';
  readonly format?: WeightFormat;
  readonly convrot?: boolean;
}

const FILENAME_WORDS: readonly [RegExp, Omit<FilenameHint, 'word'>][] = [
  [/^(?:fp8|f8)?_?e4m3(?:fn)?$/, { family: 'fp8', format: 'f8_e4m3fn' }],
  [/^(?:fp8|f8)?_?e5m2$/, { family: 'fp8', format: 'f8_e5m2' }],
  [/^(?:fp8|f8|float8)(?:_?scaled)?$/, { family: 'fp8' }],
  [/^int8_?convrot$|^convrot$/, { family: 'int8', convrot: true }],
  [/^int8$|^w8a8$/, { family: 'int8' }],
  [/^(?:bf16|bfloat16)$/, { family: 'float', format: 'bf16' }],
  [/^(?:fp16|f16|float16|half)$/, { family: 'float', format: 'f16' }],
  [/^(?:fp32|f32|float32)$/, { family: 'float', format: 'f32' }],
];

/** Reads format words from a file name (`flux-fp8-e4m3fn.safetensors`, `wan-Q4_K_M.gguf`). */
export function formatHintFromFilename(name: string): FilenameHint | undefined {
  const base = basename(name).toLowerCase().replace(/\.(safetensors|gguf|sft|ckpt|pt|bin)$/, '');
  const gguf = /(?:^|[^a-z0-9])(q[2-8]_(?:[01k])|iq4_(?:nl|xs))(?:_[sml])?(?=$|[^a-z0-9])/.exec(base);
  if (gguf) {
    const dtype = gguf[1] as string;
    return { word: gguf[0].replace(/^[^a-z0-9]/, ''), family: 'gguf', ...(isBlockDType(dtype) ? { format: dtype } : {}) };
  }
  const tokens = base.split(/[-_.\s]+/);
  let best: FilenameHint | undefined;
  for (const t of tokens) {
    for (const [re, hint] of FILENAME_WORDS) {
      if (re.test(t)) {
        // Keep the most specific word: an exact format beats a family; convrot beats plain int8.
        if (best === undefined || (hint.format && !best.format) || (hint.convrot && !best.convrot)) best = { word: t, ...hint };
        break;
      }
    }
  }
  return best;
}

function markerError(code: QuantThrownCode, layer: string, message: string, value: unknown, hint: string): NinodesError {
  return new QuantError(code, `layer '${layer}': ${message}`, { value, where: layer, hint });
}

function numelOfShape(shape: readonly number[]): number {
  return shape.reduce((a, b) => a * b, 1);
}

/** Resolves a ComfyUI quant config plus the stored tensors into one of our formats. */
function formatFromConfig(layer: string, conf: ComfyQuantConfig, weight: TensorEntry, scale: TensorEntry | undefined): WeightFormat {
  const contradict = (msg: string) => markerError('CONTRADICTORY_QUANT_MARKERS', layer, msg, { config: conf, weightDtype: weight.dtype }, 'the marker and the stored tensors must describe the same format');
  switch (conf.format) {
    case 'int8_tensorwise': {
      if (weight.dtype !== 'i8') throw contradict(`comfy_quant says int8_tensorwise but the weight is ${weight.dtype}`);
      if (scale === undefined) throw markerError('TENSOR_NOT_FOUND', layer, 'int8_tensorwise needs a weight_scale tensor', conf, `add ${layer}.weight_scale (F32 [N,1] or scalar)`);
      const n = weight.shape[0] ?? 1;
      const k = weight.shape[weight.shape.length - 1] ?? 1;
      const scaleNumel = numelOfShape(scale.shape);
      const rowwise = scaleNumel === n && (n !== 1 || scale.shape.length === 2);
      if (scaleNumel !== 1 && scaleNumel !== n) throw contradict(`weight_scale has ${scaleNumel} values for ${n} output rows`);
      if (conf.per_channel === true && !rowwise && n !== 1) throw contradict('per_channel is set but weight_scale is a single value');
      const convrot = conf.convrot === true;
      if (convrot) {
        const group = conf.convrot_groupsize ?? CONVROT_GROUP;
        if (group !== CONVROT_GROUP) throw markerError('UNSUPPORTED_QUANT_FORMAT', layer, `convrot group ${group} is not supported`, conf, `only group ${CONVROT_GROUP} is implemented`);
        if (k % group !== 0) throw contradict(`convrot group ${group} does not divide the input size ${k}`);
      }
      return convrot ? (rowwise ? 'int8_convrot' : 'int8_tensorwise_convrot') : rowwise ? 'int8_rowwise' : 'int8_tensorwise';
    }
    case 'float8_e4m3fn':
    case 'float8_e5m2': {
      const want: DType = conf.format === 'float8_e4m3fn' ? 'f8_e4m3fn' : 'f8_e5m2';
      if (weight.dtype !== want) throw contradict(`comfy_quant says ${conf.format} but the weight is ${weight.dtype}`);
      if (conf.convrot === true) throw contradict('convrot is only defined for int8_tensorwise');
      if (scale !== undefined && numelOfShape(scale.shape) !== 1) {
        throw markerError('UNSUPPORTED_QUANT_FORMAT', layer, `fp8 weight_scale with ${numelOfShape(scale.shape)} values (only per-tensor scaling is implemented)`, scale.shape, 'use a per-tensor scaled fp8 checkpoint');
      }
      return want;
    }
    default:
      throw markerError('UNSUPPORTED_QUANT_FORMAT', layer, `unknown comfy_quant format '${conf.format}'`, conf, 'known: int8_tensorwise, float8_e4m3fn, float8_e5m2');
  }
}

function formatFromDtype(dtype: DType): WeightFormat | undefined {
  if (dtype === 'f32' || dtype === 'f16' || dtype === 'bf16' || dtype === 'f8_e4m3fn' || dtype === 'f8_e5m2') return dtype;
  if (isBlockDType(dtype)) return dtype;
  return undefined;
}

function sameConfig(a: ComfyQuantConfig, b: ComfyQuantConfig): boolean {
  return a.format === b.format && (a.convrot ?? false) === (b.convrot ?? false) && (a.convrot_groupsize ?? CONVROT_GROUP) === (b.convrot_groupsize ?? CONVROT_GROUP);
}

/**
 * Detects every layer's weight format from what the file says, in ComfyUI's order of authority:
 * `<l>.comfy_quant` tensors and `__metadata__._quantization_metadata`, the legacy `scaled_fp8` sentinel
 * (its `scale_weight`/`scale_input` mapped to `weight_scale`/`input_scale`), then the weight dtype (GGUF
 * block types included). A file-name word decides only when the header is silent (an int8 weight with
 * no marker); a name that disagrees with the header is reported in `conflicts` and the header wins.
 * Unknown or contradictory markers throw a NinodesError naming the layer.
 */
export function detectFormats(source: CheckpointSource, options: DetectOptions = {}): FormatDetection {
  const entries = new Map(source.entries().map((e) => [e.name, e]));
  const hint = formatHintFromFilename(options.filename ?? source.path);
  const renames = new Map<string, string>();
  const dropped: string[] = [];

  // Markers from the header metadata (ComfyUI: _quantization_metadata takes precedence over scaled_fp8).
  const metaConfigs = new Map<string, ComfyQuantConfig>();
  const qm = source.metadata._quantization_metadata;
  if (qm !== undefined) {
    let json: unknown;
    try {
      json = JSON.parse(qm);
    } catch (cause) {
      throw new QuantError('BAD_QUANT_MARKER', '__metadata__._quantization_metadata is not JSON', { value: qm.slice(0, 200), where: source.path, cause });
    }
    const r = quantizationMetadataSchema.safeParse(json);
    if (!r.success) {
      throw new QuantError('BAD_QUANT_MARKER', `__metadata__._quantization_metadata: ${r.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`, {
        value: json,
        where: source.path,
        hint: 'expected {"layers": {"<layer>": {"format": ...}}}',
      });
    }
    for (const [layer, conf] of Object.entries(r.data.layers)) {
      let name = layer;
      if (!entries.has(`${name}.weight`)) {
        // Converters sometimes omit the model prefix ("model.diffusion_model."): match a unique suffix.
        const matches = [...entries.keys()].filter((k) => k.endsWith(`.${layer}.weight`));
        if (matches.length !== 1) {
          throw markerError('TENSOR_NOT_FOUND', layer, `_quantization_metadata names a layer with ${matches.length === 0 ? 'no' : 'an ambiguous'} weight`, matches, 'the metadata and the tensors must name the same layers');
        }
        name = (matches[0] as string).slice(0, -'.weight'.length);
      }
      metaConfigs.set(name, conf);
    }
  }

  // Legacy scaled fp8: a `scaled_fp8` sentinel tensor (under the model prefix) and `<l>.scale_weight`.
  const sentinel = qm === undefined ? [...entries.values()].find((e) => e.name === 'scaled_fp8' || e.name.endsWith('.scaled_fp8')) : undefined;
  const legacyFormat: WeightFormat | undefined = sentinel ? (sentinel.dtype === 'f8_e5m2' ? 'f8_e5m2' : 'f8_e4m3fn') : undefined;

  const layers = new Map<string, DetectedLayer>();
  for (const e of entries.values()) {
    if (!e.name.endsWith('.weight')) continue;
    const name = e.name.slice(0, -'.weight'.length);
    const bias = entries.has(`${name}.bias`) ? `${name}.bias` : undefined;
    const markerName = `${name}.comfy_quant`;
    let conf: ComfyQuantConfig | undefined;
    let src: DetectionSource | undefined;
    if (entries.has(markerName)) {
      conf = parseComfyQuantBytes(source.tensor(markerName).bytes(), name);
      src = 'comfy_quant';
    }
    const metaConf = metaConfigs.get(name);
    if (metaConf !== undefined) {
      if (conf !== undefined && !sameConfig(conf, metaConf)) {
        throw markerError('CONTRADICTORY_QUANT_MARKERS', name, `comfy_quant says ${JSON.stringify(conf)} but _quantization_metadata says ${JSON.stringify(metaConf)}`, { tensor: conf, metadata: metaConf }, 'remove one of the two markers');
      }
      conf ??= metaConf;
      src ??= 'quantization_metadata';
    }
    let weightScale = entries.has(`${name}.weight_scale`) ? `${name}.weight_scale` : undefined;
    let inputScale = entries.has(`${name}.input_scale`) ? `${name}.input_scale` : undefined;

    if (conf === undefined && legacyFormat !== undefined && entries.has(`${name}.scale_weight`)) {
      conf = { format: legacyFormat === 'f8_e5m2' ? 'float8_e5m2' : 'float8_e4m3fn' };
      if (sentinel && numelOfShape(sentinel.shape) === 2) conf.full_precision_matrix_mult = true;
      src = 'scaled_fp8';
      weightScale = `${name}.scale_weight`;
      renames.set(`${name}.weight_scale`, weightScale);
      const legacyInput = `${name}.scale_input`;
      if (entries.has(legacyInput)) {
        const v = source.tensor(legacyInput);
        const one = v.dtype === 'f32' && v.numel === 1 && (v.copy().data as Float32Array)[0] === 1;
        if (one) dropped.push(legacyInput);
        else {
          inputScale = legacyInput;
          renames.set(`${name}.input_scale`, legacyInput);
        }
      }
    }

    const tensors = {
      weight: e.name,
      ...(weightScale ? { weightScale } : {}),
      ...(inputScale ? { inputScale } : {}),
      ...(bias ? { bias } : {}),
    };
    if (conf !== undefined && src !== undefined) {
      const format = formatFromConfig(name, conf, e, weightScale ? entries.get(weightScale) : undefined);
      layers.set(name, { name, format, source: src, shape: e.shape, tensors, config: conf });
      continue;
    }
    const byDtype = formatFromDtype(e.dtype);
    if (byDtype !== undefined) {
      if (weightFormatInfo(byDtype).family === 'fp8' && weightScale && numelOfShape(entries.get(weightScale)?.shape ?? []) !== 1) {
        throw markerError('UNSUPPORTED_QUANT_FORMAT', name, 'fp8 weight_scale with more than one value', entries.get(weightScale)?.shape, 'only per-tensor scaled fp8 is implemented');
      }
      layers.set(name, { name, format: byDtype, source: source.format === 'gguf' ? 'gguf' : 'dtype', shape: e.shape, tensors });
      continue;
    }
    if (e.dtype === 'i8') {
      // The header does not say how to read an int8 weight: only a file-name word may break the tie.
      if (hint?.family !== 'int8' || weightScale === undefined) {
        throw markerError(
          'UNSUPPORTED_QUANT_FORMAT',
          name,
          `the weight is I8 but no comfy_quant marker or _quantization_metadata says how to read it${weightScale === undefined ? ' (and there is no weight_scale)' : ''}`,
          { dtype: e.dtype, filename: options.filename ?? source.path },
          'add a comfy_quant marker, or name the file with "int8" (and "convrot" if rotated)',
        );
      }
      const scaleNumel = numelOfShape(entries.get(weightScale)?.shape ?? []);
      const rowwise = scaleNumel !== 1;
      const format: WeightFormat = hint.convrot ? (rowwise ? 'int8_convrot' : 'int8_tensorwise_convrot') : rowwise ? 'int8_rowwise' : 'int8_tensorwise';
      layers.set(name, { name, format, source: 'filename', shape: e.shape, tensors });
      continue;
    }
    // Other dtypes (i32 tables, u8 masks...) are not weights a linear runs; leave them to the model.
  }

  const summary: Partial<Record<WeightFormat, number>> = {};
  for (const l of layers.values()) summary[l.format] = (summary[l.format] ?? 0) + 1;

  const conflicts: FormatConflict[] = [];
  if (hint !== undefined) {
    const said = Object.keys(summary) as WeightFormat[];
    const quantized = said.filter((f) => weightFormatInfo(f).family !== 'float');
    const matches = said.some((f) => {
      const fi = weightFormatInfo(f);
      if (hint.format !== undefined) return f === hint.format;
      if (fi.family !== hint.family) return false;
      return hint.convrot === undefined || (fi.convrot !== false) === hint.convrot;
    });
    // A quantized file keeps float norms and islands: judge a quant word only against quantized layers.
    const consistent = hint.family === 'float' ? matches && quantized.length === 0 : matches;
    if (!consistent && said.length > 0) {
      const headerSays = hint.family === 'float' ? said : quantized.length > 0 ? quantized : said;
      conflicts.push({
        filenameWord: hint.word,
        filenameSays: hint.format ?? hint.family,
        headerSays,
        message: `the file name says '${hint.word}' but the header says ${headerSays.join(', ')}; using the header`,
      });
    }
  }

  return { layers, renames, dropped, conflicts, ...(hint ? { filenameHint: hint } : {}), summary };
}
