import { DistorchError } from './error-codes.js';
import { z } from 'zod';

/*
 * What an allocation string means, as data (the "plan input"). The parser produces it, the planner
 * consumes it, formatAllocation turns it back into the canonical string. Four modes:
 *   bytes    `cuda:0,2.5gb;cpu,*`      how many bytes of the model each device holds
 *   ratio    `cuda:0,25%;cpu,75%`      shares of the model, normalized by their sum
 *   fraction `cuda:0,0.5;cpu,1.0`      share of each device's total memory
 *   virtual  `#cuda:0;4gb;cpu,disk`    compute device + bytes moved off it + donors, filled in order
 * `*` (bytes and fraction modes) is the overflow device: whatever the others do not hold.
 */

// Canonical @ninodes/device ids (formatDeviceId output).
const deviceIdSchema = z.string().regex(/^(cpu|disk|mps|(cuda|hip|xpu):(0|[1-9][0-9]*))$/, 'a canonical device id: cpu, disk, mps, cuda:N, hip:N, xpu:N');
const bytesSchema = z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER);
/** 1-based column of the entry in the string it was parsed from (absent for hand-built specs). */
const columnSchema = z.number().int().positive().optional();

const bytesEntry = z.strictObject({ device: deviceIdSchema, amount: z.union([bytesSchema, z.literal('*')]), column: columnSchema, valueColumn: columnSchema });
const ratioEntry = z.strictObject({ device: deviceIdSchema, amount: z.number().finite().nonnegative(), column: columnSchema, valueColumn: columnSchema });
const fractionEntry = z.strictObject({ device: deviceIdSchema, amount: z.union([z.number().finite().min(0).max(1), z.literal('*')]), column: columnSchema, valueColumn: columnSchema });

function uniqueDevices(entries: readonly { device: string }[], ctx: z.RefinementCtx): void {
  const seen = new Set<string>();
  for (const e of entries) {
    if (seen.has(e.device)) ctx.addIssue({ code: 'custom', message: `device '${e.device}' appears twice` });
    seen.add(e.device);
  }
}
function oneWildcard(entries: readonly { amount: unknown }[], ctx: z.RefinementCtx): void {
  if (entries.filter((e) => e.amount === '*').length > 1) ctx.addIssue({ code: 'custom', message: "'*' may appear once" });
}

export const allocationSpecSchema = z.discriminatedUnion('mode', [
  z
    .strictObject({ mode: z.literal('bytes'), entries: z.array(bytesEntry).min(1), compute: deviceIdSchema.optional() })
    .superRefine((s, ctx) => {
      uniqueDevices(s.entries, ctx);
      oneWildcard(s.entries, ctx);
    }),
  z
    .strictObject({ mode: z.literal('ratio'), entries: z.array(ratioEntry).min(1), compute: deviceIdSchema.optional() })
    .superRefine((s, ctx) => {
      uniqueDevices(s.entries, ctx);
      if (s.entries.every((e) => e.amount === 0)) ctx.addIssue({ code: 'custom', message: 'ratios sum to zero' });
    }),
  z
    .strictObject({ mode: z.literal('fraction'), entries: z.array(fractionEntry).min(1), compute: deviceIdSchema.optional() })
    .superRefine((s, ctx) => {
      uniqueDevices(s.entries, ctx);
      oneWildcard(s.entries, ctx);
      // `cpu,*` alone has no amount to tell the mode by; the parser reads it as bytes, so must a spec.
      if (s.entries.every((e) => e.amount === '*')) ctx.addIssue({ code: 'custom', message: "a list of only '*' is a bytes allocation" });
    }),
  z
    .strictObject({
      mode: z.literal('virtual'),
      compute: deviceIdSchema.refine((d) => d !== 'disk', 'disk cannot compute'),
      virtualBytes: bytesSchema,
      donors: z.array(deviceIdSchema).min(1),
      column: columnSchema,
      valueColumn: columnSchema,
    })
    .superRefine((s, ctx) => {
      if (new Set(s.donors).size !== s.donors.length) ctx.addIssue({ code: 'custom', message: 'a donor appears twice' });
      if (s.donors.includes(s.compute)) ctx.addIssue({ code: 'custom', message: 'the compute device cannot donate to itself' });
    }),
]);

export type AllocationSpec = z.infer<typeof allocationSpecSchema>;
export type AllocationMode = AllocationSpec['mode'];
export type ExpertSpec = Exclude<AllocationSpec, { mode: 'virtual' }>;

/** Validates a spec built by code or read from JSON (the parser's output always passes). */
export function validateAllocationSpec(value: unknown, where = 'allocation'): AllocationSpec {
  const result = allocationSpecSchema.safeParse(value);
  if (result.success) return result.data;
  const issue = result.error.issues[0];
  const path = issue === undefined ? '' : issue.path.map(String).join('.');
  throw new DistorchError('ALLOC_INVALID_SPEC', `invalid allocation: ${issue?.message ?? 'unknown problem'}${path === '' ? '' : ` at '${path}'`}`, {
    value,
    where: path === '' ? where : `${where}: ${path}`,
    hint: 'e.g. {"mode":"bytes","entries":[{"device":"cuda:0","amount":2684354560},{"device":"cpu","amount":"*"}]}',
  });
}
