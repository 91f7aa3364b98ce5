import { createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { createServer as createTlsServer } from 'node:tls';
import { createLogger, type Logger } from '@tracking/core';
import type { DeviceAuthenticator, DeviceSink } from '../ingest/device-sink.js';
import { type AddressLimiter, type ConnectionSlots, LocalRateLimiter } from '../ingest/local-limits.js';
import { type ConnectionHost, MqttConnection, Reason } from './mqtt-connection.js';
import { type MqttMetrics, noMqttMetrics } from './mqtt-metrics.js';
import { MAX_PAYLOAD_BYTES } from './mqtt-payload.js';

export interface MqttListenerOptions {
  /** Plain MQTT port (0: any free port). */
  port: number;
  host?: string;
  /** MQTT over TLS beside the plain port, with the PEM certificate chain and key (not file names). */
  tls?: { cert: string | Buffer; key: string | Buffer; port: number };
  /** The largest packet after CONNECT was accepted; default a 256 KiB payload plus room for topic and header. */
  maxPacketBytes?: number;
  /** The largest packet before that: a CONNECT with credentials needs far less. */
  maxPreAuthPacketBytes?: number;
  /** A connection that has not authenticated by then is closed (default 10 s). */
  authDeadlineMs?: number;
  /** Connections at once on this listener, plain and TLS together (default 50,000). */
  maxConnections?: number;
  /**
   * The replica's connection budget shared with the other listeners (DEVICE_MAX_CONNECTIONS): a place is
   * taken per connection accepted and given back when it closes; none left closes the new one at once.
   */
  connectionSlots?: ConnectionSlots;
  /** QoS 1 and 2 messages of one connection submitted and not yet acknowledged; reading pauses at this many. */
  maxInFlight?: number;
  /**
   * Failed authentications per address before CONNECTs from it are refused unchecked (`take` after each
   * failure, `allows` before checking). The device gateway hands every listener the replica's one
   * limiter (DEVICE_AUTH_FAILURE_LIMIT), so guesses count across protocols. Default 20 per minute; null: none.
   */
  failedAuthLimiter?: AddressLimiter | null;
  metrics?: MqttMetrics;
  logger?: Logger;
}

/**
 * The device gateway's MQTT 3.1.1 and 5 listener: authenticates each device with its credential,
 * hands the readings it publishes to the DeviceSink, and acknowledges each PUBLISH only once the sink
 * committed it. The rules are in docs/protocols/mqtt.md.
 *
 * Built on mqtt-packet (the codec of aedes and MQTT.js) rather than an embedded broker: aedes 1.2, the
 * current stable release, refuses MQTT 5 CONNECTs; aedes 2.0.0-beta.1 speaks MQTT 5 but its hooks cannot
 * choose a PUBACK reason (0x97, 0x99) and its CONNACK says neither Maximum QoS 1 nor Retain Available 0,
 * which the contract requires; and a broker's routing, retained store, sessions and wills are what the
 * contract forbids or has no use for. Details: docs/protocols/mqtt.md, "Why not a broker".
 */
export class MqttListener {
  private readonly servers: Server[] = [];
  private readonly connections = new Set<MqttConnection>();
  /** Authenticated connections by credential identifier, to deliver `devices/{identifier}/rejected`. */
  private readonly byIdentifier = new Map<string, Set<MqttConnection>>();
  /** Authenticated connections by identifier and client id (MQTT-3.1.4-2: a new one takes over). */
  private readonly bySession = new Map<string, MqttConnection>();
  private readonly inFlight = new Set<Promise<void>>();
  private readonly host: ConnectionHost;
  private readonly maxConnections: number;
  private readonly maxPreAuthPacketBytes: number;
  private readonly authDeadlineMs: number;
  private readonly metrics: MqttMetrics;
  private stopping = false;
  private serversClosed: Promise<void> | undefined;

  constructor(
    authenticator: DeviceAuthenticator,
    sink: DeviceSink,
    private readonly options: MqttListenerOptions,
  ) {
    this.metrics = options.metrics ?? noMqttMetrics;
    this.maxConnections = options.maxConnections ?? 50_000;
    this.maxPreAuthPacketBytes = options.maxPreAuthPacketBytes ?? 4096;
    this.authDeadlineMs = options.authDeadlineMs ?? 10_000;
    this.host = {
      authenticator,
      sink,
      metrics: this.metrics,
      logger: options.logger ?? createLogger('device-gateway').child({ listener: 'mqtt' }),
      maxPacketBytes: options.maxPacketBytes ?? MAX_PAYLOAD_BYTES + 1024,
      maxInFlight: options.maxInFlight ?? 16,
      failedAuth: options.failedAuthLimiter === undefined ? new LocalRateLimiter({ quota: 20, windowSeconds: 60, burst: 20 }) : options.failedAuthLimiter,
      track: (work) => {
        this.inFlight.add(work);
        void work.finally(() => this.inFlight.delete(work));
      },
      registered: (connection) => this.register(connection),
      closed: (connection) => this.forget(connection),
      deliver: (identifier, topic, payload) => {
        for (const connection of this.byIdentifier.get(identifier) ?? []) connection.deliver(topic, payload);
      },
    };
  }

  /** Opens the plain port (and the TLS port when configured); resolves with the ports bound. */
  async start(): Promise<{ port: number; tlsPort?: number }> {
    const plain = createServer((socket) => this.accept(socket));
    const port = await this.listen(plain, this.options.port);
    if (!this.options.tls) return { port };
    const { cert, key } = this.options.tls;
    // A TLS handshake that never finishes is bounded by the same deadline as authentication.
    const secure = createTlsServer({ cert, key, handshakeTimeout: this.authDeadlineMs }, (socket) => this.accept(socket));
    secure.maxConnections = this.maxConnections;
    secure.on('tlsClientError', () => undefined);
    const tlsPort = await this.listen(secure, this.options.tls.port);
    return { port, tlsPort };
  }

  /** The graceful stop in one: `stopAccepting`, then `close`. */
  async stop(): Promise<void> {
    await this.stopAccepting();
    await this.close();
  }

  /**
   * Graceful shutdown, step 1: stops accepting and reads nothing more from the open connections (what
   * they already sent is still submitted and acknowledged).
   */
  async stopAccepting(): Promise<void> {
    this.stopping = true;
    this.serversClosed ??= Promise.all(this.servers.map((server) => new Promise<void>((resolve) => server.close(() => resolve())))).then(() => undefined);
    for (const connection of this.connections) connection.drain();
  }

  /**
   * Graceful shutdown, last step: waits until every submitted message settled (and its acknowledgement
   * was written), then closes the connections, MQTT 5 ones with DISCONNECT 0x8B (server shutting down).
   */
  async close(): Promise<void> {
    if (!this.stopping) await this.stopAccepting();
    while (this.inFlight.size > 0) await Promise.allSettled([...this.inFlight]);
    for (const connection of [...this.connections]) connection.close(Reason.ServerShuttingDown);
    await this.serversClosed;
  }

  /** Connections open now, authenticated or not. */
  get connectionCount(): number {
    return this.connections.size;
  }

  private listen(server: Server, port: number): Promise<number> {
    this.servers.push(server);
    return new Promise((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, this.options.host ?? '0.0.0.0', () => {
        server.off('error', reject);
        resolve((server.address() as AddressInfo).port);
      });
    });
  }

  private accept(socket: Socket): void {
    if (this.stopping || this.connections.size >= this.maxConnections || (this.options.connectionSlots && !this.options.connectionSlots.tryAcquire())) {
      this.metrics.refused('connection_cap');
      socket.on('error', () => undefined);
      socket.destroy();
      return;
    }
    const connection = new MqttConnection(socket, this.host, this.maxPreAuthPacketBytes, this.authDeadlineMs);
    this.connections.add(connection);
    this.metrics.connectionOpened();
  }

  private register(connection: MqttConnection): void {
    const session = connection.session;
    if (!session) return;
    const { key } = session;
    const previous = this.bySession.get(key);
    this.bySession.set(key, connection);
    if (previous && previous !== connection) previous.close(Reason.SessionTakenOver);
    const { identifier } = session.identity;
    let same = this.byIdentifier.get(identifier);
    if (!same) this.byIdentifier.set(identifier, (same = new Set()));
    same.add(connection);
  }

  private forget(connection: MqttConnection): void {
    if (!this.connections.delete(connection)) return;
    this.options.connectionSlots?.release();
    this.metrics.connectionClosed();
    const session = connection.session;
    if (!session) return;
    if (this.bySession.get(session.key) === connection) this.bySession.delete(session.key);
    const { identifier } = session.identity;
    const same = this.byIdentifier.get(identifier);
    same?.delete(connection);
    if (same?.size === 0) this.byIdentifier.delete(identifier);
  }
}
