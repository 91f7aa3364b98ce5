#!/usr/bin/env node
// The latest table of BENCHMARKS.md, written by `npm run bench` as bench/results/latest.md from the figures it
// has just measured; `node bench/lib/markdown.mjs [bench/results/latest.json]` writes it again from a saved run.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { resultsDir } from './config.mjs';

const cell = (value) => (value === undefined || value === null ? '' : String(value));
const row = (cells) => `| ${cells.map(cell).join(' | ')} |`;
const table = (headers, rows) => [row(headers), row(headers.map(() => '---')), ...rows.map(row)].join('\n');
const minute = (iso) => iso?.slice(0, 16).replace('T', ' ');

/** Markdown of a run of bench/run.mjs: scenarios, ratios against the reference, memory, with the load. */
export function markdown(results) {
  const { machine, config } = results;
  const loads = Object.values(results.scenarios).flatMap(({ runs }) => runs.map((run) => run.loadAverage));
  const lines = [
    `Measured ${minute(results.startedAt)} to ${minute(results.finishedAt)} UTC by \`npm run bench\` ` +
      `(${config.shipments} shipments, ${config.devices} devices; median of ${config.runs} runs of ${config.duration} s, ` +
      `${config.connections} connections) on ${machine.cpus} × ${machine.cpuModel}, Node ${machine.node}; ` +
      `load average (1 min) at the start of the runs ${Math.min(...loads)} to ${Math.max(...loads)}.`,
    '',
    table(
      ['scenario', 'req/s', 'p50 ms', 'p99 ms', 'req/s per run', 'CPU ms/req', 'I/O calls/req', 'load avg'],
      Object.entries(results.scenarios).map(([name, { median, runs }]) => [
        name + (median.non2xx + median.errors > 0 ? ` (${median.non2xx} non-2xx, ${median.errors} errors)` : ''),
        median.rps,
        median.p50,
        median.p99,
        runs.map((run) => run.rps).join(' / '),
        median.cpuMsPerRequest?.total,
        median.ioCallsPerRequest?.total,
        runs.map((run) => run.loadAverage).join(' / '),
      ]),
    ),
    '',
    `Against the reference, same run, runs interleaved (goal: throughput ≥ ${results.ratios.goal.throughput} ×, p99 ≤ ${results.ratios.goal.p99} ×):`,
    '',
    table(
      ['read', 'throughput ×', 'p99 ×', 'CPU per request ×', 'goal'],
      Object.entries(results.ratios.reference).map(([name, ratio]) => [name, ratio.throughput, ratio.p99, ratio.cpuPerRequest, ratio.met ? 'met' : 'not met']),
    ),
    '',
    `Resident memory per process (MiB; idle: ${results.config?.idleMs ?? 3000} ms after ready, before any load; settled: ${settledSeconds(results)}, left idle in between):`,
    '',
    table(
      ['process', 'start ms', 'idle RSS', 'idle RSS, settled', 'RSS after the load', 'peak RSS'],
      [
        ...Object.entries(results.startup).map(([name, startup]) => [
          name,
          startup.readyMs,
          results.idleMemory[name]?.rssMiB,
          results.idleSettledMemory?.[name]?.rssMiB ?? '',
          results.memoryAfterLoad?.[name]?.rssMiB,
          results.memoryAfterLoad?.[name]?.peakMiB,
        ]),
        [
          'reference',
          results.reference.startMs,
          results.reference.idleMemory?.rssMiB,
          results.reference.idleSettledMemory?.rssMiB ?? '',
          results.reference.memoryAfterLoad?.rssMiB,
          results.reference.memoryAfterLoad?.peakMiB,
        ],
      ],
    ),
  ];
  return `${lines.join('\n')}\n`;
}

function settledSeconds(results) {
  const ms = results.config?.idleSettledMs;
  return ms ? `${ms / 1000} s after ready` : 'not read';
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const results = JSON.parse(readFileSync(process.argv[2] ?? join(resultsDir, 'latest.json'), 'utf8'));
  const file = join(resultsDir, 'latest.md');
  writeFileSync(file, markdown(results));
  process.stdout.write(`${file}\n`);
}
