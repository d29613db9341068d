'use strict';
// Install step of @ninodes/native. When the prebuilt package for this platform is installed and its
// addon loads, there is nothing to build. Otherwise the addon is built from source with cmake-js
// (against node-api-headers, so no Node headers are downloaded). Inside the monorepo,
// scripts/setup.sh sets NINODES_SKIP_INSTALL_BUILD=1 and builds through turbo instead, so `npm ci`
// stays fast and the build is cached.
const { spawnSync } = require('node:child_process');
const { prebuiltBinding, prebuiltPackage, platformId, BUILD_APT_LINE } = require('./platform.cjs');

if (process.env.NINODES_SKIP_INSTALL_BUILD === '1') process.exit(0);

const prebuilt = prebuiltBinding();
if (prebuilt !== undefined) {
  // Loaded in a child first: a binary that does not load here (older glibc, a broken download)
  // must lead to a build from source, and a crash in it must not take npm down.
  const probe = spawnSync(process.execPath, ['-e', 'require(process.argv[1])', prebuilt], { encoding: 'utf8', timeout: 60_000 });
  if (probe.status === 0) process.exit(0);
  const why = (probe.stderr || probe.error?.message || `exit ${probe.status ?? probe.signal}`).trim().split('\n').find((l) => /error/i.test(l)) ?? 'it did not load';
  console.warn(`@ninodes/native: the prebuilt ${prebuiltPackage()} does not load here (${why}); building from source`);
} else {
  const name = prebuiltPackage();
  console.warn(
    name === undefined
      ? `@ninodes/native: no prebuilt binary for ${platformId()}; building from source`
      : `@ninodes/native: ${name} is not installed; building from source`,
  );
}

const cmakeJs = require.resolve('cmake-js/bin/cmake-js');
const result = spawnSync(process.execPath, [cmakeJs, 'compile', '--out', 'build', '--config', 'Release', '--log-level', 'error'], {
  cwd: __dirname,
  stdio: 'inherit',
});
if (result.status !== 0) {
  console.error(`@ninodes/native: the build from source failed. It needs cmake, a C++17 compiler, oneDNN and Gloo: ${BUILD_APT_LINE}`);
}
process.exit(result.status ?? 1);
