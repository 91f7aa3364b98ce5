// Drives a server with autocannon (programmatic API): one unmeasured warm-up run, then `runs` measured
// runs; a scenario's figures are the median over its runs, each figure taken on its own.
import { loadavg } from 'node:os';
import autocannon from 'autocannon';
import { CpuMeter } from './cpu.mjs';

/**
 * A scenario: { name, url (origin), path, method?, headers?, body?, setupRequest?, onResponse?, beforeRun?, cpu? }.
 * setupRequest(request) may change path/body per request (see autocannon's `requests`); `cpu` is a
 * CpuMeter of the server's processes.
 */
async function runOnce(scenario, config, duration) {
  const loadAverage = loadavg()[0];
  const before = await scenario.cpu?.sample();
  const ownBefore = process.cpuUsage();
  const result = await drive(scenario, config, duration);
  const own = process.cpuUsage(ownBefore);
  const summary = summarize(result);
  summary.loadAverage = Math.round(loadAverage * 100) / 100;
  if (before) {
    const after = await scenario.cpu.sample();
    summary.cpuMsPerRequest = CpuMeter.perRequest(before, after, summary.requests);
    summary.ioCallsPerRequest = CpuMeter.ioCallsPerRequest(before, after, summary.requests);
  }
  summary.loadGeneratorCpuMsPerRequest = Math.round(((own.user + own.system) / 1000 / Math.max(1, summary.requests)) * 100) / 100;
  return summary;
}

function drive(scenario, config, duration) {
  const request = { method: scenario.method ?? 'GET', path: scenario.path };
  if (scenario.body !== undefined) request.body = scenario.body;
  if (scenario.setupRequest) request.setupRequest = scenario.setupRequest;
  if (scenario.onResponse) request.onResponse = scenario.onResponse;
  return autocannon({
    url: scenario.url,
    connections: config.connections,
    duration,
    headers: scenario.headers ?? {},
    requests: [request],
    timeout: 30,
  });
}

function summarize(result) {
  const statusCodes = Object.fromEntries(Object.entries(result.statusCodeStats).map(([code, { count }]) => [code, count]));
  return {
    // Successful answers per second: a server that fails fast must not look fast.
    rps: Math.round(result['2xx'] / result.duration),
    p50: result.latency.p50,
    p90: result.latency.p90,
    p99: result.latency.p99,
    max: result.latency.max,
    requests: Object.values(statusCodes).reduce((sum, count) => sum + count, 0),
    non2xx: result.non2xx,
    errors: result.errors,
    timeouts: result.timeouts,
    statusCodes,
    seconds: result.duration,
  };
}

export function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
}

function aggregate(runs) {
  const medians = (key) =>
    runs[0][key] ? Object.fromEntries(Object.keys(runs[0][key]).map((part) => [part, median(runs.map((run) => run[key][part]))])) : undefined;
  return {
    cpuMsPerRequest: medians('cpuMsPerRequest'),
    ioCallsPerRequest: medians('ioCallsPerRequest'),
    rps: Math.round(median(runs.map((run) => run.rps))),
    p50: median(runs.map((run) => run.p50)),
    p99: median(runs.map((run) => run.p99)),
    non2xx: runs.reduce((sum, run) => sum + run.non2xx, 0),
    errors: runs.reduce((sum, run) => sum + run.errors + run.timeouts, 0),
  };
}

/**
 * Measures several scenarios with their runs interleaved (A1 B1 A2 B2 ...), so that a burst of load
 * from elsewhere on a shared machine hits both sides of a comparison alike. Returns one result per
 * scenario: { median: {rps, p50, p99, non2xx, errors, cpuMsPerRequest, ioCallsPerRequest}, runs: [...], warmup }.
 */
export async function measure(scenarios, config, log = (line) => process.stdout.write(`${line}\n`)) {
  const results = scenarios.map(() => ({ runs: [] }));
  if (config.warmup > 0) {
    for (const [index, scenario] of scenarios.entries()) {
      await scenario.beforeRun?.();
      results[index].warmup = await runOnce(scenario, config, config.warmup);
    }
  }
  for (let run = 1; run <= config.runs; run++) {
    for (const [index, scenario] of scenarios.entries()) {
      await scenario.beforeRun?.();
      const summary = await runOnce(scenario, config, config.duration);
      results[index].runs.push(summary);
      const failures = summary.non2xx + summary.errors + summary.timeouts;
      log(
        `  ${scenario.name} run ${run}/${config.runs}: ${summary.rps} req/s, p50 ${summary.p50} ms, p99 ${summary.p99} ms` +
          (summary.cpuMsPerRequest ? `, CPU ms/request ${JSON.stringify(summary.cpuMsPerRequest)}` : '') +
          (summary.ioCallsPerRequest ? `, I/O calls/request ${JSON.stringify(summary.ioCallsPerRequest)}` : '') +
          `, load average ${summary.loadAverage}` +
          (failures ? `, NOT OK: ${JSON.stringify(summary.statusCodes)} errors ${summary.errors} timeouts ${summary.timeouts}` : ''),
      );
    }
  }
  for (const result of results) result.median = aggregate(result.runs);
  return results;
}
