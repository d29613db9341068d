'use strict';
// Locates and loads ninodes.node: a local build from source if there is one, else the prebuilt
// package for this platform (see platform.cjs). Only @ninodes/kernels calls this (the layer check
// enforces it); it turns the coded errors below into NinodesErrors.
const { candidates, missingHint, loadFailedHint, localBinding } = require('./platform.cjs');

let cached;

/** An Error with the fields @ninodes/kernels copies into a NinodesError (this package is below it). */
function addonError(code, message, file, hint, cause) {
  const error = new Error(message, cause === undefined ? undefined : { cause });
  error.code = code;
  error.file = file;
  error.hint = hint;
  return error;
}

function load() {
  if (cached) return cached;
  const [first] = candidates();
  if (first === undefined) {
    throw addonError('ADDON_MISSING', 'the ninodes native addon is not installed: no prebuilt package for this platform and no build from source', localBinding, missingHint());
  }
  try {
    cached = require(first.file);
  } catch (error) {
    // The first existing candidate is the one the user chose (a local build is deliberate); falling
    // back to another would hide why it failed.
    const message = error instanceof Error ? error.message : String(error);
    throw addonError('ADDON_LOAD_FAILED', `the ninodes native addon (${first.kind}) failed to load: ${message}`, first.file, loadFailedHint(first.kind, first.file, message), error);
  }
  return cached;
}

/** The file load() loads (or would), for build info and error messages; undefined when none exists. */
function bindingPath() {
  return candidates()[0]?.file;
}

module.exports = { load, bindingPath };
