import { QuantError } from './error-codes.js';
import { z } from 'zod';

/** The `<layer>.comfy_quant` JSON (and each entry of `_quantization_metadata.layers`). */
export const comfyQuantConfigSchema = z.looseObject({
  format: z.string(),
  convrot: z.boolean().optional(),
  convrot_groupsize: z.number().int().positive().optional(),
  per_channel: z.boolean().optional(),
  full_precision_matrix_mult: z.boolean().optional(),
});

export type ComfyQuantConfig = z.infer<typeof comfyQuantConfigSchema>;

export const quantizationMetadataSchema = z.object({
  // Some converters write a bare format string per layer; ComfyUI's loaders accept it as {format}.
  layers: z.record(z.string(), z.union([comfyQuantConfigSchema, z.string().transform((format) => ({ format }))])),
});

const utf8 = new TextDecoder('utf-8', { fatal: true });

export function parseComfyQuantJson(text: string, where: string): ComfyQuantConfig {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (cause) {
    throw new QuantError('BAD_QUANT_MARKER', `comfy_quant of ${where} is not JSON`, { value: text.slice(0, 200), where, cause, hint: 'a comfy_quant tensor holds UTF-8 JSON like {"format": "int8_tensorwise"}' });
  }
  const r = comfyQuantConfigSchema.safeParse(json);
  if (!r.success) {
    throw new QuantError('BAD_QUANT_MARKER', `comfy_quant of ${where} is not a quant config: ${r.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`, {
      value: json,
      where,
    });
  }
  return r.data;
}

export function parseComfyQuantBytes(bytes: Uint8Array, where: string): ComfyQuantConfig {
  let text: string;
  try {
    text = utf8.decode(bytes);
  } catch (cause) {
    throw new QuantError('BAD_QUANT_MARKER', `comfy_quant of ${where} is not UTF-8`, { where, cause });
  }
  return parseComfyQuantJson(text, where);
}

/**
 * The marker bytes ComfyUI writes: Python `json.dumps(conf)` (", " and ": " separators, keys in
 * insertion order), UTF-8. Byte-identical to comfy-kitchen's checkpoints.
 */
export function encodeComfyQuant(conf: Readonly<Record<string, string | number | boolean>>): Uint8Array {
  const body = Object.entries(conf)
    .map(([k, v]) => `${JSON.stringify(k)}: ${JSON.stringify(v)}`)
    .join(', ');
  return new TextEncoder().encode(`{${body}}`);
}
