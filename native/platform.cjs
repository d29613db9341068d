'use strict';
// Where the addon can come from on this machine, in the order the loader tries them, and what to
// tell a user when none loads. Shared by index.cjs (the loader) and install.cjs (the install step).
const path = require('node:path');
const fs = require('node:fs');

/** Prebuilt packages, by platform id. Each holds ninodes.node and the shared libraries it needs. */
const PREBUILT_PACKAGES = { 'linux-x64-gnu': '@ninodes/native-linux-x64-gnu' };

/** The Debian packages a build from source needs (the one line to paste). */
const BUILD_APT_LINE = 'sudo apt-get install -y cmake g++ make libdnnl-dev ocl-icd-opencl-dev opencl-c-headers libgloo-dev';

/**
 * Runs the install script that builds from source. npm 11 lists dependencies whose install scripts
 * were not approved (`allowScripts`) and a stricter npm skips them, so the line approves first.
 */
const REBUILD_LINE = '`npm approve-scripts @ninodes/native && npm rebuild @ninodes/native` (a global install: `npm install -g --allow-scripts=@ninodes/native @ninodes/runner`)';

/** The Debian runtime libraries a build from source links. */
const RUNTIME_APT_LINE = 'sudo apt-get install -y --reinstall libdnnl2 libgloo0';

const localBinding = path.join(__dirname, 'build', 'Release', 'ninodes.node');

let cachedPlatformId;

/** `linux-x64-gnu`: os, cpu and, on Linux, the C library (a glibc binary does not load on musl). */
function platformId() {
  if (cachedPlatformId !== undefined) return cachedPlatformId;
  if (process.platform !== 'linux') return (cachedPlatformId = `${process.platform}-${process.arch}`);
  // The process report names the glibc it runs on (absent on musl); it takes tens of milliseconds,
  // so it is read once and only when no local build exists.
  const glibc = process.report.getReport().header.glibcVersionRuntime;
  return (cachedPlatformId = `linux-${process.arch}-${glibc ? 'gnu' : 'musl'}`);
}

/** Name of the prebuilt package for this machine, or undefined when none is published for it. */
function prebuiltPackage() {
  return PREBUILT_PACKAGES[platformId()];
}

/** Path of the prebuilt ninodes.node when its package is installed and holds one, else undefined. */
function prebuiltBinding() {
  const name = prebuiltPackage();
  if (name === undefined) return undefined;
  let manifest;
  try {
    manifest = require.resolve(`${name}/package.json`, { paths: [__dirname] });
  } catch {
    return undefined; // optional dependency not installed (other platform, --omit=optional, offline)
  }
  const file = path.join(path.dirname(manifest), 'ninodes.node');
  return fs.existsSync(file) ? file : undefined;
}

/**
 * The addon to load, or undefined when none is installed. A local build comes first, as sharp does:
 * it exists only when someone built from source on purpose (the monorepo, or install.cjs because no
 * prebuilt loaded), and it matches the sources, while a prebuilt may be older than them.
 */
function chosenBinding() {
  if (fs.existsSync(localBinding)) return { kind: 'local build', file: localBinding };
  const prebuilt = prebuiltBinding();
  return prebuilt === undefined ? undefined : { kind: `prebuilt ${prebuiltPackage()}`, file: prebuilt };
}

/** What to do when nothing is installed: the prebuilt package if this platform has one, else a build. */
function missingHint() {
  const name = prebuiltPackage();
  const fromSource = `build from source: ${BUILD_APT_LINE}, then ${REBUILD_LINE}`;
  return name === undefined
    ? `no prebuilt binary exists for ${platformId()}; ${fromSource}`
    : `install the prebuilt binary: \`npm install ${name}\` (it is an optional dependency; installs with --omit=optional or --no-optional skip it), or ${fromSource}`;
}

/** What to do when `file` exists but does not load, given the loader's message. */
function loadFailedHint(kind, file, message) {
  const dir = path.dirname(file);
  const lib = /(lib[\w+-]*\.so[.\d]*)/.exec(message)?.[1];
  const ldPath = process.env.LD_LIBRARY_PATH ? ` (LD_LIBRARY_PATH=${process.env.LD_LIBRARY_PATH} is searched before the system)` : '';
  const fromSource = `or build from source: ${BUILD_APT_LINE}, then ${REBUILD_LINE}`;
  const usePrebuilt = prebuiltPackage() === undefined ? '' : `; or delete ${dir} to use the prebuilt ${prebuiltPackage()}`;
  if (kind === 'local build') {
    return lib === undefined
      ? `rebuild it: ${REBUILD_LINE} (needs: ${BUILD_APT_LINE})${usePrebuilt}`
      : `${lib} did not load${ldPath}. The build from source links the system's oneDNN and Gloo: ${RUNTIME_APT_LINE}${usePrebuilt}`;
  }
  if (/GLIBC(XX)?_[0-9.]+' not found/.test(message)) {
    return `the prebuilt binary needs glibc 2.34 and the libstdc++ of GCC 12 or newer (Debian 12, Ubuntu 22.04 and later); ${fromSource}`;
  }
  return `${lib ?? 'ninodes.node'} did not load${ldPath}. The prebuilt package keeps its libraries beside ninodes.node; reinstall it (delete ${dir} and run \`npm install\`), ${fromSource}`;
}

module.exports = { platformId, prebuiltPackage, prebuiltBinding, chosenBinding, missingHint, loadFailedHint, localBinding, BUILD_APT_LINE };
