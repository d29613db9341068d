/**
 * Loads the addon: a local build from source if present, else the prebuilt package for this platform.
 * Throws an Error with `code` ADDON_MISSING (nothing installed) or ADDON_LOAD_FAILED (the file exists but
 * the dynamic loader refused it), plus `file` (the path) and `hint` (what to install or run).
 */
export declare function load(): Record<string, unknown>;
/** Absolute path of the ninodes.node that load() uses, or undefined when none is installed. */
export declare function bindingPath(): string | undefined;
