import { readFile } from 'node:fs/promises';
import { createServer as createTcpServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { createSecureContext, TLSSocket } from 'node:tls';
import type { Logger } from '@tracking/core';
import type { Registry } from 'prom-client';
import type { DeviceAuthenticator, DeviceIdentity, DeviceSink, SubmitResult } from '../ingest/device-sink.js';
import {
  AvlPacketReader,
  decodeAvlPacket,
  DEFAULT_MAX_DATA_LENGTH,
  encodeAck,
  parseHandshake,
  TeltonikaProtocolError,
} from './teltonika-codec.js';
import { recordToReading } from './teltonika-mapping.js';
import { TeltonikaMetrics } from './teltonika-metrics.js';

export interface TeltonikaListenerOptions {
  port: number;
  host?: string;
  /** Teltonika over TLS when both files are given (PEM). */
  tls?: { certFile: string; keyFile: string };
  /** A connection that has not sent a known IMEI within this time is closed (the contract's 10 s). */
  authDeadlineMs: number;
  /** Connections beyond this are closed as they arrive. */
  maxConnections: number;
  /** The largest AVL data length accepted; a longer announced length closes the connection. */
  maxDataLength?: number;
  /** The registry the device gateway exposes on its metrics endpoint. */
  metrics?: Registry;
  logger?: Logger;
}

const ACCEPT = Buffer.from([0x01]);
const REFUSE = Buffer.from([0x00]);
/** How long a closed connection may stay half-open for the device to read our last bytes. */
const CLOSE_LINGER_MS = 1000;

/**
 * The Teltonika listener (docs/protocols/teltonika.md): IMEI handshake, then AVL packets (Codec 8 and
 * 8 Extended), each acknowledged with its record count only once `DeviceSink.submit` says the readings
 * were committed (or judged and refused). One packet per connection is in flight; what a device sends
 * meanwhile waits, and beyond one more packet's worth the socket is paused, so a device that sends faster
 * than we store waits in TCP. (A device that keeps to the protocol sends nothing while it waits for its
 * acknowledgement; not pausing for every packet spares two system calls per packet.)
 */
export class TeltonikaListener {
  private server: Server | undefined;
  private readonly connections = new Set<TeltonikaConnection>();
  private readonly metrics: TeltonikaMetrics | undefined;
  private stopping = false;

  constructor(
    private readonly authenticator: DeviceAuthenticator,
    private readonly sink: DeviceSink,
    private readonly options: TeltonikaListenerOptions,
  ) {
    this.metrics = options.metrics ? new TeltonikaMetrics(options.metrics) : undefined;
  }

  /** Starts listening; resolves with the port bound (useful with port 0). */
  async start(): Promise<{ port: number }> {
    const { tls } = this.options;
    const secureContext = tls ? createSecureContext({ cert: await readFile(tls.certFile), key: await readFile(tls.keyFile) }) : undefined;
    // A plain TCP server either way: with TLS each socket is wrapped as it arrives, so that the deadline
    // to authenticate runs from the TCP connect and covers the TLS handshake too.
    const server = createTcpServer((raw) => {
      raw.setNoDelay(true);
      raw.setKeepAlive(true, 60_000);
      this.accept(secureContext ? new TLSSocket(raw, { isServer: true, secureContext }) : raw);
    });
    server.maxConnections = this.options.maxConnections;
    server.on('drop', (drop) => this.options.logger?.debug({ remoteAddress: drop?.remoteAddress }, 'teltonika: connection over the cap closed'));
    this.server = server;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.options.port, this.options.host, () => {
        server.off('error', reject);
        resolve();
      });
    });
    return { port: (server.address() as AddressInfo).port };
  }

  /**
   * Stops accepting, lets the packets in flight finish (committed ones are still acknowledged), then
   * closes every connection.
   */
  async stop(): Promise<void> {
    const server = this.server;
    if (!server) return;
    this.stopping = true;
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    await Promise.all([...this.connections].map((connection) => connection.drain()));
    for (const connection of this.connections) connection.close();
    await closed;
    this.server = undefined;
  }

  private accept(socket: Socket): void {
    if (this.stopping) {
      socket.destroy();
      return;
    }
    const connection = new TeltonikaConnection(socket, this.authenticator, this.sink, this.options, this.metrics, () => this.stopping);
    this.connections.add(connection);
    socket.once('close', () => this.connections.delete(connection));
  }
}

type State = 'handshake' | 'authenticating' | 'ready' | 'closed';

/** One device's connection: the handshake, then one packet at a time. */
class TeltonikaConnection {
  private state: State = 'handshake';
  private handshake = Buffer.alloc(0);
  private readonly reader: AvlPacketReader;
  private identity: DeviceIdentity | undefined;
  private unwatch: (() => void) | undefined;
  private authTimer: NodeJS.Timeout | undefined;
  private retryTimer: NodeJS.Timeout | undefined;
  /** The packet being submitted, if any. */
  private inFlight: Promise<void> | undefined;
  private readonly log: Logger | undefined;
  /** Bytes held while a packet is in flight before the socket is paused: one more whole packet. */
  private readonly holdLimit: number;

  constructor(
    private readonly socket: Socket,
    private readonly authenticator: DeviceAuthenticator,
    private readonly sink: DeviceSink,
    options: TeltonikaListenerOptions,
    private readonly metrics: TeltonikaMetrics | undefined,
    private readonly stopping: () => boolean,
  ) {
    const maxDataLength = options.maxDataLength ?? DEFAULT_MAX_DATA_LENGTH;
    this.reader = new AvlPacketReader(maxDataLength);
    this.holdLimit = maxDataLength + 12;
    this.log = options.logger?.child({ protocol: 'Teltonika', remoteAddress: socket.remoteAddress });
    metrics?.connectionOpened();
    this.authTimer = setTimeout(() => {
      this.metrics?.authFailed();
      this.log?.info('teltonika: no IMEI accepted before the deadline, closing');
      this.close();
    }, options.authDeadlineMs);
    socket.on('data', (chunk: Buffer) => this.onData(chunk));
    socket.on('error', (error) => {
      // A reset, or over TLS a failed handshake (a plain TCP client on the TLS port, a wrong certificate).
      this.log?.debug({ err: error.message }, 'teltonika: socket error');
      this.state = 'closed';
      this.clearTimers();
      socket.destroy();
    });
    socket.once('close', () => this.onClose());
  }

  /** Resolves once no packet is in flight (for a graceful stop). */
  async drain(): Promise<void> {
    while (this.inFlight) await this.inFlight;
  }

  /**
   * Closes after what was written (an acknowledgement, the 0x00 of a refusal) has gone out. The input is
   * drained meanwhile, unread (closing with unread input sends a reset that can overtake the last
   * write), and a peer that never closes its side is cut off shortly after.
   */
  close(lastWords?: Buffer): void {
    if (this.state === 'closed') return;
    this.state = 'closed';
    this.clearTimers();
    if (lastWords) this.socket.end(lastWords);
    else this.socket.end();
    this.socket.resume();
    setTimeout(() => this.socket.destroy(), CLOSE_LINGER_MS).unref();
  }

  private onData(chunk: Buffer): void {
    if (this.state === 'handshake') {
      this.handshake = Buffer.concat([this.handshake, chunk]);
      const result = parseHandshake(this.handshake);
      if (result.kind === 'incomplete') return;
      if (result.kind === 'invalid') {
        this.log?.info({ reason: result.reason }, 'teltonika: malformed handshake, refusing');
        this.refuse();
        return;
      }
      this.reader.push(this.handshake.subarray(result.consumed));
      this.handshake = Buffer.alloc(0);
      this.state = 'authenticating';
      this.socket.pause();
      void this.authenticate(result.imei);
      return;
    }
    if (this.state === 'closed') return;
    this.reader.push(chunk);
    if ((this.inFlight || this.retryTimer) && this.reader.pendingBytes > this.holdLimit) this.socket.pause();
    if (this.state === 'ready') this.pump();
  }

  private async authenticate(imei: string): Promise<void> {
    let identity: DeviceIdentity | null;
    try {
      identity = await this.authenticator.authenticate('Teltonika', imei, null);
    } catch (error) {
      // Nothing is known about the device: no answer, the device reconnects later.
      this.log?.warn({ err: error instanceof Error ? error.message : String(error), imei }, 'teltonika: authentication unavailable, closing');
      this.close();
      return;
    }
    if (this.state !== 'authenticating') return;
    if (!identity) {
      this.log?.info({ imei }, 'teltonika: unknown or retired IMEI, refusing');
      this.refuse();
      return;
    }
    clearTimeout(this.authTimer);
    this.authTimer = undefined;
    this.identity = identity;
    this.log?.debug({ imei, deviceId: identity.deviceId }, 'teltonika: device accepted');
    this.unwatch = this.authenticator.watch(identity, () => {
      this.log?.info({ imei }, 'teltonika: credential revoked, closing');
      this.close();
    });
    this.state = 'ready';
    this.socket.write(ACCEPT);
    this.pump();
  }

  /** Answers 0x00 and closes. */
  private refuse(): void {
    this.metrics?.authFailed();
    this.close(REFUSE);
  }

  /** Takes the next whole packet, if any and if none is in flight; else reads on. */
  private pump(): void {
    const identity = this.identity;
    if (this.state !== 'ready' || !identity || this.inFlight || this.retryTimer) return;
    if (this.stopping()) {
      this.socket.pause();
      return;
    }
    let packet: Buffer | null;
    try {
      packet = this.reader.next();
    } catch (error) {
      this.malformed(error);
      return;
    }
    if (!packet) {
      if (this.socket.isPaused()) this.socket.resume();
      return;
    }
    const received = performance.now();
    this.inFlight = this.handle(identity, packet, received).finally(() => {
      this.inFlight = undefined;
      this.pump();
    });
  }

  private async handle(identity: DeviceIdentity, packet: Buffer, received: number): Promise<void> {
    let decoded;
    try {
      decoded = decodeAvlPacket(packet);
    } catch (error) {
      this.malformed(error);
      return;
    }
    const readings: Record<string, unknown>[] = [];
    for (const record of decoded.records) {
      const reading = recordToReading(record);
      if (reading) readings.push(reading);
    }

    let result: SubmitResult;
    if (readings.length === 0) {
      result = { kind: 'committed', outcome: { accepted: 0, duplicates: 0, unassigned: 0, rejected: [] } };
    } else {
      try {
        result = await this.sink.submit(identity, readings);
      } catch (error) {
        this.log?.warn({ err: error instanceof Error ? error.message : String(error) }, 'teltonika: submit failed');
        result = { kind: 'unavailable' };
      }
    }
    this.metrics?.message(result.kind);
    if (this.state !== 'ready') return;

    switch (result.kind) {
      case 'committed': {
        const { accepted, duplicates, rejected } = result.outcome;
        this.metrics?.records('accepted', accepted);
        this.metrics?.records('duplicate', duplicates);
        this.metrics?.records('rejected', rejected.length);
        // Counted once acknowledged, so that a packet resent after "limited" or "unavailable" counts once.
        this.metrics?.records('empty', decoded.recordCount - readings.length);
        if (rejected.length > 0) this.log?.info({ deviceId: identity.deviceId, rejected }, 'teltonika: records refused by the judgement, acknowledged');
        this.socket.write(encodeAck(decoded.recordCount));
        this.metrics?.acknowledged((performance.now() - received) / 1000);
        return;
      }
      case 'limited':
        // No acknowledgement: the device sends the packet again. Nothing is read until the budget allows.
        this.socket.pause();
        this.retryTimer = setTimeout(() => {
          this.retryTimer = undefined;
          this.pump();
        }, result.retryAfterSeconds * 1000);
        return;
      case 'unavailable':
        // Nothing is known to be stored: no acknowledgement, the device sends the packet again.
        return;
      case 'revoked':
        this.close();
        return;
    }
  }

  private malformed(error: unknown): void {
    this.metrics?.message('malformed');
    const fault = error instanceof TeltonikaProtocolError ? error.fault : 'Unexpected';
    this.log?.info({ fault, err: error instanceof Error ? error.message : String(error) }, 'teltonika: malformed packet, closing without acknowledgement');
    this.close();
  }

  private clearTimers(): void {
    clearTimeout(this.authTimer);
    clearTimeout(this.retryTimer);
    this.authTimer = undefined;
    this.retryTimer = undefined;
    this.unwatch?.();
    this.unwatch = undefined;
  }

  private onClose(): void {
    if (this.state !== 'closed') {
      this.state = 'closed';
      this.clearTimers();
    }
    this.unwatch?.();
    this.unwatch = undefined;
    this.metrics?.connectionClosed();
  }
}
