import fc from 'fast-check';
import mqttPacket from 'mqtt-packet';
import { describe, expect, it } from 'vitest';
import { MqttFramer } from './mqtt-framer.js';
import { readingsFromPayload } from './mqtt-payload.js';
import { deviceTopics, topicMatches } from './mqtt-topics.js';

const publish = (payload: Buffer, messageId = 1) => mqttPacket.generate({ cmd: 'publish', topic: 'devices/a/readings', payload, qos: 1, messageId, retain: false, dup: false });

describe('MqttFramer', () => {
  it('cuts any split of a stream into the same whole packets', () => {
    const packets = [publish(Buffer.from('{}')), mqttPacket.generate({ cmd: 'pingreq' }), publish(Buffer.alloc(300, 0x41), 2), publish(Buffer.alloc(20_000, 0x42), 3)];
    const stream = Buffer.concat(packets);
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 1, max: stream.length - 1 }), { maxLength: 20 }), (cuts) => {
        const framer = new MqttFramer(1_000_000);
        const points = [...new Set(cuts)].sort((a, b) => a - b);
        const frames = [0, ...points].flatMap((start, i) => framer.push(stream.subarray(start, points[i] ?? stream.length)));
        expect(frames.map((f) => (f.kind === 'packet' ? Buffer.from(f.bytes) : f))).toEqual(packets);
      }),
    );
  });

  it('stops at a packet over the limit as soon as its header is read', () => {
    const framer = new MqttFramer(1024);
    expect(framer.push(Buffer.from([0x10, 0x80, 0x80, 0x40]))).toEqual([{ kind: 'oversized', firstByte: 0x10, length: 1024 * 1024, head: Buffer.alloc(0) }]);
    expect(framer.push(Buffer.alloc(100))).toEqual([]);
  });

  it('skips a packet over the limit, keeping its head, and frames what follows', () => {
    const framer = new MqttFramer(1024);
    framer.skipOversized = true;
    const big = publish(Buffer.alloc(5000, 0x43), 9);
    const next = publish(Buffer.from('{}'), 10);
    const stream = Buffer.concat([big, next]);
    const frames = [...framer.push(stream.subarray(0, 700)), ...framer.push(stream.subarray(700, 3000)), ...framer.push(stream.subarray(3000))];
    expect(frames).toHaveLength(2);
    const [skipped, kept] = frames;
    expect(skipped).toMatchObject({ kind: 'oversized', firstByte: 0x32, length: 5000 + 2 + 18 + 2 });
    if (skipped?.kind !== 'oversized') throw new Error('not skipped');
    expect(skipped.head.readUInt16BE(0)).toBe(18);
    expect(skipped.head.subarray(2, 20).toString()).toBe('devices/a/readings');
    expect(skipped.head.readUInt16BE(20)).toBe(9);
    expect(kept).toEqual({ kind: 'packet', bytes: next });
  });

  it('reports a remaining length longer than four bytes as malformed', () => {
    expect(new MqttFramer(1024).push(Buffer.from([0x30, 0xff, 0xff, 0xff, 0xff, 0x01]))).toEqual([{ kind: 'malformed' }]);
  });
});

describe('readingsFromPayload', () => {
  it('takes one reading object, or {"readings":[...]} with 1..500 entries', () => {
    expect(readingsFromPayload(Buffer.from('{"recordedAt":"x"}'))).toEqual({ ok: true, readings: [{ recordedAt: 'x' }] });
    expect(readingsFromPayload(Buffer.from('{"readings":[{"a":1},2]}'))).toEqual({ ok: true, readings: [{ a: 1 }, 2] });
    expect(readingsFromPayload(Buffer.from(JSON.stringify({ readings: Array.from({ length: 500 }, () => ({})) })))).toMatchObject({ ok: true });
  });

  it('refuses what is not a reading, naming why', () => {
    const code = (text: string | Buffer) => {
      const result = readingsFromPayload(Buffer.isBuffer(text) ? text : Buffer.from(text));
      return result.ok ? 'ok' : result.error.code;
    };
    expect(code('')).toBe('MalformedRequest');
    expect(code('{"a":')).toBe('MalformedRequest');
    expect(code('[{}]')).toBe('MalformedRequest');
    expect(code('42')).toBe('MalformedRequest');
    expect(code('{"readings":{}}')).toBe('InvalidParameter');
    expect(code('{"readings":[]}')).toBe('InvalidParameter');
    expect(code(JSON.stringify({ readings: Array.from({ length: 501 }, () => ({})) }))).toBe('InvalidParameter');
    expect(code(Buffer.alloc(256 * 1024 + 1, 0x20))).toBe('PayloadTooLarge');
  });
});

describe('device topics', () => {
  const topics = deviceTopics('truck.1');

  it('owns the topics and filters under devices/{identifier}/ only', () => {
    expect(topics.ownsTopic('devices/truck.1/readings')).toBe(true);
    expect(topics.ownsTopic('devices/truck.1/')).toBe(false);
    expect(topics.ownsTopic('devices/truck.10/readings')).toBe(false);
    expect(topics.ownsTopic('devices/truck/readings')).toBe(false);
    expect(topics.ownsFilter('devices/truck.1/#')).toBe(true);
    expect(topics.ownsFilter('devices/truck.1/+')).toBe(true);
    expect(topics.ownsFilter('devices/+/rejected')).toBe(false);
    expect(topics.ownsFilter('devices/#')).toBe(false);
    expect(topics.ownsFilter('#')).toBe(false);
    expect(topics.ownsFilter('devices/truck.1/a#')).toBe(false);
    expect(topics.ownsFilter('devices/truck.1/#/x')).toBe(false);
  });

  it('matches filters as MQTT does', () => {
    expect(topicMatches('devices/a/#', 'devices/a/rejected')).toBe(true);
    expect(topicMatches('devices/a/+', 'devices/a/rejected')).toBe(true);
    expect(topicMatches('devices/a/rejected', 'devices/a/rejected')).toBe(true);
    expect(topicMatches('devices/a/rejected/#', 'devices/a/rejected')).toBe(true);
    expect(topicMatches('devices/a/+/x', 'devices/a/rejected')).toBe(false);
    expect(topicMatches('devices/a/readings', 'devices/a/rejected')).toBe(false);
  });
});
