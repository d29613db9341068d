'use strict';
// Locates and loads ninodes.node: a local build from source if there is one, else the prebuilt
// package for this platform (see platform.cjs). Only @ninodes/kernels calls this (the layer check
// enforces it); it turns the coded errors below into NinodesErrors.
const { chosenBinding, missingHint, loadFailedHint, localBinding, platformId } = require('./platform.cjs');

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
  const binding = chosenBinding();
  if (binding === undefined) {
    throw addonError('ADDON_MISSING', `the ninodes native addon is not installed: no build from source and no prebuilt package for ${platformId()}`, localBinding, missingHint());
  }
  try {
    cached = require(binding.file);
  } catch (error) {
    // No fallback to the prebuilt when a local build fails: the local build is deliberate, and
    // loading another binary would hide why it failed.
    const message = error instanceof Error ? error.message : String(error);
    throw addonError('ADDON_LOAD_FAILED', `the ninodes native addon (${binding.kind}) failed to load: ${message}`, binding.file, loadFailedHint(binding.kind, binding.file, message), error);
  }
  return cached;
}

/** The file load() loads (or would), for build info and error messages; undefined when none exists. */
function bindingPath() {
  return chosenBinding()?.file;
}

module.exports = { load, bindingPath };
