#!/usr/bin/env bash
# Everything `npm test` checks, in one turbo run: the layer law, publint and are-the-types-wrong
# (lint), typecheck, and every workspace's tests. Ends with one summary line of all test counts.
set -uo pipefail
cd "$(dirname "$0")/.."

npx --no-install turbo run layers lint typecheck test --output-logs=new-only --continue
node scripts/test-summary.mjs "$?"
