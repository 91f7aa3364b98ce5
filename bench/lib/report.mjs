// Plain-text tables for stdout and bench/results/latest.json.
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, totalmem, loadavg } from 'node:os';
import { join } from 'node:path';
import { resultsDir } from './config.mjs';

export function table(headers, rows) {
  const cells = [headers, ...rows].map((row) => row.map((cell) => (cell === undefined || cell === null ? '' : String(cell))));
  const widths = headers.map((_, column) => Math.max(...cells.map((row) => row[column].length)));
  const numeric = headers.map((_, column) => rows.every((row) => row[column] === '' || typeof row[column] === 'number'));
  const line = (row) =>
    row.map((cell, column) => (numeric[column] ? cell.padStart(widths[column]) : cell.padEnd(widths[column]))).join('  ');
  return [line(cells[0]), widths.map((width) => '-'.repeat(width)).join('  '), ...cells.slice(1).map(line)].join('\n');
}

export function machine() {
  const cpuList = cpus();
  return {
    cpus: cpuList.length,
    cpuModel: cpuList[0]?.model,
    memoryGiB: Math.round(totalmem() / 2 ** 30),
    node: process.version,
    loadAverageAtStart: loadavg().map((value) => Math.round(value * 100) / 100),
  };
}

export function writeResults(name, results) {
  mkdirSync(resultsDir, { recursive: true });
  const file = join(resultsDir, name);
  writeFileSync(file, `${JSON.stringify(results, null, 2)}\n`);
  return file;
}

export const print = (text = '') => process.stdout.write(`${text}\n`);
