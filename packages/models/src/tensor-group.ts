/** Repeated-block containers of the families ninodes knows (H3, WAN, Flux, H3's text refiner). */
const BLOCK_GROUP = /^((?:token_refiner\.)?blocks\.\d+|double_blocks\.\d+|single_blocks\.\d+)\./;

/**
 * The module a tensor belongs to for per-block accounting ('blocks.12', 'double_blocks.3',
 * 'final_layer', 'video_patch_proj', ...), after removing the checkpoint's key prefix.
 */
export function tensorGroup(name: string, prefix = ''): string {
  const key = prefix !== '' && name.startsWith(prefix) ? name.slice(prefix.length) : name;
  const m = BLOCK_GROUP.exec(key);
  if (m) return m[1] as string;
  const dot = key.indexOf('.');
  return dot < 0 ? key : key.slice(0, dot);
}

/** Bytes per group, in first-seen order (blocks in index order for well-formed files). */
export function bytesByGroup(entries: readonly { readonly name: string; readonly byteLength: number }[], prefix = ''): Map<string, number> {
  const out = new Map<string, number>();
  for (const e of entries) {
    const g = tensorGroup(e.name, prefix);
    out.set(g, (out.get(g) ?? 0) + e.byteLength);
  }
  return out;
}
