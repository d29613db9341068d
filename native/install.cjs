'use strict';
// Builds the addon from source when the package is installed from the registry. Inside the
// monorepo, scripts/setup.sh sets NINODES_SKIP_INSTALL_BUILD and builds through turbo instead,
// so `npm ci` stays fast and the build is cached.
const { spawnSync } = require('node:child_process');

if (process.env.NINODES_SKIP_INSTALL_BUILD === '1') process.exit(0);
const cmakeJs = require.resolve('cmake-js/bin/cmake-js');
const result = spawnSync(process.execPath, [cmakeJs, 'compile', '--out', 'build', '--config', 'Release', '--log-level', 'error'], {
  cwd: __dirname,
  stdio: 'inherit',
});
process.exit(result.status ?? 1);
