import { fsError, readSmallFile } from '@ninodes/kernels';
import { DeviceError } from './error-codes.js';
import { z } from 'zod';

/** What an architecture prefers; the planner and runner read these instead of branching on names. */
export interface ArchProfile {
  arch: string;
  vendor: 'amd' | 'nvidia' | 'cpu';
  /** False for profiles derived by rule for an architecture without an entry here. */
  known: boolean;
  /** dtype activations are computed in when weights allow a choice. */
  preferredComputeDtype: 'f32' | 'bf16' | 'f16';
  /** Matrix hardware (tensor cores, WMMA, AMX/VNNI through oneDNN) per input dtype. */
  matrix: { fp8: boolean; int8: boolean; bf16: boolean };
  /** Multiplier on the estimated attention working set when budgeting memory. */
  attentionMemoryModifier: number;
  /** Preferred spatial tile size range (pixels) for tiled VAE decode and similar tiling. */
  tileSize: { min: number; max: number };
  /** Whether fp32 matmuls may run as TF32. */
  tf32: boolean;
  /** Device memory is host RAM (APUs): it competes with the CPU's budget. */
  unifiedMemory: boolean;
}

type Entry = Omit<ArchProfile, 'arch' | 'known'>;

// Sources: seeds/000 (gfx1151 ROCm tuning: fp32 for stability, tiles 768-1024, TF32 off, 1.5x
// attention), seeds/002 (gfx1100 has int8 WMMA but no fp8 matrix unit; fp8 arrives with gfx12),
// vendor ISA documents for the rest (fp8 tensor cores from sm_89, TF32 from sm_80).
const BUILTIN: Record<string, Entry> = {
  gfx1151: { vendor: 'amd', preferredComputeDtype: 'f32', matrix: { fp8: false, int8: true, bf16: true }, attentionMemoryModifier: 1.5, tileSize: { min: 768, max: 1024 }, tf32: false, unifiedMemory: true },
  gfx1100: { vendor: 'amd', preferredComputeDtype: 'bf16', matrix: { fp8: false, int8: true, bf16: true }, attentionMemoryModifier: 1.0, tileSize: { min: 512, max: 768 }, tf32: false, unifiedMemory: false },
  gfx1201: { vendor: 'amd', preferredComputeDtype: 'bf16', matrix: { fp8: true, int8: true, bf16: true }, attentionMemoryModifier: 1.0, tileSize: { min: 512, max: 768 }, tf32: false, unifiedMemory: false },
  sm_80: { vendor: 'nvidia', preferredComputeDtype: 'bf16', matrix: { fp8: false, int8: true, bf16: true }, attentionMemoryModifier: 1.0, tileSize: { min: 768, max: 1024 }, tf32: true, unifiedMemory: false },
  sm_89: { vendor: 'nvidia', preferredComputeDtype: 'bf16', matrix: { fp8: true, int8: true, bf16: true }, attentionMemoryModifier: 1.0, tileSize: { min: 768, max: 1024 }, tf32: true, unifiedMemory: false },
  sm_90: { vendor: 'nvidia', preferredComputeDtype: 'bf16', matrix: { fp8: true, int8: true, bf16: true }, attentionMemoryModifier: 1.0, tileSize: { min: 768, max: 1024 }, tf32: true, unifiedMemory: false },
  // AMX tiles run int8 (and bf16) matrix products; the hand-written int8 GEMM uses them.
  'cpu-amx': { vendor: 'cpu', preferredComputeDtype: 'f32', matrix: { fp8: false, int8: true, bf16: true }, attentionMemoryModifier: 1.0, tileSize: { min: 512, max: 768 }, tf32: false, unifiedMemory: false },
  'cpu-avx512': { vendor: 'cpu', preferredComputeDtype: 'f32', matrix: { fp8: false, int8: true, bf16: false }, attentionMemoryModifier: 1.0, tileSize: { min: 512, max: 768 }, tf32: false, unifiedMemory: false },
  'cpu-avx2': { vendor: 'cpu', preferredComputeDtype: 'f32', matrix: { fp8: false, int8: true, bf16: false }, attentionMemoryModifier: 1.0, tileSize: { min: 512, max: 768 }, tf32: false, unifiedMemory: false },
  'cpu-scalar': { vendor: 'cpu', preferredComputeDtype: 'f32', matrix: { fp8: false, int8: false, bf16: false }, attentionMemoryModifier: 1.0, tileSize: { min: 512, max: 512 }, tf32: false, unifiedMemory: false },
};

/** AMD targets that are integrated GPUs sharing system RAM. */
export const AMD_APU_TARGETS: readonly string[] = ['gfx902', 'gfx90c', 'gfx1035', 'gfx1036', 'gfx1103', 'gfx1150', 'gfx1151', 'gfx1152'];

export const BUILTIN_ARCHS: readonly string[] = Object.keys(BUILTIN);

function clone(arch: string, known: boolean, e: Entry): ArchProfile {
  return { arch, known, ...e, matrix: { ...e.matrix }, tileSize: { ...e.tileSize } };
}

// Architectures without an entry get a profile derived from what the family is known to have,
// conservative where unsure (no fp8, no int8 claim for AMD targets we have not seen).
function derived(arch: string): ArchProfile | undefined {
  const sm = /^sm_(\d+)(\d)$/.exec(arch);
  if (sm !== null) {
    const cc = Number(sm[1]) * 10 + Number(sm[2]);
    return clone(arch, false, {
      vendor: 'nvidia',
      preferredComputeDtype: cc >= 80 ? 'bf16' : 'f16',
      matrix: { fp8: cc >= 89, int8: cc >= 72, bf16: cc >= 80 },
      attentionMemoryModifier: 1.0,
      tileSize: { min: 512, max: 1024 },
      tf32: cc >= 80,
      unifiedMemory: false,
    });
  }
  const gfx = /^gfx([0-9]+)[0-9a-f]{2}$/.exec(arch);
  if (gfx !== null) {
    const major = Number(gfx[1]);
    return clone(arch, false, {
      vendor: 'amd',
      preferredComputeDtype: major >= 11 ? 'bf16' : 'f32',
      matrix: { fp8: major >= 12, int8: major >= 11, bf16: major >= 11 },
      attentionMemoryModifier: AMD_APU_TARGETS.includes(arch) ? 1.5 : 1.0,
      tileSize: { min: 512, max: 768 },
      tf32: false,
      unifiedMemory: AMD_APU_TARGETS.includes(arch),
    });
  }
  return undefined;
}

const tileSchema = z.strictObject({ min: z.number().int().min(64).max(16384), max: z.number().int().min(64).max(16384) });
const overrideSchema = z.strictObject({
  extends: z.string().min(1).optional(),
  vendor: z.enum(['amd', 'nvidia', 'cpu']).optional(),
  preferredComputeDtype: z.enum(['f32', 'bf16', 'f16']).optional(),
  matrix: z.strictObject({ fp8: z.boolean(), int8: z.boolean(), bf16: z.boolean() }).partial().optional(),
  attentionMemoryModifier: z.number().positive().max(16).optional(),
  tileSize: tileSchema.refine((t) => t.min <= t.max, { message: 'tileSize.min must not exceed tileSize.max' }).optional(),
  tf32: z.boolean().optional(),
  unifiedMemory: z.boolean().optional(),
});
export const profileConfigSchema = z.strictObject({
  profiles: z.record(z.string().regex(/^[a-z0-9_.-]+$/, 'arch names are lowercase: gfx1100, sm_89, cpu-avx2'), overrideSchema),
});
export type ProfileOverride = z.infer<typeof overrideSchema>;
export type ProfileConfig = z.infer<typeof profileConfigSchema>;

/** Validates an already-parsed config object; `where` names its origin for errors. */
export function parseProfileConfig(value: unknown, where = 'profile config'): ProfileConfig {
  const result = profileConfigSchema.safeParse(value);
  if (!result.success) {
    const issue = result.error.issues[0];
    const path = issue === undefined ? '' : issue.path.map(String).join('.');
    throw new DeviceError('PROFILE_CONFIG_INVALID', `invalid architecture profile config: ${issue?.message ?? 'unknown problem'}${path === '' ? '' : ` at '${path}'`}`, {
      value,
      where: path === '' ? where : `${where}: ${path}`,
      hint: `expected {"profiles": {"<arch>": {"attentionMemoryModifier": 1.5, "tileSize": {"min": 768, "max": 1024}, ...}}}; known archs: ${BUILTIN_ARCHS.join(', ')}`,
    });
  }
  const config = result.data;
  for (const [arch, o] of Object.entries(config.profiles)) {
    if (BUILTIN[arch] === undefined && derived(arch) === undefined && o.extends === undefined) {
      throw new DeviceError('PROFILE_CONFIG_INVALID', `profile '${arch}' is not a known architecture and has no "extends"`, {
        value: arch,
        where: `${where}: profiles.${arch}`,
        hint: `add "extends": one of ${BUILTIN_ARCHS.join(', ')}`,
      });
    }
  }
  return config;
}

/** Reads and validates a JSON profile override file. */
export function loadProfileConfig(path: string): ProfileConfig {
  let text: string;
  try {
    text = readSmallFile(path, { maxBytes: 1 << 20 }).data.toString('utf8');
  } catch (cause) {
    // ENOENT, EACCES, EISDIR...: the one errno -> code mapping of kernels.
    throw fsError(cause, path, 'cannot read architecture profile config');
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (cause) {
    throw new DeviceError('PROFILE_CONFIG_INVALID', `architecture profile config is not valid JSON: ${(cause as Error).message}`, { value: text.slice(0, 200), where: path, hint: 'the file must be one JSON object', cause });
  }
  return parseProfileConfig(json, path);
}

/**
 * The profile for an architecture (`gfx1100`, `sm_89`, `cpu-avx2`), with user overrides applied.
 * Unknown architectures get a rule-derived profile (`known: false`); names that match no family
 * fall back to `cpu-scalar`, the most conservative profile, with `known: false`.
 */
export function archProfile(arch: string, config?: ProfileConfig, seen: readonly string[] = []): ArchProfile {
  const override = config?.profiles[arch];
  let base: ArchProfile;
  if (override?.extends !== undefined) {
    if (seen.includes(arch)) {
      throw new DeviceError('PROFILE_CONFIG_INVALID', `profile "extends" forms a cycle: ${[...seen, arch].join(' -> ')}`, { value: arch, where: `profiles.${arch}.extends` });
    }
    base = { ...archProfile(override.extends, config, [...seen, arch]), arch, known: BUILTIN[arch] !== undefined };
  } else {
    const builtin = BUILTIN[arch];
    base = builtin !== undefined ? clone(arch, true, builtin) : (derived(arch) ?? { ...clone(arch, false, BUILTIN['cpu-scalar'] as Entry) });
  }
  if (override === undefined) return base;
  const { extends: _ignored, matrix, tileSize, ...rest } = override;
  const defined = Object.fromEntries(Object.entries(rest).filter(([, v]) => v !== undefined)) as Partial<Entry>;
  return {
    ...base,
    ...defined,
    matrix: { ...base.matrix, ...Object.fromEntries(Object.entries(matrix ?? {}).filter(([, v]) => v !== undefined)) },
    tileSize: tileSize ?? base.tileSize,
  };
}
