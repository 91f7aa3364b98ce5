import { connect as connectTcp, type Socket } from 'node:net';
import type { Account, CredentialProtocol } from '@tracking/sdk';
import mqtt, { type MqttClient } from 'mqtt';
import { type AvlRecord, encodeCodec8Packet, encodeHandshake, IO_BATTERY_PERCENT, IO_DALLAS_TEMPERATURE_1, randomImei } from './teltonika-encoder.js';

/** A tracker of the simulation, as the API knows it, with the credential its protocol uses (none for the JSON API). */
export interface SimulatedDevice {
  id: string;
  serialNumber: string;
  /** Its readings carry a temperature that matters (the cold-chain trip): a sender must not drop it. */
  needsTemperature: boolean;
  credential?: { id: string; identifier: string; secret?: string };
}

/** One reading of a simulated tracker, protocol-neutral. */
export interface SimulatedReading {
  recordedAt: Date;
  lat: number;
  lng: number;
  accuracyMeters: number;
  temperatureC: number;
  batteryPercent: number;
  speedMps: number;
  headingDegrees: number;
}

/**
 * How readings reach the system: the seam for protocols. The JSON API needs no credential; a sender for
 * the device gateway's protocols names the credential protocol the simulation creates for each of its
 * devices (`credentialProtocol`, with `identifierFor` where the protocol needs a given identifier: an
 * IMEI), and encodes the same readings in its own frames.
 */
export interface ReadingSender {
  /** Shown in the simulator's output. */
  readonly protocol: string;
  /** The device credential it authenticates with, created through the API before the drive; none: the JSON API. */
  readonly credentialProtocol: CredentialProtocol | null;
  /** The identifier to ask for (Teltonika: an IMEI); undefined: the API's default (the device's id). */
  identifierFor?(device: SimulatedDevice): string | undefined;
  /** What it sends for `device`, for the trip's line (e.g. which HTTP format). */
  describe?(device: SimulatedDevice): string;
  /** Sends one tick's readings of one device, oldest first; resolves once the system has taken them. */
  send(device: SimulatedDevice, readings: readonly SimulatedReading[]): Promise<void>;
  /** Closes connections the sender keeps (none for HTTP). */
  close(): Promise<void>;
}

/** `POST /v1/accounts/{accountId}/readings` through the SDK (retries, token, idempotency key included). */
export class JsonApiSender implements ReadingSender {
  readonly protocol = 'JSON API';
  readonly credentialProtocol = null;

  constructor(private readonly account: Account) {}

  async send(device: SimulatedDevice, readings: readonly SimulatedReading[]): Promise<void> {
    const result = await this.account.readings.create(
      readings.map((reading) => ({
        deviceId: device.id,
        recordedAt: reading.recordedAt.toISOString(),
        location: { lat: reading.lat, lng: reading.lng, accuracyMeters: reading.accuracyMeters },
        temperatureC: reading.temperatureC,
        batteryPercent: reading.batteryPercent,
      })),
    );
    if (result.rejected.length > 0) {
      throw new Error(`the API refused readings of ${device.serialNumber}: ${JSON.stringify(result.rejected)}`);
    }
  }

  /** HTTP keeps no connection of its own to close. */
  close(): Promise<void> {
    return Promise.resolve();
  }
}

/** Metres per second to knots (OsmAnd's `speed`). */
const KNOTS_PER_MPS = 3600 / 1852;
/** Attempts of one HTTP report answered 429 or 503 (resending is safe: a stored position comes back a duplicate). */
const HTTP_ATTEMPTS = 5;

/**
 * The device gateway's HTTP port, as a phone app or an HTTP tracker reports (docs/protocols/http.md):
 * the OsmAnd protocol (`GET /t/{secret}/?id=...&lat=...&lon=...`, the protocol of OsmAnd and Traccar
 * Client), one request per reading. OsmAnd has no temperature parameter, and Traccar Client's JSON has
 * none either; so for a device whose temperature matters (the cold-chain trip) it posts the gateway's
 * own device JSON (`POST /v1/readings`, bearer secret), which carries every field of a reading.
 */
export class HttpSender implements ReadingSender {
  readonly protocol = 'HTTP';
  readonly credentialProtocol = 'Http';

  /** `baseUrl`: the device gateway's HTTP listener, e.g. `http://127.0.0.1:5055`. */
  constructor(private readonly baseUrl: string) {}

  describe(device: SimulatedDevice): string {
    return device.needsTemperature ? 'HTTP, device JSON POST /v1/readings (OsmAnd has no temperature)' : 'HTTP, OsmAnd protocol';
  }

  async send(device: SimulatedDevice, readings: readonly SimulatedReading[]): Promise<void> {
    const { identifier, secret } = credentialOf(device, 'Http');
    if (device.needsTemperature) {
      const body = JSON.stringify({ readings: readings.map((reading) => deviceJson(reading)) });
      const answer = await this.request(device, `${this.baseUrl}/v1/readings`, {
        method: 'POST',
        headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
        body,
      });
      const outcome = JSON.parse(answer) as { rejected?: unknown[] };
      if (outcome.rejected && outcome.rejected.length > 0) throw new Error(`the device gateway refused readings of ${device.serialNumber}: ${answer}`);
      return;
    }
    for (const reading of readings) {
      const query = new URLSearchParams({
        id: identifier,
        lat: reading.lat.toFixed(6),
        lon: reading.lng.toFixed(6),
        // Milliseconds: two readings of a fast simulation may fall in one second.
        timestamp: String(reading.recordedAt.getTime()),
        speed: (reading.speedMps * KNOTS_PER_MPS).toFixed(1),
        bearing: String(reading.headingDegrees),
        accuracy: String(reading.accuracyMeters),
        batt: String(reading.batteryPercent),
      });
      await this.request(device, `${this.baseUrl}/t/${encodeURIComponent(secret)}/?${query}`, { method: 'GET' });
    }
  }

  close(): Promise<void> {
    return Promise.resolve();
  }

  /** One report, again after `Retry-After` while the answer is 429 or 503; anything but 200 after that throws. */
  private async request(device: SimulatedDevice, url: string, init: RequestInit): Promise<string> {
    for (let attempt = 1; ; attempt++) {
      const response = await fetch(url, { ...init, signal: AbortSignal.timeout(30000) });
      const text = await response.text();
      if (response.status === 200) return text;
      const retryable = response.status === 429 || response.status === 503;
      if (!retryable || attempt >= HTTP_ATTEMPTS) {
        throw new Error(`the device gateway answered ${response.status} to a report of ${device.serialNumber}: ${text}`);
      }
      const seconds = Number(response.headers.get('retry-after') ?? '1');
      await new Promise((resolve) => setTimeout(resolve, Math.min(10, Number.isFinite(seconds) ? seconds : 1) * 1000));
    }
  }
}

/**
 * The device gateway's MQTT listener (docs/protocols/mqtt.md): one MQTT 5 connection per device (user
 * name the credential's identifier, password its secret), readings published as JSON at QoS 1 on
 * `devices/{identifier}/readings`. `send` resolves on the PUBACK, which the gateway sends only once the
 * readings are committed; a PUBACK with a failure reason (quota, payload) rejects. A PUBACK does not say
 * that a reading was refused (the gateway publishes that on `devices/{identifier}/rejected`, which each
 * connection subscribes to): the device's next `send` rejects with what was refused, as the JSON and
 * HTTP senders reject on refused readings.
 */
export class MqttSender implements ReadingSender {
  readonly protocol = 'MQTT';
  readonly credentialProtocol = 'Mqtt';
  private readonly clients = new Map<string, Promise<MqttClient>>();
  /** What the gateway said it refused, per device, not yet reported. */
  private readonly refused = new Map<string, string[]>();

  /** `url`: the device gateway's MQTT listener, e.g. `mqtt://127.0.0.1:1884`. */
  constructor(private readonly url: string) {}

  async send(device: SimulatedDevice, readings: readonly SimulatedReading[]): Promise<void> {
    const client = await this.clientOf(device);
    const refused = this.refused.get(device.id);
    if (refused && refused.length > 0) throw new Error(`the device gateway refused readings of ${device.serialNumber}: ${refused.join('; ')}`);
    const { identifier } = credentialOf(device, 'Mqtt');
    await client.publishAsync(`devices/${identifier}/readings`, JSON.stringify({ readings: readings.map((reading) => deviceJson(reading)) }), { qos: 1 });
  }

  async close(): Promise<void> {
    const clients = await Promise.allSettled(this.clients.values());
    this.clients.clear();
    await Promise.all(clients.map((client) => (client.status === 'fulfilled' ? client.value.endAsync() : undefined)));
  }

  private clientOf(device: SimulatedDevice): Promise<MqttClient> {
    let client = this.clients.get(device.id);
    if (!client) {
      const { identifier, secret } = credentialOf(device, 'Mqtt');
      const connected = mqtt.connectAsync(this.url, {
        protocolVersion: 5,
        username: identifier,
        password: secret,
        clientId: `simulator-${identifier}`,
        connectTimeout: 10000,
        // A lost connection comes back by itself; the PUBLISH waiting for its PUBACK is resent on it.
        reconnectPeriod: 1000,
        // The first connection must succeed as it is: a refused CONNECT (a bad secret) rejects instead of retrying.
      }, false);
      client = connected.then(async (connection) => {
        connection.on('message', (_topic, payload) => {
          const list = this.refused.get(device.id) ?? [];
          list.push(payload.toString('utf8'));
          this.refused.set(device.id, list);
        });
        await connection.subscribeAsync(`devices/${identifier}/rejected`, { qos: 0 });
        return connection;
      });
      this.clients.set(device.id, client);
    }
    return client;
  }
}

/** How long a Teltonika sender waits for the handshake's answer or a packet's acknowledgement. */
const TELTONIKA_ANSWER_MS = 30000;

/**
 * The device gateway's Teltonika listener (docs/protocols/teltonika.md), as an FMB tracker reports: one
 * TCP connection per device, the IMEI handshake (the credential's identifier; answered `01`), then one
 * Codec 8 packet per tick, the next only once the 4-byte acknowledgement of the record count came (the
 * gateway sends it once the records are committed). Battery and temperature travel as IO 113 and IO 72.
 */
export class TeltonikaSender implements ReadingSender {
  readonly protocol = 'Teltonika';
  readonly credentialProtocol = 'Teltonika';
  private readonly connections = new Map<string, Promise<TeltonikaConnection>>();

  constructor(
    private readonly host: string,
    private readonly port: number,
  ) {}

  identifierFor(): string {
    return randomImei();
  }

  async send(device: SimulatedDevice, readings: readonly SimulatedReading[]): Promise<void> {
    const records = readings.map((reading): AvlRecord => ({
      timestamp: reading.recordedAt.getTime(),
      priority: 0,
      longitude: Math.round(reading.lng * 1e7),
      latitude: Math.round(reading.lat * 1e7),
      altitude: 0,
      angle: reading.headingDegrees,
      satellites: 9,
      speed: Math.round(reading.speedMps * 3.6),
      eventIoId: 0,
      io: [
        { id: IO_BATTERY_PERCENT, size: 1, value: Math.round(reading.batteryPercent) },
        // Dallas temperature 1: signed, tenths of a degree.
        { id: IO_DALLAS_TEMPERATURE_1, size: 4, value: Math.round(reading.temperatureC * 10) },
      ],
    }));
    const packet = encodeCodec8Packet(records);
    try {
      await (await this.connectionOf(device)).exchange(packet, records.length);
    } catch (error) {
      if (error instanceof TeltonikaRefusal) throw error;
      // As a tracker does when its connection dropped or the acknowledgement never came: reconnect and
      // send the same records again (those stored the first time come back as duplicates, nothing twice).
      await (await this.connectionOf(device)).exchange(packet, records.length);
    }
  }

  private connectionOf(device: SimulatedDevice): Promise<TeltonikaConnection> {
    let connection = this.connections.get(device.id);
    if (!connection) {
      const opened = TeltonikaConnection.open(this.host, this.port, credentialOf(device, 'Teltonika').identifier, () => {
        if (this.connections.get(device.id) === opened) this.connections.delete(device.id);
      });
      connection = opened;
      this.connections.set(device.id, connection);
    }
    return connection;
  }

  async close(): Promise<void> {
    const connections = await Promise.allSettled(this.connections.values());
    this.connections.clear();
    for (const connection of connections) if (connection.status === 'fulfilled') connection.value.close();
  }
}

/** The gateway answered the handshake or a packet in a way a resend cannot change. */
class TeltonikaRefusal extends Error {}

/** One tracker's TCP connection: bytes come in, and each exchange waits for the number of bytes it expects. */
class TeltonikaConnection {
  private buffered = Buffer.alloc(0);
  private waiting: { bytes: number; resolve: (bytes: Buffer) => void; reject: (error: Error) => void } | undefined;
  private failure: Error | undefined;

  private constructor(
    private readonly socket: Socket,
    private readonly onFailure: () => void,
  ) {
    socket.on('data', (chunk: Buffer) => {
      this.buffered = Buffer.concat([this.buffered, chunk]);
      this.deliver();
    });
    socket.on('error', (error) => this.fail(error));
    socket.on('close', () => this.fail(new Error('the device gateway closed the Teltonika connection')));
  }

  /** Connects and sends the handshake; `onFailure` hears once that the connection is no longer usable. */
  static async open(host: string, port: number, imei: string, onFailure: () => void): Promise<TeltonikaConnection> {
    const socket = connectTcp({ host, port });
    const connection = new TeltonikaConnection(socket, onFailure);
    socket.write(encodeHandshake(imei));
    const answer = await connection.read(1);
    if (answer[0] !== 0x01) {
      connection.close();
      throw new TeltonikaRefusal(`the device gateway refused IMEI ${imei} (answered ${answer.toString('hex')})`);
    }
    return connection;
  }

  /** Writes a packet and waits for its acknowledgement: the record count, 4 bytes big-endian. */
  async exchange(packet: Buffer, records: number): Promise<void> {
    this.socket.write(packet);
    const ack = (await this.read(4)).readUInt32BE(0);
    if (ack !== records) throw new TeltonikaRefusal(`the device gateway acknowledged ${ack} records of ${records}`);
  }

  close(): void {
    this.fail(new Error('closed'));
  }

  private read(bytes: number): Promise<Buffer> {
    return new Promise<Buffer>((resolve, reject) => {
      if (this.failure) return reject(this.failure);
      const timer = setTimeout(() => this.fail(new Error(`no answer from the device gateway within ${TELTONIKA_ANSWER_MS} ms`)), TELTONIKA_ANSWER_MS);
      this.waiting = {
        bytes,
        resolve: (value) => (clearTimeout(timer), resolve(value)),
        reject: (error) => (clearTimeout(timer), reject(error)),
      };
      this.deliver();
    });
  }

  private deliver(): void {
    const waiting = this.waiting;
    if (!waiting || this.buffered.length < waiting.bytes) return;
    this.waiting = undefined;
    const bytes = this.buffered.subarray(0, waiting.bytes);
    this.buffered = this.buffered.subarray(waiting.bytes);
    waiting.resolve(bytes);
  }

  private fail(error: Error): void {
    if (this.failure === undefined) this.onFailure();
    this.failure ??= error;
    const waiting = this.waiting;
    this.waiting = undefined;
    waiting?.reject(error);
    this.socket.destroy();
  }
}

/** A reading in the device gateway's JSON (MQTT payloads, `POST /v1/readings`): a reading of the API without `deviceId`. */
function deviceJson(reading: SimulatedReading) {
  return {
    recordedAt: reading.recordedAt.toISOString(),
    location: {
      lat: reading.lat,
      lng: reading.lng,
      accuracyMeters: reading.accuracyMeters,
      speedMps: reading.speedMps,
      headingDegrees: reading.headingDegrees,
    },
    temperatureC: reading.temperatureC,
    batteryPercent: reading.batteryPercent,
  };
}

function credentialOf(device: SimulatedDevice, protocol: CredentialProtocol): { identifier: string; secret: string } {
  const credential = device.credential;
  if (!credential || (protocol !== 'Teltonika' && !credential.secret)) throw new Error(`${device.serialNumber} has no ${protocol} credential`);
  return { identifier: credential.identifier, secret: credential.secret ?? '' };
}
