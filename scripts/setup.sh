#!/usr/bin/env bash
# One idempotent set-up for a fresh Debian/Ubuntu machine, used by `npm run demo` and `npm test`:
# system packages (when root, else the exact apt line to run), npm dependencies, the native addon
# and every package build. A second run with nothing to do takes seconds (turbo serves the builds).
set -euo pipefail
cd "$(dirname "$0")/.."

# cmake, g++ and pkg-config build the addon; oneDNN and Gloo are linked; python3 serves the
# optional peers; chromium renders the bench report test; time measures peak memory of bench children.
apt_packages=(cmake g++ make pkg-config libdnnl-dev ocl-icd-opencl-dev opencl-c-headers libgloo-dev chromium python3 time)
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
    echo "setup: missing system packages. Run: sudo apt-get install -y ${missing[*]}" >&2
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

# Builds the addon and every package; cached by turbo when nothing changed.
npx --no-install turbo run build --output-logs=errors-only >&2
