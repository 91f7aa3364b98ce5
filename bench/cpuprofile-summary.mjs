#!/usr/bin/env node
// Summarizes V8 .cpuprofile files (node --cpu-prof, or bench:profile): busy time, then the functions
// with the most self time and inclusive time, and self time by package. Shares are of the busy time,
// i.e. without (idle).
//   node bench/cpuprofile-summary.mjs [--top N] file.cpuprofile...
import { readFileSync } from 'node:fs';
import { basename } from 'node:path';
import { pathToFileURL } from 'node:url';
import { table } from './lib/report.mjs';

const IDLE = '(idle)';
/** Samples taken while the profiler preload stops the profiler and serializes the profile are not the service's work. */
const PROFILER_FRAME = /profiler-preload\.mjs:/;

/** Where a frame comes from: a package of node_modules, one of our apps or libs, Node itself, or V8. */
export function packageOf(url) {
  if (!url) return '(native)';
  if (url.startsWith('node:')) return 'node (internal)';
  const modules = /node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(url);
  if (modules) return modules[1];
  const ours = /\/(apps|libs)\/([^/]+)\//.exec(url);
  if (ours) return `${ours[1]}/${ours[2]}`;
  return url;
}

function shortUrl(url) {
  if (!url) return '';
  const modules = /.*node_modules\/(.*)$/.exec(url);
  if (modules) return modules[1];
  const ours = /.*\/((?:apps|libs|bench)\/.*)$/.exec(url);
  return ours ? ours[1] : url.replace(/^file:\/\//, '');
}

function frameKey({ functionName, url, lineNumber }) {
  const name = functionName || '(anonymous)';
  return url ? `${name}  ${shortUrl(url)}:${lineNumber + 1}` : name;
}

/** Aggregates one profile: { wallMs, busyMs, idleMs, self: Map, inclusive: Map, packages: Map } (ms). */
export function aggregate(profile) {
  const nodes = new Map(profile.nodes.map((node) => [node.id, node]));
  const parent = new Map();
  for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);
  const stackKeys = new Map();
  const keysOf = (id) => {
    let keys = stackKeys.get(id);
    if (keys) return keys;
    const unique = new Set();
    const packagesOnStack = new Set();
    for (let at = id; at !== undefined; at = parent.get(at)) {
      const frame = nodes.get(at).callFrame;
      unique.add(frameKey(frame));
      if (frame.url) packagesOnStack.add(packageOf(frame.url));
    }
    keys = [...unique];
    keys.packages = [...packagesOnStack];
    stackKeys.set(id, keys);
    return keys;
  };
  const self = new Map();
  const inclusive = new Map();
  const packages = new Map();
  const packagesInclusive = new Map();
  let idle = 0;
  let total = 0;
  const add = (map, key, value) => map.set(key, (map.get(key) ?? 0) + value);
  profile.samples.forEach((id, index) => {
    const ms = (profile.timeDeltas[index] ?? 0) / 1000;
    const frame = nodes.get(id).callFrame;
    if (keysOf(id).some((key) => PROFILER_FRAME.test(key))) return;
    total += ms;
    if (frame.functionName === IDLE) {
      idle += ms;
      return;
    }
    add(self, frameKey(frame), ms);
    add(packages, packageOf(frame.url) === '(native)' ? frame.functionName || '(native)' : packageOf(frame.url), ms);
    const keys = keysOf(id);
    for (const key of keys) add(inclusive, key, ms);
    for (const name of keys.packages) add(packagesInclusive, name, ms);
  });
  // Frames that are on every stack ((root), the event loop's entry points) say nothing.
  inclusive.delete('(root)');
  return { wallMs: (profile.endTime - profile.startTime) / 1000, sampledMs: total, busyMs: total - idle, idleMs: idle, self, inclusive, packages, packagesInclusive };
}

function top(map, busyMs, count) {
  return [...map.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, count)
    .map(([key, ms]) => [Math.round((ms / busyMs) * 1000) / 10, Math.round(ms), key]);
}

/** The summary as text, and as data for latest.json. */
export function summarize(profile, name, count = 25) {
  const result = aggregate(profile);
  const data = {
    name,
    wallMs: Math.round(result.wallMs),
    busyMs: Math.round(result.busyMs),
    cpuOfOneCore: Math.round((result.busyMs / result.wallMs) * 1000) / 10,
    selfTop: top(result.self, result.busyMs, count).map(([pct, ms, fn]) => ({ pct, ms, fn })),
    inclusiveTop: top(result.inclusive, result.busyMs, count).map(([pct, ms, fn]) => ({ pct, ms, fn })),
    packages: top(result.packages, result.busyMs, count).map(([pct, ms, fn]) => ({ pct, ms, package: fn })),
    packagesInclusive: top(result.packagesInclusive, result.busyMs, count).map(([pct, ms, fn]) => ({ pct, ms, package: fn })),
  };
  const lines = [
    `\n### ${name}: busy ${data.busyMs} ms of ${data.wallMs} ms sampled (${data.cpuOfOneCore} % of one core); shares below are of the busy time`,
    '\nSelf time by package:',
    table(['%', 'ms', 'package'], top(result.packages, result.busyMs, count)),
    '\nInclusive time by package (samples with the package anywhere on the stack):',
    table(['%', 'ms', 'package'], top(result.packagesInclusive, result.busyMs, Math.min(count, 15))),
    '\nSelf time by function:',
    table(['%', 'ms', 'function'], top(result.self, result.busyMs, count)),
    '\nInclusive time by function:',
    table(['%', 'ms', 'function'], top(result.inclusive, result.busyMs, count)),
  ];
  return { text: lines.join('\n'), data };
}

if (import.meta.url === pathToFileURL(process.argv[1]).href) {
  const args = process.argv.slice(2);
  let count = 25;
  const topIndex = args.indexOf('--top');
  if (topIndex >= 0) count = Number(args.splice(topIndex, 2)[1]);
  if (args.length === 0) {
    process.stderr.write('usage: node bench/cpuprofile-summary.mjs [--top N] file.cpuprofile...\n');
    process.exit(2);
  }
  for (const file of args) process.stdout.write(`${summarize(JSON.parse(readFileSync(file, 'utf8')), basename(file), count).text}\n`);
}
