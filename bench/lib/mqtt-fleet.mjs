// MQTT devices for the benchmarks (issue 31): many connected devices, each publishing one reading per
// QoS 1 PUBLISH with one message in flight (the next sent once its PUBACK came), the PUBACK latency of
// each message measured.
//
// Two load generators behind one interface:
// - `raw` (the default): raw TCP sockets speaking MQTT 3.1.1, the CONNECT and PUBLISH packets encoded
//   once with mqtt-packet; per message only the reading's recordedAt and the packet id are written into
//   the device's packet, and a PUBACK is read as its four bytes.
// - `mqttjs`: one mqtt.js client per device (`publishAsync`), what a device library does.
// Both in this one process. With 2000 devices against a bare MQTT server (bench/device-mqtt.mjs), mqtt.js
// was the ceiling of the full-stack benchmark; the figures are in BENCHMARKS.md.
import { createConnection } from 'node:net';
import { connectAsync } from 'mqtt';
import mqttPacket from 'mqtt-packet';

/** A placeholder ISO date-time of the length every date-time of years 1000 to 9999 has. */
const PLACEHOLDER = '0000-00-00T00:00:00.000Z';

/**
 * Connects `credentials.length` devices ({ clientId, username, password }) to 127.0.0.1:`port`, at most
 * 50 handshakes at a time; `payloadOf(iso)` is the JSON of a reading recorded at `iso`, published on
 * `devices/<username>/readings`. Returns { publish(durationS, nextRecordedAt), close() }: `publish` keeps
 * every device sending for `durationS` seconds, each message recorded at `nextRecordedAt()` (epoch ms),
 * and resolves with { acknowledged, failed, latencies } (ms, unsorted).
 */
export async function connectFleet(kind, port, credentials, payloadOf) {
  const open = kind === 'mqttjs' ? mqttJsDevice : rawDevice;
  const devices = [];
  for (let i = 0; i < credentials.length; i += 50) {
    devices.push(...(await Promise.all(credentials.slice(i, i + 50).map((credential) => open(port, credential, payloadOf)))));
  }
  return {
    async publish(durationS, nextRecordedAt) {
      const tally = { acknowledged: 0, failed: 0, latencies: [] };
      const end = Date.now() + durationS * 1000;
      await Promise.all(devices.map((device) => device.publishUntil(end, nextRecordedAt, tally)));
      return tally;
    },
    close: () => Promise.all(devices.map((device) => device.close())),
  };
}

async function mqttJsDevice(port, { clientId, username, password }, payloadOf) {
  const client = await connectAsync(`mqtt://127.0.0.1:${port}`, { clientId, username, password, protocolVersion: 4, reconnectPeriod: 0, connectTimeout: 60_000, keepalive: 0 });
  const topic = `devices/${username}/readings`;
  return {
    async publishUntil(end, nextRecordedAt, tally) {
      while (Date.now() < end) {
        const started = performance.now();
        try {
          await client.publishAsync(topic, payloadOf(new Date(nextRecordedAt()).toISOString()), { qos: 1 });
          tally.latencies.push(performance.now() - started);
          tally.acknowledged += 1;
        } catch {
          tally.failed += 1;
        }
      }
    },
    close: () => client.endAsync(true),
  };
}

function rawDevice(port, { clientId, username, password }, payloadOf) {
  return new Promise((resolve, reject) => {
    const socket = createConnection(port, '127.0.0.1');
    socket.setNoDelay(true);
    socket.once('error', reject);
    socket.once('connect', () =>
      socket.write(mqttPacket.generate({ cmd: 'connect', protocolId: 'MQTT', protocolVersion: 4, clientId, clean: true, keepalive: 0, username, password: Buffer.from(password) })),
    );
    socket.once('data', (chunk) => {
      if (chunk[0] !== 0x20 || chunk[3] !== 0) return reject(new Error(`${username}: no CONNACK 0 (${chunk.toString('hex')})`));
      socket.removeListener('error', reject);
      resolve(rawPublisher(socket, username, payloadOf));
    });
  });
}

/**
 * One device's PUBLISH, encoded once: each message writes its recordedAt and packet id into the same
 * buffer (safe to reuse: the previous message was read whole by the server before its PUBACK came).
 */
function rawPublisher(socket, username, payloadOf) {
  const payload = Buffer.from(payloadOf(PLACEHOLDER));
  const packet = mqttPacket.generate({ cmd: 'publish', topic: `devices/${username}/readings`, payload, qos: 1, messageId: 1, retain: false, dup: false });
  const payloadAt = packet.length - payload.length;
  const idAt = payloadAt - 2;
  const timeAt = payloadAt + payload.indexOf(PLACEHOLDER);
  let messageId = 0;
  let buffered = Buffer.alloc(0);
  let waiting;
  socket.on('data', (chunk) => {
    buffered = buffered.length ? Buffer.concat([buffered, chunk]) : chunk;
    while (buffered.length >= 4) {
      if (buffered[0] !== 0x40 || buffered.readUInt16BE(2) !== messageId) {
        socket.destroy(new Error(`${username}: unexpected packet ${buffered.subarray(0, 4).toString('hex')} (waiting for the PUBACK of ${messageId})`));
        return;
      }
      buffered = buffered.subarray(4);
      const answer = waiting;
      waiting = undefined;
      answer?.(true);
    }
  });
  socket.on('error', () => undefined);
  socket.on('close', () => {
    waiting?.(false);
    waiting = undefined;
  });
  const send = (recordedAt) =>
    new Promise((answer) => {
      if (socket.destroyed) return answer(false);
      messageId = (messageId % 65535) + 1;
      packet.write(new Date(recordedAt).toISOString(), timeAt, 'latin1');
      packet.writeUInt16BE(messageId, idAt);
      waiting = answer;
      socket.write(packet);
    });
  return {
    async publishUntil(end, nextRecordedAt, tally) {
      while (Date.now() < end) {
        const started = performance.now();
        if (await send(nextRecordedAt())) {
          tally.latencies.push(performance.now() - started);
          tally.acknowledged += 1;
        } else {
          tally.failed += 1;
          return;
        }
      }
    },
    close: async () => socket.destroy(),
  };
}
