#!/usr/bin/env bash
# Everything `npm test` checks, in one turbo run: the layer law, publint and are-the-types-wrong
# (lint), typecheck, and every workspace's tests. Ends with the failed tests' names and one summary
# line of all test counts.
#
# Sized to the machine it runs on: turbo runs ceil(cores/2) tasks at once and each vitest gets an
# equal share of the cores (NINODES_TEST_WORKERS), so a 2-core machine runs one package's tests
# at a time on both cores instead of every package at once on 2 cores (which timed tests out).
set -uo pipefail
cd "$(dirname "$0")/.."

cores=$(node -p 'require("node:os").availableParallelism()')
tasks=$(((cores + 1) / 2))
export NINODES_TEST_WORKERS=$((cores / tasks > 0 ? cores / tasks : 1))
echo "test: $cores cores: $tasks task(s) at a time, $NINODES_TEST_WORKERS test worker(s) each" >&2

npx --no-install turbo run layers lint typecheck test --output-logs=new-only --continue --concurrency="$tasks"
node scripts/test-summary.mjs "$?"
