#!/usr/bin/env node
// Assembles the prebuilt package for this platform (platforms/<id>/) from the local build:
// ninodes.node plus every shared library it loads that a bare Debian/Ubuntu does not have, copied
// under its soname so the addon's $ORIGIN rpath finds it, and the Debian copyright file of each.
// Then checks that the copy resolves every bundled library from its own folder and loads.
//
//   node native/scripts/pack-prebuilt.mjs [--out <dir>]
//
// --out assembles into <dir> (a copy of the package folder is made there) instead of
// platforms/<id>/; tests use it to pack a scratch copy.
import { execFileSync } from 'node:child_process';
import { copyFileSync, cpSync, existsSync, mkdirSync, readdirSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { basename, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const nativeDir = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const { platformId, localBinding } = createRequire(import.meta.url)('../platform.cjs');

// Libraries every glibc system has (libc6, libstdc++6 and libgcc-s1 are essential on Debian and
// Ubuntu): taken from the system, never bundled. Everything else the addon loads is bundled.
const SYSTEM = /^(libc|libm|libdl|libpthread|librt|libresolv|libutil|ld-linux-x86-64|libstdc\+\+|libgcc_s)\.so(\.|$)/;

function fail(message) {
  console.error(`pack-prebuilt: ${message}`);
  process.exit(1);
}

/** `soname => resolved path` for every library the dynamic loader maps for `file` (the whole closure). */
function ldd(file, env = process.env) {
  const out = execFileSync('ldd', [file], { encoding: 'utf8', env });
  const libs = new Map();
  for (const line of out.split('\n')) {
    const m = /^\s*(\S+) => (\S+|not found)/.exec(line);
    if (m) libs.set(m[1], m[2]);
  }
  return libs;
}

const outFlag = process.argv.indexOf('--out');
const id = platformId();
const packageDir = join(nativeDir, 'platforms', id);
if (!existsSync(join(packageDir, 'package.json'))) fail(`no prebuilt package is defined for ${id} (expected ${packageDir})`);
if (!existsSync(localBinding)) fail(`${localBinding} is missing: build the addon first (npm run build -w @ninodes/native)`);

let out = packageDir;
if (outFlag !== -1) {
  const target = process.argv[outFlag + 1];
  if (!target) fail('--out needs a directory');
  out = resolve(target);
  cpSync(packageDir, out, { recursive: true, filter: (src) => !/\.so\.|ninodes\.node$|licenses$/.test(basename(src)) });
}

// Start clean so a library the addon no longer needs does not linger in the package.
for (const name of readdirSync(out)) if (/\.so\.|^ninodes\.node$/.test(name)) rmSync(join(out, name));
rmSync(join(out, 'licenses'), { recursive: true, force: true });
mkdirSync(join(out, 'licenses'));

const needed = ldd(localBinding, { ...process.env, LD_LIBRARY_PATH: '' });
const missing = [...needed].filter(([, path]) => path === 'not found').map(([soname]) => soname);
if (missing.length) fail(`the local build needs libraries this machine lacks: ${missing.join(', ')}`);

// dpkg records a file under the path its package shipped it at: with merged /usr a library that
// ldd finds in /usr/lib may be registered under /lib (or the other way round), and its real path
// may differ from the soname link ldd printed.
function debianPackageOf(paths) {
  const candidates = paths.flatMap((p) => [p, p.startsWith('/usr/lib/') ? p.slice(4) : p.startsWith('/lib/') ? `/usr${p}` : p]);
  for (const candidate of new Set(candidates)) {
    try {
      return execFileSync('dpkg', ['-S', candidate], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).split(':')[0];
    } catch {
      // not registered under this name; try the next
    }
  }
  fail(`no Debian package owns ${paths.join(' or ')}: cannot bundle its license`);
}

copyFileSync(localBinding, join(out, 'ninodes.node'));
const bundled = [];
for (const [soname, path] of needed) {
  if (SYSTEM.test(soname)) continue;
  const real = realpathSync(path);
  copyFileSync(real, join(out, soname));
  const debianPackage = debianPackageOf([real, path]);
  copyFileSync(join('/usr/share/doc', debianPackage, 'copyright'), join(out, 'licenses', `${debianPackage}.copyright`));
  bundled.push({ soname, from: real, debianPackage });
}
writeFileSync(join(out, 'licenses', 'bundled.json'), `${JSON.stringify(bundled, null, 2)}\n`);

// The copy must find each bundled library beside itself (the rpath works), not on the system.
const resolved = ldd(join(out, 'ninodes.node'), { ...process.env, LD_LIBRARY_PATH: '' });
for (const { soname } of bundled) {
  const path = resolved.get(soname);
  if (path === undefined || dirname(realpathSync(path)) !== realpathSync(out)) {
    fail(`${soname} resolves to ${path} instead of ${out}: is the addon linked with rpath $ORIGIN (native/CMakeLists.txt)?`);
  }
}
execFileSync(process.execPath, ['-e', 'require(process.argv[1])', join(out, 'ninodes.node')], { stdio: 'inherit' });
console.log(`pack-prebuilt: ${out}: ninodes.node + ${bundled.map((b) => b.soname).join(', ')}`);
