#!/usr/bin/env bash
# One idempotent set-up for a fresh Debian/Ubuntu machine: the system packages the command needs
# (when root, else the exact apt line to run), npm dependencies, the native addon and every
# package build. A second run with nothing to do takes seconds (turbo serves the builds).
#
#   bash scripts/setup.sh demo    # build only: what `npm run demo` needs (the default)
#   bash scripts/setup.sh bench   # + python3 and time, for `npm run bench`
#   bash scripts/setup.sh test    # + chromium, redis-server, iproute2, for `npm test`
#
# The package lists live in scripts/system-packages.txt, which the system-packages check in
# tools/repo-checks reads too.
set -euo pipefail
cd "$(dirname "$0")/.."

mode=${1:-demo}
case "$mode" in
  demo) sections=(build) ;;
  bench) sections=(build bench) ;;
  test) sections=(build bench test) ;;
  *)
    echo "setup: unknown mode '$mode'; use demo, bench or test" >&2
    exit 2
    ;;
esac

# Packages of the chosen [sections] of scripts/system-packages.txt (comments after '#').
apt_packages=()
section=
while read -r line; do
  line=${line%%#*}
  read -r line <<<"$line" || true
  [ -n "$line" ] || continue
  if [[ $line =~ ^\[([a-z]+)\]$ ]]; then
    section=${BASH_REMATCH[1]}
  elif [[ " ${sections[*]} " == *" $section "* ]]; then
    apt_packages+=("$line")
  fi
done <scripts/system-packages.txt

missing=()
for pkg in "${apt_packages[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if ((${#missing[@]})); then
  if [ "$(id -u)" = 0 ]; then
    echo "setup: installing ${missing[*]}" >&2
    if [ -z "$(find /var/lib/apt/lists -maxdepth 1 -name '*_Packages' -mmin -1440 2>/dev/null | head -n 1)" ]; then
      apt-get update -qq >&2
    fi
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
  else
    echo "setup: missing system packages. Run: sudo apt-get install -y --no-install-recommends ${missing[*]}" >&2
    exit 1
  fi
fi

# npm ci only when the lockfile changed since the last install.
stamp=node_modules/.ninodes-install-stamp
if [ ! -f "$stamp" ] || [ package-lock.json -nt "$stamp" ]; then
  echo "setup: npm ci" >&2
  NINODES_SKIP_INSTALL_BUILD=1 npm ci --no-audit --no-fund --loglevel=error >&2
  touch "$stamp"
fi

# The native addon first and on its own, with its compiler output shown: it is the one step that
# takes minutes (a C++ build) the first time, and a silent five minutes looks like a hang.
# Then every package. turbo serves both from its cache when nothing changed.
echo "setup: building the native addon (C++: a few minutes the first time, seconds after)" >&2
npx --no-install turbo run build --filter=@ninodes/native --output-logs=new-only >&2
echo "setup: building the packages" >&2
npx --no-install turbo run build --output-logs=errors-only >&2

# npm links a workspace's bin only if the file existed at install time, and dist/ did not: link the
# two CLIs now, so `npx ninodes` (and node_modules/.bin on PATH) runs this clone's CLI and never asks
# the registry for a package of that name. Absolute links: setup runs again after a clone moves.
mkdir -p node_modules/.bin
for bin in ninodes:apps/runner/dist/cli.js ninodes-bench:apps/bench/dist/cli.js; do
  chmod +x "${bin#*:}"
  ln -sfn "$PWD/${bin#*:}" "node_modules/.bin/${bin%%:*}"
done
