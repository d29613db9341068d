/**
 * The visibility lists runtimes honour (CUDA_VISIBLE_DEVICES, ROCR_VISIBLE_DEVICES,
 * HIP_VISIBLE_DEVICES): a comma list of indices into the devices visible so far, or UUID prefixes
 * (`GPU-3c99...`). The selected devices are renumbered from 0 in list order. As in CUDA, an entry
 * that matches nothing (or repeats one) ends the list: devices after it stay hidden.
 */
export interface VisibilityResult<T> {
  devices: T[];
  /** The entry that ended the list early, if any. */
  invalid: string | null;
}

export function applyVisibility<T>(devices: readonly T[], spec: string | undefined, uuidOf: (d: T) => string | null): VisibilityResult<T> {
  if (spec === undefined) return { devices: [...devices], invalid: null };
  const out: T[] = [];
  const trimmed = spec.trim();
  if (trimmed === '') return { devices: out, invalid: null };
  for (const raw of trimmed.split(',')) {
    const entry = raw.trim();
    let found: T | undefined;
    if (/^[0-9]+$/.test(entry)) {
      found = devices[Number(entry)];
    } else if (/^gpu-[0-9a-f-]+$/i.test(entry)) {
      const matches = devices.filter((d) => uuidOf(d)?.toLowerCase().startsWith(entry.toLowerCase()) === true);
      found = matches.length === 1 ? matches[0] : undefined;
    }
    if (found === undefined || out.includes(found)) return { devices: out, invalid: entry };
    out.push(found);
  }
  return { devices: out, invalid: null };
}
