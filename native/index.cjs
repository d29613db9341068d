'use strict';
// Locates and loads ninodes.node. Only @ninodes/kernels calls this (the layer check enforces it).
const path = require('node:path');
const fs = require('node:fs');

const bindingPath = path.join(__dirname, 'build', 'Release', 'ninodes.node');
let cached;

function load() {
  if (cached) return cached;
  if (!fs.existsSync(bindingPath)) {
    const error = new Error(
      `ninodes native addon not built: ${bindingPath} is missing. Run \`bash scripts/setup.sh\` in the repo, ` +
        'or reinstall @ninodes/native (it builds from source; needs cmake, g++, libdnnl-dev, libgloo-dev).',
    );
    error.code = 'NATIVE_NOT_BUILT';
    throw error;
  }
  cached = require(bindingPath);
  return cached;
}

module.exports = { load, bindingPath };
