#!/usr/bin/env node
// `npm test`: runs every test with vitest and ends with one line `N passed, M failed`, which CI reads.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

// The browser tests (test/browser/) need Debian's Chromium: installed here when missing and we are root
// (a fresh machine of this kind), else said how to get it before the tests fail for want of it.
const chromium = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
if (!existsSync(chromium) && process.env.CHROMIUM_PATH === undefined && process.getuid?.() === 0) {
  process.stderr.write('Installing Debian\'s chromium for the browser tests (apt-get, once)...\n');
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  spawnSync('apt-get', ['update', '-qq'], { stdio: 'inherit', env });
  spawnSync('apt-get', ['install', '-y', '-qq', 'chromium'], { stdio: 'inherit', env });
}
if (!existsSync(chromium)) {
  process.stderr.write(`${chromium} is missing, which the browser tests need: as root, apt-get install -y chromium (or set CHROMIUM_PATH).\n`);
}
const dir = mkdtempSync(join(tmpdir(), 'tracking-test-'));
const report = join(dir, 'report.json');
const vitest = spawn(
  process.execPath,
  ['node_modules/vitest/vitest.mjs', 'run', '--reporter=default', '--reporter=json', `--outputFile.json=${report}`, ...process.argv.slice(2)],
  { stdio: 'inherit' },
);
const code = await new Promise((resolve) => vitest.on('exit', (exitCode, signal) => resolve(exitCode ?? (signal ? 1 : 0))));
let passed = 0;
let failed = 0;
try {
  const result = JSON.parse(readFileSync(report, 'utf8'));
  passed = result.numPassedTests;
  failed = result.numFailedTests + (result.numRuntimeErrorTestSuites ?? 0);
  if (code !== 0 && failed === 0) failed = 1;
} catch {
  failed = Math.max(failed, 1);
}
rmSync(dir, { recursive: true, force: true });
process.stdout.write(`${passed} passed, ${failed} failed\n`);
process.exit(code === 0 && failed === 0 ? 0 : 1);
