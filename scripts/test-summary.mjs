// Adds up every workspace's vitest JSON report into the one closing line CI reads:
// "tests: N passed, N failed, N skipped", after the names of the tests that failed (turbo's
// interleaved logs bury them). A missing report counts as a failure, since that
// workspace's tests did not run; so does a failed check task (layers, lint, typecheck), whose exit
// status turbo passes in as the first argument.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

let passed = 0;
let failed = 0;
let skipped = 0;
const missing = [];
const failures = [];
for (const group of ['packages', 'apps', 'tools']) {
  for (const name of readdirSync(group)) {
    const dir = join(group, name);
    if (!existsSync(join(dir, 'package.json'))) continue;
    const report = join(dir, 'test-results.json');
    if (!existsSync(report)) {
      missing.push(dir);
      continue;
    }
    const json = JSON.parse(readFileSync(report, 'utf8'));
    passed += json.numPassedTests;
    failed += json.numFailedTests;
    skipped += json.numPendingTests + (json.numTodoTests ?? 0);
    for (const file of json.testResults ?? []) {
      const where = file.name?.startsWith(process.cwd()) ? file.name.slice(process.cwd().length + 1) : file.name;
      for (const t of file.assertionResults ?? []) {
        if (t.status === 'failed') failures.push(`${where} > ${t.fullName}: ${String(t.failureMessages?.[0] ?? '').split('\n')[0]}`);
      }
      // A file that failed to load has no assertion results but a message of its own.
      if (file.status === 'failed' && (file.assertionResults ?? []).length === 0) failures.push(`${where}: ${String(file.message ?? 'failed to run').split('\n')[0]}`);
    }
  }
}
if (failures.length > 0) console.error(`\nfailed tests:\n${failures.map((f) => `  ${f}`).join('\n')}\n`);
for (const dir of missing) console.error(`no test report from ${dir}: its tests did not run`);
const checksFailed = Number(process.argv[2] ?? 0) !== 0 && failed === 0 && missing.length === 0 ? 1 : 0;
if (checksFailed) console.error('a check task failed (layers, lint, typecheck or a test run): see the turbo output above');
console.log(`tests: ${passed} passed, ${failed + missing.length + checksFailed} failed, ${skipped} skipped`);
process.exit(failed > 0 || missing.length > 0 || checksFailed ? 1 : 0);
