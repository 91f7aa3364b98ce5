import { randomUUID } from 'node:crypto';
import type { Socket } from 'node:net';
import { type ErrorBody, ErrorCode } from '@tracking/contracts';
import type { Logger } from '@tracking/core';
import mqttPacket, { type IConnectPacket, type IPublishPacket, type ISubscribePacket, type IUnsubscribePacket, type Packet } from 'mqtt-packet';
import type { DeviceAuthenticator, DeviceIdentity, DeviceSink, SubmitResult } from '../ingest/device-sink.js';
import type { AddressLimiter } from '../ingest/local-limits.js';
import { type Frame, MqttFramer } from './mqtt-framer.js';
import type { MqttMetrics, MqttRefusal } from './mqtt-metrics.js';
import { MAX_PAYLOAD_BYTES, readingsFromPayload } from './mqtt-payload.js';
import { deviceTopics, topicMatches } from './mqtt-topics.js';

/** MQTT 5 reason codes the listener sends (MQTT 5.0 section 2.4). */
export const Reason = {
  Success: 0x00,
  NoMatchingSubscribers: 0x10,
  UnspecifiedError: 0x80,
  MalformedPacket: 0x81,
  ProtocolError: 0x82,
  UnsupportedProtocolVersion: 0x84,
  ClientIdentifierNotValid: 0x85,
  BadUserNameOrPassword: 0x86,
  Banned: 0x8a,
  NotAuthorized: 0x87,
  ServerUnavailable: 0x88,
  ServerBusy: 0x89,
  ServerShuttingDown: 0x8b,
  KeepAliveTimeout: 0x8d,
  SessionTakenOver: 0x8e,
  TopicAliasInvalid: 0x94,
  PacketTooLarge: 0x95,
  QuotaExceeded: 0x97,
  AdministrativeAction: 0x98,
  PayloadFormatInvalid: 0x99,
  RetainNotSupported: 0x9a,
  QosNotSupported: 0x9b,
} as const;

/** MQTT 3.1.1 CONNACK return codes (section 3.2.2.3). */
const ReturnCode = { UnacceptableProtocolVersion: 1, IdentifierRejected: 2, ServerUnavailable: 3, BadUserNameOrPassword: 4, NotAuthorized: 5 } as const;

/** MQTT 3.1.1 SUBACK failure. */
const SUBACK_FAILURE = 0x80;
/** How many topic filters one connection may hold (it only ever needs `devices/{identifier}/rejected`). */
const MAX_SUBSCRIPTIONS = 8;
/** How long a closed connection may take to flush its last packets before the socket is destroyed. */
const CLOSE_GRACE_MS = 2000;

/** What a connection needs from its listener. */
export interface ConnectionHost {
  readonly authenticator: DeviceAuthenticator;
  readonly sink: DeviceSink;
  readonly metrics: MqttMetrics;
  readonly logger: Logger;
  readonly maxPacketBytes: number;
  readonly maxInFlight: number;
  /** Refuses addresses with too many failed authentications (the replica's, shared by every protocol); null: no limit. */
  readonly failedAuth: AddressLimiter | null;
  /** Counts a submit the listener's stop() must wait for. */
  track(work: Promise<void>): void;
  /** Called once the connection authenticated; the listener closes an older connection of the same client id. */
  registered(connection: MqttConnection): void;
  closed(connection: MqttConnection): void;
  /** Publishes (QoS 0) to the connections of `identifier` subscribed to `topic`. */
  deliver(identifier: string, topic: string, payload: Buffer): void;
}

/** One PUBLISH waiting for its acknowledgement, in the order the PUBLISH packets came (MQTT-4.6.0-2). */
interface AckSlot {
  /** The acknowledgement once decided: a packet to generate, or its bytes (`pubackBytes`). */
  packet: Packet | Buffer | null;
  readAt: number;
}

/** Who an accepted connection is. */
export interface MqttSession {
  identity: DeviceIdentity;
  topics: ReturnType<typeof deviceTopics>;
  /** `identifier` + client id, for the takeover rule (MQTT-3.1.4-2). */
  key: string;
}

/**
 * One device's MQTT connection: the CONNECT handshake against the DeviceAuthenticator, then PUBLISH
 * packets to the DeviceSink, each acknowledged only once the sink resolved. A small hand-written state
 * machine over mqtt-packet rather than a broker; see docs/protocols/mqtt.md, "Why not a broker".
 */
export class MqttConnection {
  /** Set once CONNECT was accepted. */
  session: MqttSession | null = null;
  private version: 4 | 5 = 4;
  private state: 'new' | 'authenticating' | 'connected' | 'closed' = 'new';
  private readonly framer: MqttFramer;
  private frames: Frame[] = [];
  /** The first byte arrived. */
  private started = false;
  private processing = false;
  /** Why reading is paused; the socket reads again when none is left. */
  private pauses = 0;
  private inFlight = 0;
  private acks: AckSlot[] = [];
  private subscriptions: string[] = [];
  private unwatch: (() => void) | null = null;
  private authTimer: NodeJS.Timeout | null = null;
  /** The waits of limited messages (MQTT 3.1.1), woken early when the connection closes. */
  private retryTimers: Set<{ timer: NodeJS.Timeout; wake: () => void }> | null = null;
  /** Set by the listener's stop(): read nothing more, finish what is in flight. */
  private draining = false;

  constructor(
    readonly socket: Socket,
    private readonly host: ConnectionHost,
    maxPreAuthPacketBytes: number,
    authDeadlineMs: number,
  ) {
    this.framer = new MqttFramer(maxPreAuthPacketBytes);
    this.authTimer = setTimeout(() => this.refuseAndClose('auth_deadline'), authDeadlineMs);
    this.authTimer.unref();
    socket.setNoDelay(true);
    socket.on('data', (chunk: Buffer) => this.onData(chunk));
    socket.on('error', () => socket.destroy());
    socket.on('close', () => this.onClose());
    // Silence while we paused reading (a limit, messages in flight, stopping) is ours, not the device's.
    socket.on('timeout', () => this.pauses === 0 && this.close(Reason.KeepAliveTimeout));
  }

  /** Stops reading: the listener is stopping. What is in flight still gets its acknowledgement. */
  drain(): void {
    if (this.draining) return;
    this.draining = true;
    this.pause();
    for (const entry of [...(this.retryTimers ?? [])]) entry.wake();
  }

  /** Closes with MQTT 5 DISCONNECT `reason` when the device speaks MQTT 5 and is connected. */
  close(reason: number | null = null): void {
    if (this.state === 'closed' || this.socket.destroyed) return;
    const connected = this.state === 'connected';
    this.state = 'closed';
    if (connected && this.version === 5 && reason !== null) this.write({ cmd: 'disconnect', reasonCode: reason });
    this.socket.end();
    setTimeout(() => this.socket.destroy(), CLOSE_GRACE_MS).unref();
  }

  /** The credential stopped being live (DeviceAuthenticator.watch). */
  revoke(): void {
    this.host.metrics.refused('revoked');
    this.close(Reason.AdministrativeAction);
  }

  /** Writes a QoS 0 PUBLISH when one of the connection's filters matches `topic`. */
  deliver(topic: string, payload: Buffer): void {
    if (this.state !== 'connected' || !this.subscriptions.some((filter) => topicMatches(filter, topic))) return;
    this.write({ cmd: 'publish', topic, payload, qos: 0, retain: false, dup: false });
  }

  private onData(chunk: Buffer): void {
    if (this.state === 'closed') return;
    // MQTT-3.1.0-1: the first packet is CONNECT; anything else (a port scanner, HTTP) is dropped at its first byte.
    if (!this.started && chunk.length > 0) {
      this.started = true;
      if (chunk[0] !== 0x10) return this.protocolError(Reason.ProtocolError);
    }
    this.frames.push(...this.framer.push(chunk));
    this.processFrames();
  }

  /** Handles the frames read so far, one at a time, stopping while reading is paused or during CONNECT. */
  private processFrames(): void {
    if (this.processing) return;
    this.processing = true;
    try {
      while (this.pauses === 0 && this.state !== 'authenticating' && this.state !== 'closed') {
        const frame = this.frames.shift();
        if (!frame) break;
        this.handleFrame(frame);
      }
    } catch (error) {
      this.fail(error);
    } finally {
      this.processing = false;
    }
  }

  private handleFrame(frame: Frame): void {
    if (frame.kind === 'malformed') return this.protocolError(Reason.MalformedPacket);
    if (frame.kind === 'oversized') return this.oversized(frame);
    const packet = parseFrame(this.state === 'new' ? 'connect' : this.version, frame.bytes);
    if (!packet) return this.protocolError(Reason.MalformedPacket);
    this.handlePacket(packet);
  }

  private handlePacket(packet: Packet): void {
    if (this.state === 'new') {
      if (packet.cmd !== 'connect') return this.protocolError(Reason.ProtocolError);
      this.onConnect(packet).catch((error: unknown) => this.fail(error));
      return;
    }
    const session = this.session;
    if (!session) return this.protocolError(Reason.ProtocolError);
    switch (packet.cmd) {
      case 'publish':
        return this.onPublish(session, packet);
      case 'pubrel':
        return this.write({ cmd: 'pubcomp', messageId: packet.messageId });
      case 'subscribe':
        return this.onSubscribe(session, packet);
      case 'unsubscribe':
        return this.onUnsubscribe(packet);
      case 'pingreq':
        return this.write({ cmd: 'pingresp' });
      case 'disconnect':
        this.state = 'closed';
        this.socket.end();
        return;
      case 'puback':
      case 'pubrec':
      case 'pubcomp':
        // The listener only ever publishes at QoS 0: nothing of the device's to settle.
        return;
      default:
        return this.protocolError(Reason.ProtocolError);
    }
  }

  private async onConnect(packet: IConnectPacket): Promise<void> {
    this.state = 'authenticating';
    const version = packet.protocolVersion;
    if (version !== 4 && version !== 5) {
      this.version = 4;
      return this.refuseConnect('unsupported_protocol_version', ReturnCode.UnacceptableProtocolVersion, Reason.UnsupportedProtocolVersion);
    }
    this.version = version;
    if (version === 5 && packet.will?.retain) return this.refuseConnect('retain_not_supported', ReturnCode.ServerUnavailable, Reason.RetainNotSupported);
    if (version === 5 && packet.will?.qos === 2) return this.refuseConnect('qos_not_supported', ReturnCode.ServerUnavailable, Reason.QosNotSupported);
    if (version === 4 && packet.clientId === '' && !packet.clean) {
      return this.refuseConnect('protocol_error', ReturnCode.IdentifierRejected, Reason.ClientIdentifierNotValid);
    }
    const address = this.socket.remoteAddress;
    if (this.host.failedAuth && address !== undefined && !this.host.failedAuth.allows(address)) return this.refuseConnect('address_blocked', ReturnCode.NotAuthorized, Reason.Banned);
    if (!packet.username || !packet.password) return this.badCredentials(address);
    let identity: DeviceIdentity | null;
    try {
      identity = await this.host.authenticator.authenticate('Mqtt', packet.username, packet.password.toString('utf8'));
    } catch (error) {
      this.host.logger.warn({ err: error }, 'MQTT: the device authenticator failed');
      return this.refuseConnect('unavailable', ReturnCode.ServerUnavailable, Reason.ServerUnavailable);
    }
    if (this.state !== 'authenticating') return;
    if (!identity) return this.badCredentials(address);

    this.state = 'connected';
    if (this.authTimer) clearTimeout(this.authTimer);
    this.authTimer = null;
    this.framer.maxPacketBytes = this.host.maxPacketBytes;
    this.framer.skipOversized = version === 4;
    const assigned = packet.clientId === '' ? randomUUID() : null;
    this.session = { identity, topics: deviceTopics(identity.identifier), key: `${identity.identifier}\u0000${assigned ?? packet.clientId}` };
    this.unwatch = this.host.authenticator.watch(identity, () => this.revoke());
    this.host.registered(this);
    // MQTT-3.1.2-24: nothing from the device for one and a half keep-alive periods closes the connection.
    if (packet.keepalive) this.socket.setTimeout(packet.keepalive * 1500);
    if (version === 5) {
      this.write({
        cmd: 'connack',
        reasonCode: Reason.Success,
        sessionPresent: false,
        properties: {
          maximumQoS: 1,
          retainAvailable: false,
          maximumPacketSize: this.host.maxPacketBytes,
          receiveMaximum: this.host.maxInFlight,
          wildcardSubscriptionAvailable: true,
          sharedSubscriptionAvailable: false,
          subscriptionIdentifiersAvailable: false,
          ...(assigned ? { assignedClientIdentifier: assigned } : {}),
        },
      });
    } else {
      this.write({ cmd: 'connack', returnCode: 0, sessionPresent: false });
    }
    this.processFrames();
  }

  private badCredentials(address: string | undefined): void {
    if (address !== undefined) this.host.failedAuth?.take(address);
    this.refuseConnect('bad_credentials', ReturnCode.BadUserNameOrPassword, Reason.BadUserNameOrPassword);
  }

  private refuseConnect(refusal: MqttRefusal, returnCode: number, reasonCode: number): void {
    this.host.metrics.refused(refusal);
    if (this.state === 'closed') return;
    this.write(this.version === 5 ? { cmd: 'connack', reasonCode, sessionPresent: false } : { cmd: 'connack', returnCode, sessionPresent: false });
    this.close();
  }

  private onPublish(session: MqttSession, packet: IPublishPacket): void {
    const { topics } = session;
    if (this.version === 5) {
      if (packet.qos === 2) return this.refuseAndClose('qos_not_supported', Reason.QosNotSupported);
      if (packet.retain) return this.refuseAndClose('retain_not_supported', Reason.RetainNotSupported);
      if (packet.properties?.topicAlias !== undefined) return this.refuseAndClose('protocol_error', Reason.TopicAliasInvalid);
    }
    const slot = this.reserveAck(packet.qos);
    if (!topics.ownsTopic(packet.topic)) {
      this.host.metrics.refused('topic_not_allowed');
      this.host.metrics.message('topic_not_allowed');
      return this.settle(slot, packet, Reason.NotAuthorized);
    }
    if (packet.topic !== topics.readings) {
      this.host.metrics.message('other_topic');
      return this.settle(slot, packet, Reason.NoMatchingSubscribers);
    }
    const payload = typeof packet.payload === 'string' ? Buffer.from(packet.payload) : packet.payload;
    const parsed = readingsFromPayload(payload);
    if (!parsed.ok) return this.refusePayload(session, slot, packet, parsed.error);
    this.submit(session, slot, packet, parsed.readings);
  }

  /** A packet over the size limit: before CONNECT, close; MQTT 5, DISCONNECT 0x95; MQTT 3.1.1, skip it and acknowledge. */
  private oversized(frame: Extract<Frame, { kind: 'oversized' }>): void {
    this.host.metrics.refused('packet_too_large');
    const session = this.session;
    if (!session || this.version === 5) return this.close(Reason.PacketTooLarge);
    const type = frame.firstByte >> 4;
    const qos = (frame.firstByte >> 1) & 0x03;
    if (type !== 3) return this.close();
    if (qos === 0) return;
    // The head of a PUBLISH body: topic length, topic, packet id (MQTT 3.1.1 section 3.3.2).
    const head = frame.head;
    const topicLength = head.length >= 2 ? head.readUInt16BE(0) : -1;
    if (topicLength < 0 || head.length < 2 + topicLength + 2) return this.close();
    const messageId = head.readUInt16BE(2 + topicLength);
    const slot = this.reserveAck(qos);
    const error: ErrorBody = { code: ErrorCode.PayloadTooLarge, message: `The packet has ${frame.length} bytes; payloads of at most ${MAX_PAYLOAD_BYTES} bytes are accepted.` };
    this.refusePayload(session, slot, { cmd: 'publish', qos: qos as 1 | 2, messageId, topic: head.subarray(2, 2 + topicLength).toString('utf8'), payload: Buffer.alloc(0), dup: false, retain: false }, error);
  }

  private refusePayload(session: MqttSession, slot: AckSlot | null, packet: IPublishPacket, error: ErrorBody): void {
    this.host.metrics.refused('invalid_payload');
    this.host.metrics.message('invalid_payload');
    this.publishRejection(session, { error });
    this.settle(slot, packet, Reason.PayloadFormatInvalid);
  }

  private submit(session: MqttSession, slot: AckSlot | null, packet: IPublishPacket, readings: unknown[]): void {
    this.inFlight++;
    if (this.inFlight === this.host.maxInFlight) this.pause();
    this.host.track(
      this.submitUntilSettled(session, slot, packet, readings)
        .catch((error: unknown) => this.fail(error))
        .finally(() => {
          if (this.inFlight-- === this.host.maxInFlight) this.resume();
        }),
    );
  }

  private async submitUntilSettled(session: MqttSession, slot: AckSlot | null, packet: IPublishPacket, readings: unknown[]): Promise<void> {
    const { identity } = session;
    for (;;) {
      let result: SubmitResult;
      try {
        result = await this.host.sink.submit(identity, readings);
      } catch (error) {
        this.host.logger.error({ err: error }, 'MQTT: the device sink failed');
        result = { kind: 'unavailable' };
      }
      if (this.state === 'closed') return;
      switch (result.kind) {
        case 'committed': {
          const { accepted, duplicates, rejected } = result.outcome;
          this.host.metrics.message('committed');
          this.host.metrics.readings('accepted', accepted);
          this.host.metrics.readings('duplicate', duplicates);
          this.host.metrics.readings('rejected', rejected.length);
          if (rejected.length > 0) this.publishRejection(session, { rejected });
          return this.settle(slot, packet, Reason.Success);
        }
        case 'limited':
          this.host.metrics.refused('limited');
          this.host.metrics.message('limited');
          // MQTT 5 says so in the PUBACK; MQTT 3.1.1 has no word for it: stop reading until the budget allows.
          if (this.version === 5 && packet.qos === 1) return this.settle(slot, packet, Reason.QuotaExceeded);
          if (!(await this.pausedFor(result.retryAfterSeconds * 1000))) return;
          continue;
        case 'revoked':
          this.host.metrics.message('revoked');
          return this.revoke();
        case 'unavailable':
          // Nothing is known to be stored and MQTT clients resend only after reconnecting: close, so the
          // device reconnects and resends; a reading that did commit comes back as a duplicate.
          this.host.metrics.refused('unavailable');
          this.host.metrics.message('unavailable');
          return this.close(Reason.ServerBusy);
      }
    }
  }

  /** Pauses reading for `ms`; false when the connection closed or the listener stopped meanwhile. */
  private async pausedFor(ms: number): Promise<boolean> {
    if (this.draining || this.state !== 'connected') return false;
    this.pause();
    await new Promise<void>((resolve) => {
      const entry = { timer: setTimeout(() => wake(), Math.max(ms, 100)), wake: () => wake() };
      const wake = () => {
        clearTimeout(entry.timer);
        this.retryTimers?.delete(entry);
        resolve();
      };
      (this.retryTimers ??= new Set()).add(entry);
    });
    this.resume();
    return this.state === 'connected' && !this.draining;
  }

  /** Tells the device's connections subscribed to `devices/{identifier}/rejected` what was refused. */
  private publishRejection(session: MqttSession, body: { rejected: { index: number; error: ErrorBody }[] } | { error: ErrorBody }): void {
    this.host.deliver(session.identity.identifier, session.topics.rejected, Buffer.from(JSON.stringify(body)));
  }

  private onSubscribe({ topics }: MqttSession, packet: ISubscribePacket): void {
    const refused = this.version === 5 ? Reason.NotAuthorized : SUBACK_FAILURE;
    const granted = packet.subscriptions.map(({ topic }) => {
      if (!topics.ownsFilter(topic)) {
        this.host.metrics.refused('subscription_not_allowed');
        return refused;
      }
      if (!this.subscriptions.includes(topic)) {
        if (this.subscriptions.length >= MAX_SUBSCRIPTIONS) {
          this.host.metrics.refused('subscription_not_allowed');
          return this.version === 5 ? Reason.QuotaExceeded : SUBACK_FAILURE;
        }
        this.subscriptions.push(topic);
      }
      // Rejections are published at QoS 0, so QoS 0 is what every subscription gets.
      return 0;
    });
    this.write({ cmd: 'suback', messageId: packet.messageId, granted });
  }

  private onUnsubscribe(packet: IUnsubscribePacket): void {
    const filters = Array.isArray(packet.unsubscriptions) ? packet.unsubscriptions : [packet.unsubscriptions];
    // MQTT-3.10.3-2: at least one filter (mqtt-packet's parser lets an empty MQTT 5 UNSUBSCRIBE through).
    if (filters.length === 0) return this.protocolError(Reason.ProtocolError);
    const found = filters.map((filter) => {
      const index = this.subscriptions.indexOf(filter);
      if (index >= 0) this.subscriptions.splice(index, 1);
      return index >= 0 ? Reason.Success : 0x11;
    });
    // mqtt-packet writes `granted` (the reason codes) only for MQTT 5.
    this.write({ cmd: 'unsuback', messageId: packet.messageId, granted: found });
  }

  /** A place in the acknowledgement order for a QoS 1 or 2 PUBLISH (QoS 0 needs none). */
  private reserveAck(qos: number): AckSlot | null {
    if (qos === 0) return null;
    const slot: AckSlot = { packet: null, readAt: performance.now() };
    this.acks.push(slot);
    return slot;
  }

  /** Fills the PUBLISH's slot with its PUBACK (QoS 1) or PUBREC (QoS 2) and writes every ready one at the head. */
  private settle(slot: AckSlot | null, packet: IPublishPacket, reasonCode: number): void {
    if (!slot) return;
    const cmd = packet.qos === 2 ? 'pubrec' : 'puback';
    // The common case, a PUBACK with no reason (MQTT 3.1.1, or MQTT 5 success: the reason code may then be
    // left out, MQTT 5.0 section 3.4.2.1), written as its 4 bytes rather than through mqtt-packet's generator.
    slot.packet =
      cmd === 'puback' && reasonCode === Reason.Success
        ? pubackBytes(packet.messageId ?? 0)
        : this.version === 5 && reasonCode !== Reason.Success
          ? { cmd, messageId: packet.messageId, reasonCode }
          : { cmd, messageId: packet.messageId };
    for (let head = this.acks[0]; head?.packet; head = this.acks[0]) {
      this.acks.shift();
      if (Buffer.isBuffer(head.packet)) this.writeBytes(head.packet);
      else this.write(head.packet);
      this.host.metrics.acknowledged((performance.now() - head.readAt) / 1000);
    }
  }

  private refuseAndClose(refusal: MqttRefusal, reason: number | null = null): void {
    this.host.metrics.refused(refusal);
    this.close(reason);
  }

  private protocolError(reason: number): void {
    this.refuseAndClose('protocol_error', reason);
  }

  /** A bug of ours met on this connection: log it and close this connection only, never the process. */
  private fail(error: unknown): void {
    this.host.logger.error({ err: error }, 'MQTT: closing a connection after an unexpected error');
    this.refuseAndClose('protocol_error', Reason.UnspecifiedError);
  }

  private pause(): void {
    if (this.pauses++ === 0) this.socket.pause();
  }

  private resume(): void {
    if (--this.pauses > 0 || this.state === 'closed') return;
    this.socket.resume();
    this.processFrames();
  }

  private write(packet: Packet): void {
    this.writeBytes(mqttPacket.generate(packet, { protocolVersion: this.version }));
  }

  private writeBytes(bytes: Buffer): void {
    if (this.socket.destroyed || !this.socket.writable) return;
    this.socket.write(bytes);
  }

  private onClose(): void {
    this.state = 'closed';
    if (this.authTimer) clearTimeout(this.authTimer);
    for (const entry of [...(this.retryTimers ?? [])]) entry.wake();
    this.unwatch?.();
    this.unwatch = null;
    this.frames = [];
    this.acks = [];
    this.host.closed(this);
  }
}

/** A PUBACK without reason code or properties: type 4, remaining length 2, the packet identifier. */
function pubackBytes(messageId: number): Buffer {
  const bytes = Buffer.allocUnsafe(4);
  bytes[0] = 0x40;
  bytes[1] = 0x02;
  bytes.writeUInt16BE(messageId, 2);
  return bytes;
}

type Parser = ReturnType<typeof mqttPacket.parser>;
/** One parser per kind for all connections: CONNECT (any version), then MQTT 3.1.1 and MQTT 5 packets. */
const parsers = new Map<'connect' | 4 | 5, Parser>();
let parsed: Packet | null = null;

/**
 * Decodes one whole frame. The parsers are shared by every connection rather than one per connection
 * (about 1.6 KiB each, and it would keep the CONNECT packet with the password): the framer hands over
 * whole frames only, so each parse() emits one packet or an error synchronously and leaves the parser
 * empty. A parser that failed is dropped and made anew.
 */
function parseFrame(kind: 'connect' | 4 | 5, bytes: Buffer): Packet | null {
  let parser = parsers.get(kind);
  if (!parser) {
    parser = mqttPacket.parser(kind === 'connect' ? {} : { protocolVersion: kind });
    parser.on('packet', (packet: Packet) => (parsed = packet));
    parser.on('error', () => parsers.delete(kind));
    parsers.set(kind, parser);
  }
  parsed = null;
  parser.parse(bytes);
  const packet = parsed as Packet | null;
  parsed = null;
  if (!packet) parsers.delete(kind);
  return packet;
}
