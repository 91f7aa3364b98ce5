#!/usr/bin/env node
// What carrying a reply through NATS costs, by the reply's size: the price of the broker hop between the
// gateway and a service, measured apart from everything else. A requester (this process) keeps 50
// requests in flight to a responder (a child process) that answers each with a reply of the size asked,
// through the machine's nats-server; each combination runs BENCH_DURATION seconds (default 5), the sizes
// and codecs alternated, BENCH_RUNS times (default 3), and the table gives the medians of CPU µs per
// request of the requester, the responder and nats-server (from /proc), and requests/s.
//
// The replies are pages of generated shipments in the stored JSON's shape, with ids, names, times and
// positions of their own, so that they compress as real pages do rather than as the benchmark's seeded
// account, whose 50 shipments differ in a counter only. Codecs (BENCH_HOP_CODECS, comma-separated):
// `plain`, the bytes as they are (what the services send); `gzip1`, gzip at level 1, compressed by the
// responder for every reply and decompressed by the requester (what compressing the hop would cost and
// save). The requester is nats.js's own `request`, not the gateway's client (libs/messaging): the figures
// are about bytes through the broker, which the client does not change.
//
//   node bench/nats-hop.mjs            (needs nats-server on BENCH_NATS_URL, default 127.0.0.1:4222)
//   BENCH_HOP_SIZES=1,50,100 BENCH_HOP_CODECS=plain,gzip1 BENCH_RUNS=3 BENCH_DURATION=5
import { fork } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { loadavg } from 'node:os';
import { gunzipSync, gzipSync } from 'node:zlib';
import { connect } from '@nats-io/transport-node';
import { brokerPids, processCpuMs } from './lib/cpu.mjs';

const servers = process.env.BENCH_NATS_URL ?? '127.0.0.1:4222';
const CONCURRENCY = 50;

/** A page of `count` shipments as the OMS stores and sends them (`{"items":[...],"metadata":...}`). */
function page(count) {
  const items = Array.from({ length: count }, (_, i) => {
    const created = new Date(Date.UTC(2026, 10, 1) + Math.floor(Math.random() * 2.5e9)).toISOString();
    const moving = Math.random() < 0.6;
    return JSON.stringify({
      id: randomUUID(),
      name: `Order ${Math.floor(Math.random() * 1e6)} to ${['Lyon', 'Hamburg', 'Milano', 'Gdansk', 'Porto'][i % 5]}`,
      reference: `PO-${Math.floor(Math.random() * 1e8)}`,
      status: moving ? 'InTransit' : 'Planned',
      mode: 'Road',
      carrier: ['Acme Freight', 'Blue Line', 'Northwind'][i % 3],
      originId: randomUUID(),
      destinationId: randomUUID(),
      plannedDepartureAt: created,
      plannedArrivalAt: new Date(Date.parse(created) + 8.64e7).toISOString(),
      departedAt: moving ? created : null,
      deliveredAt: null,
      completedAt: null,
      cancelledAt: null,
      tags: ['priority', `lane-${i % 7}`],
      metadata: { customer: `C-${Math.floor(Math.random() * 1e5)}`, pallets: 1 + (i % 12) },
      createdAt: created,
      updatedAt: created,
      autoTransitions: true,
      conditions: null,
      excursions: { temperatureSeconds: 0, humiditySeconds: 0 },
      lastPosition: moving
        ? { lat: 45 + Math.random() * 8, lng: 2 + Math.random() * 14, recordedAt: created, deviceId: randomUUID(), accuracyMeters: Math.round(Math.random() * 30) }
        : null,
      eta: null,
    });
  });
  return Buffer.from(`{"items":[${items.join(',')}],"metadata":{"nextCursor":"MTIzNDU2.c2lnbmF0dXJl"}}`);
}

const codecs = {
  plain: { encode: (bytes) => bytes, decode: (bytes) => bytes },
  gzip1: { encode: (bytes) => gzipSync(bytes, { level: 1 }), decode: (bytes) => gunzipSync(bytes) },
};

if (process.argv[2] === 'responder') {
  // Replies `codec`(a page of `items` shipments), the page made once per size, encoded for every reply.
  const nc = await connect({ servers });
  const pages = new Map();
  nc.subscribe(`${process.argv[3]}.>`, {
    callback: (_error, msg) => {
      const [, codec, items] = msg.subject.split('.').slice(-3);
      const key = Number(items);
      if (!pages.has(key)) pages.set(key, page(key));
      msg.respond(codecs[codec].encode(pages.get(key)));
    },
  });
  await nc.flush();
  process.send?.('ready');
} else {
  const subject = `bench_hop_${process.pid}`;
  const sizes = (process.env.BENCH_HOP_SIZES ?? '1,50,100').split(',').map(Number);
  const codecNames = (process.env.BENCH_HOP_CODECS ?? 'plain,gzip1').split(',');
  const runs = Number(process.env.BENCH_RUNS ?? 3);
  const seconds = Number(process.env.BENCH_DURATION ?? 5);
  const responder = fork(new URL(import.meta.url).pathname, ['responder', subject]);
  await new Promise((resolve) => responder.once('message', resolve));
  const nc = await connect({ servers });
  const nats = brokerPids().nats;
  if (nats === undefined) throw new Error('no nats-server process on this machine to measure');
  const results = new Map();
  for (let run = 0; run < runs; run++) {
    for (const items of sizes) {
      for (const codec of codecNames) {
        const { decode } = codecs[codec];
        const before = [processCpuMs(process.pid), processCpuMs(responder.pid), processCpuMs(nats)];
        let done = 0;
        let bytes = 0;
        const end = Date.now() + seconds * 1000;
        await Promise.all(
          Array.from({ length: CONCURRENCY }, async () => {
            while (Date.now() < end) {
              const reply = await nc.request(`${subject}.${codec}.${items}`, '{"pattern":"bench","data":{}}', { timeout: 10_000 });
              bytes = reply.data.length;
              decode(Buffer.from(reply.data.buffer, reply.data.byteOffset, reply.data.byteLength));
              done++;
            }
          }),
        );
        const after = [processCpuMs(process.pid), processCpuMs(responder.pid), processCpuMs(nats)];
        const perRequest = after.map((ms, i) => ((ms - before[i]) * 1000) / done);
        const key = `${items}\t${codec}`;
        if (!results.has(key)) results.set(key, { items, codec, bytes, runs: [] });
        results.get(key).runs.push({ rate: done / seconds, requester: perRequest[0], responder: perRequest[1], nats: perRequest[2] });
      }
    }
  }
  responder.kill();
  await nc.close();
  const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
  console.log(`CPU µs per request through nats-server, medians of ${runs} runs of ${seconds} s, ${CONCURRENCY} in flight; load average (1 min) at the end ${loadavg()[0].toFixed(2)}`);
  console.log('| reply | bytes on the wire | req/s | requester | responder | nats-server | the three |');
  console.log('| --- | ---: | ---: | ---: | ---: | ---: | ---: |');
  for (const { items, codec, bytes, runs: measured } of results.values()) {
    const m = (field) => median(measured.map((run) => run[field]));
    const total = median(measured.map((run) => run.requester + run.responder + run.nats));
    console.log(
      `| ${items} shipment${items === 1 ? '' : 's'}, ${codec} | ${bytes} | ${Math.round(m('rate'))} | ${m('requester').toFixed(1)} | ${m('responder').toFixed(1)} | ${m('nats').toFixed(1)} | ${total.toFixed(1)} |`,
    );
  }
}
