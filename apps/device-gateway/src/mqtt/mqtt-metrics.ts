import type { DeviceMetrics } from '../ingest/device-metrics.js';

/**
 * Why the listener refused something; each is counted, failed authentications in
 * `device_authentication_failures_total{protocol="Mqtt",reason}`, the rest in `device_refusals_total`.
 */
export type MqttRefusal =
  | 'connection_cap'
  | 'auth_deadline'
  | 'bad_credentials'
  | 'address_blocked'
  | 'unsupported_protocol_version'
  | 'protocol_error'
  | 'packet_too_large'
  | 'topic_not_allowed'
  | 'subscription_not_allowed'
  | 'retain_not_supported'
  | 'qos_not_supported'
  | 'invalid_payload'
  | 'limited'
  | 'revoked'
  | 'unavailable';

/** What became of one PUBLISH on the readings topic (`device_messages_total{protocol="Mqtt",outcome}`). */
export type MqttMessageOutcome = 'committed' | 'invalid_payload' | 'limited' | 'revoked' | 'unavailable' | 'topic_not_allowed' | 'other_topic';

/**
 * What the MQTT listener reports. An interface so that the device gateway can hand every listener one
 * set of series labelled by protocol; `DeviceMqttMetrics` counts into the device gateway's `DeviceMetrics`.
 */
export interface MqttMetrics {
  connectionOpened(): void;
  connectionClosed(): void;
  refused(reason: MqttRefusal): void;
  message(outcome: MqttMessageOutcome): void;
  readings(outcome: 'accepted' | 'duplicate' | 'rejected', count: number): void;
  /** From the PUBLISH read to its PUBACK (or PUBREC) written. */
  acknowledged(seconds: number): void;
}

export const noMqttMetrics: MqttMetrics = {
  connectionOpened: () => undefined,
  connectionClosed: () => undefined,
  refused: () => undefined,
  message: () => undefined,
  readings: () => undefined,
  acknowledged: () => undefined,
};

/** The refusals that are failed authentications, with the reason every protocol counts them under. */
const AUTH_FAILURES: Partial<Record<MqttRefusal, string>> = {
  bad_credentials: 'credentials',
  address_blocked: 'address-limit',
  auth_deadline: 'timeout',
  revoked: 'revoked',
};

/** Refusal reasons spelled as the other listeners spell theirs (`connection-limit`, `packet-too-large`, ...). */
const REFUSAL_REASONS: Partial<Record<MqttRefusal, string>> = { connection_cap: 'connection-limit' };

/**
 * The MQTT listener's counts in the device gateway's one set of series (`DeviceMetrics`), each labelled
 * `protocol="Mqtt"`: failed authentications in `device_authentication_failures_total{reason}` as HTTP and
 * Teltonika count theirs (credentials, address-limit, timeout, revoked), every other refusal in
 * `device_refusals_total{reason}`.
 */
export class DeviceMqttMetrics implements MqttMetrics {
  private readonly labels = { protocol: 'Mqtt' } as const;
  // The series counted for every message, looked up once: prom-client otherwise hashes the labels on each
  // call (profiled under bench/device-gateway.mjs: about 5 % of the process's time at 2000 devices).
  private readonly messages = new Map<MqttMessageOutcome, { inc(): void }>();
  private readonly readingSeries = new Map<string, { inc(count: number): void }>();
  private readonly latency: { observe(seconds: number): void };

  constructor(private readonly metrics: DeviceMetrics) {
    metrics.connections.set(this.labels, 0);
    this.latency = metrics.ackLatency.labels(this.labels);
  }

  connectionOpened(): void {
    this.metrics.connected('Mqtt');
  }

  connectionClosed(): void {
    this.metrics.disconnected('Mqtt');
  }

  refused(reason: MqttRefusal): void {
    const authFailure = AUTH_FAILURES[reason];
    if (authFailure) this.metrics.authFailures.inc({ ...this.labels, reason: authFailure });
    else this.metrics.refusals.inc({ ...this.labels, reason: REFUSAL_REASONS[reason] ?? reason.replaceAll('_', '-') });
  }

  message(outcome: MqttMessageOutcome): void {
    let series = this.messages.get(outcome);
    if (!series) this.messages.set(outcome, (series = this.metrics.messages.labels({ ...this.labels, outcome: outcome.replaceAll('_', '-') })));
    series.inc();
  }

  readings(outcome: 'accepted' | 'duplicate' | 'rejected', count: number): void {
    if (count <= 0) return;
    let series = this.readingSeries.get(outcome);
    if (!series) this.readingSeries.set(outcome, (series = this.metrics.readings.labels({ ...this.labels, outcome })));
    series.inc(count);
  }

  acknowledged(seconds: number): void {
    this.latency.observe(seconds);
  }
}
