#!/usr/bin/env node
// `npm run bench:profile`: CPU profiles of the gateway, OMS and DMS under one scenario's load (default:
// list shipments, first page). The services start with bench/lib/profiler-preload.mjs (V8's sampling
// profiler, as `--cpu-prof`), which samples only between two SIGWINCH signals: after the warm-up, for
// BENCH_DURATION seconds of load. Reuses the seeded databases of `npm run bench` when they match
// (as BENCH_REUSE=1), else seeds them. Writes bench/results/profiles/*.cpuprofile (open them in Chrome
// DevTools) and prints each service's top functions; bench/results/profile.json has the same figures.
//   BENCH_PROFILE_SCENARIO=list|deep|get|devices|create|assign|token (default list)
import { existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { readBenchConfig } from './lib/config.mjs';
import { summarize } from './cpuprofile-summary.mjs';
import { issueToken } from './lib/http.mjs';
import { measure } from './lib/load.mjs';
import { print, writeResults } from './lib/report.mjs';
import * as scenarios from './lib/scenarios.mjs';
import { startWithData } from './lib/seed.mjs';
import { BenchStack, sleep } from './lib/stack.mjs';

const SCENARIOS = {
  list: scenarios.listShipments,
  deep: scenarios.listShipmentsDeep,
  get: scenarios.getShipment,
  devices: scenarios.listDevices,
  create: scenarios.createShipment,
  assign: scenarios.assignDevice,
  token: scenarios.tokenIssuance,
};
const PROFILE_WAIT_MS = 30000;

const config = readBenchConfig();
const scenarioKey = process.env.BENCH_PROFILE_SCENARIO ?? 'list';
if (!SCENARIOS[scenarioKey]) throw new Error(`BENCH_PROFILE_SCENARIO must be one of ${Object.keys(SCENARIOS).join(', ')}`);
// As `npm run bench` runs it: every process of `npm start`, with its settings (bench/lib/stack.mjs, asStarted).
const stack = await new BenchStack(config, { profile: true, asStarted: true, services: ['oms', 'dms', 'worker', 'gateway', 'device-gateway'] }).prepare();
const results = { startedAt: new Date().toISOString(), scenario: scenarioKey, config: { ...config } };

async function main() {
  rmSync(stack.profileDir, { recursive: true, force: true });
  const data = await startWithData(stack, config, results, { reuse: process.env.BENCH_REUSE !== '0' });
  data.token = await issueToken(stack.base, data.credentials);
  const scenario = SCENARIOS[scenarioKey](data);

  print(`\nWarming up (${config.warmup} s), then profiling ${config.duration} s of "${scenario.name}" at ${config.connections} connections...`);
  await measure([scenario], { ...config, warmup: 0, runs: 1, duration: Math.max(config.warmup, 1) }, () => {});
  stack.signal('SIGWINCH');
  await sleep(200);
  [results.load] = await measure([scenario], { ...config, warmup: 0, runs: 1 });
  stack.signal('SIGWINCH');
  const files = await waitForProfiles(Object.values(stack.pids()));

  results.profiles = [];
  for (const file of files) {
    const { text, data: summary } = summarize(JSON.parse(readFileSync(file, 'utf8')), file.split('/').at(-1));
    print(text);
    results.profiles.push({ file, ...summary });
  }
  print(`\nProfiles: ${stack.profileDir}; figures: ${writeResults('profile.json', results)}`);
}

async function waitForProfiles(pids) {
  const deadline = Date.now() + PROFILE_WAIT_MS;
  while (Date.now() < deadline) {
    const files = existsSync(stack.profileDir) ? readdirSync(stack.profileDir).filter((name) => name.endsWith('.cpuprofile')) : [];
    if (pids.every((pid) => files.some((name) => name.endsWith(`-${pid}.cpuprofile`)))) {
      return pids.map((pid) => join(stack.profileDir, files.find((name) => name.endsWith(`-${pid}.cpuprofile`))));
    }
    await sleep(200);
  }
  throw new Error(`the services did not write their profiles within ${PROFILE_WAIT_MS / 1000} s`);
}

let exitCode = 0;
try {
  await main();
} catch (error) {
  process.stderr.write(`\nbench:profile failed: ${error.stack ?? error}\n`);
  exitCode = 1;
} finally {
  await stack.close();
}
process.exit(exitCode);
