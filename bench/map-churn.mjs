#!/usr/bin/env node
// Shows why the services keep short-lived, high-churn entries out of long-lived `Map`s (the RPC client's
// waiting requests, `ReplyInbox` in libs/messaging): a socket delivers 24 KB messages at about 40 MB/s,
// each held under a key while 64 newer ones arrive (a request waiting for its reply). After one full
// collection, with a `Map` the messages' `ArrayBuffer`s stop dying young and pile up until the next full
// collection. `Dictionary` is the hand-written `ChurnMap` the services used from the seventh round (an
// object made with `Object.create(null)`); `LRUCache` (lru-cache, what they use now) keeps its values in
// an array of slots and only their indices in its `Map`. Prints, per structure, the `ArrayBuffer` memory
// sampled every 250 ms in the seconds before and after a forced full collection, and the full
// collections that followed; each structure in a fresh process, alternating, ROUNDS times.
//   npm run -s build && node bench/map-churn.mjs [rounds, default 2]
import { execFileSync } from 'node:child_process';
import { createConnection, createServer } from 'node:net';
import { PerformanceObserver, constants } from 'node:perf_hooks';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { LRUCache } from 'lru-cache';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc');
const AFTER_SECONDS = 5;
const MESSAGE = Buffer.alloc(24 * 1024, 'x');
const RATE = 40e6;
const HELD = 64;

function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
}

async function measure(name, entries) {
  const server = createServer((socket) => {
    const send = () => {
      while (socket.write(MESSAGE));
    };
    socket.on('drain', send);
    socket.on('error', () => {});
    send();
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const client = createConnection(server.address().port, '127.0.0.1');
  const started = performance.now();
  let received = 0;
  let next = 0;
  client.on('data', (chunk) => {
    received += chunk.length;
    entries.set(String(next), { chunk, garbage: Array.from({ length: 20 }, (_, i) => ({ i })) });
    entries.delete(String(next - HELD));
    next++;
    // Hold the rate near RATE, so that both structures see the same load.
    if (received > (RATE * (performance.now() - started)) / 1000) {
      client.pause();
      setTimeout(() => client.resume(), 5);
    }
  });
  let fullCollections = 0;
  const observer = new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) if (entry.detail?.kind === constants.NODE_PERFORMANCE_GC_MAJOR) fullCollections++;
  });
  observer.observe({ entryTypes: ['gc'] });
  const sample = () => process.memoryUsage().arrayBuffers / 2 ** 20;
  const sampleFor = async (ms) => {
    const samples = [];
    for (let t = 0; t < ms; t += 250) {
      await new Promise((resolve) => setTimeout(resolve, 250));
      samples.push(sample());
    }
    return samples;
  };
  await sampleFor(1000);
  const before = await sampleFor(2000);
  gc();
  fullCollections = 0;
  const after = await sampleFor(AFTER_SECONDS * 1000);
  observer.disconnect();
  client.destroy();
  server.close();
  const seconds = (performance.now() - started) / 1000;
  return {
    structure: name,
    'MB/s read': (received / 2 ** 20 / seconds).toFixed(0),
    'ArrayBuffers before, median MiB': median(before).toFixed(1),
    'after one full GC, median MiB': median(after).toFixed(1),
    'after, peak MiB': Math.max(...after).toFixed(1),
    'full GCs after': fullCollections,
  };
}

/** The removed `ChurnMap`, as far as the bench uses it: a dictionary-mode object, keys prefixed. */
class Dictionary {
  entries = Object.create(null);
  set(key, value) {
    this.entries[`_${key}`] = value;
  }
  delete(key) {
    delete this.entries[`_${key}`];
  }
}

// The bound as in `ReplyInbox` (RPC_MAX_WAITING): far above the 64 entries held.
const STRUCTURES = { Map: () => new Map(), Dictionary: () => new Dictionary(), LRUCache: () => new LRUCache({ max: 65536 }) };

if (process.argv[2] === '--one') {
  process.stdout.write(JSON.stringify(await measure(process.argv[3], STRUCTURES[process.argv[3]]())));
} else {
  const rows = [];
  for (let round = 0; round < Number(process.argv[2] ?? 2); round++) {
    for (const name of Object.keys(STRUCTURES)) {
      rows.push(JSON.parse(execFileSync(process.execPath, [new URL(import.meta.url).pathname, '--one', name], { encoding: 'utf8' })));
    }
  }
  console.table(rows);
}
