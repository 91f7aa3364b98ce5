import { Counter, Gauge, Histogram, type Registry } from 'prom-client';

/** Why the listener refused something; each is counted (`device_refusals_total{protocol="Mqtt",reason}`). */
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
 * set of series labelled by protocol; `PromMqttMetrics` is the prom-client implementation.
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

/** Acknowledgement latency buckets in seconds: a batch wait of 20 ms plus a DMS commit, to past a 5 s outage. */
const ACK_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5];

/** The MQTT listener's series in a service's prom-client registry, each labelled `protocol="Mqtt"`. */
export class PromMqttMetrics implements MqttMetrics {
  private readonly labels = { protocol: 'Mqtt' } as const;
  private readonly connections: Gauge<'protocol'>;
  private readonly refusals: Counter<'protocol' | 'reason'>;
  private readonly messages: Counter<'protocol' | 'outcome'>;
  private readonly readingCounts: Counter<'protocol' | 'outcome'>;
  private readonly ackLatency: Histogram<'protocol'>;

  constructor(registry: Registry) {
    const registers = [registry];
    this.connections = new Gauge({ name: 'device_connections', help: 'Open device connections, by protocol.', labelNames: ['protocol'], registers });
    this.refusals = new Counter({
      name: 'device_refusals_total',
      help: 'Connections, packets and messages refused, by protocol and reason (bad_credentials counts authentication failures).',
      labelNames: ['protocol', 'reason'],
      registers,
    });
    this.messages = new Counter({ name: 'device_messages_total', help: 'Device messages, by protocol and outcome.', labelNames: ['protocol', 'outcome'], registers });
    this.readingCounts = new Counter({
      name: 'device_readings_total',
      help: 'Readings of committed device messages, by protocol and outcome (accepted, duplicate, rejected).',
      labelNames: ['protocol', 'outcome'],
      registers,
    });
    this.ackLatency = new Histogram({
      name: 'device_ack_duration_seconds',
      help: 'From a device message read to its acknowledgement written, by protocol.',
      labelNames: ['protocol'],
      buckets: ACK_BUCKETS,
      registers,
    });
    this.connections.set(this.labels, 0);
  }

  connectionOpened(): void {
    this.connections.inc(this.labels);
  }

  connectionClosed(): void {
    this.connections.dec(this.labels);
  }

  refused(reason: MqttRefusal): void {
    this.refusals.inc({ ...this.labels, reason });
  }

  message(outcome: MqttMessageOutcome): void {
    this.messages.inc({ ...this.labels, outcome });
  }

  readings(outcome: 'accepted' | 'duplicate' | 'rejected', count: number): void {
    if (count > 0) this.readingCounts.inc({ ...this.labels, outcome }, count);
  }

  acknowledged(seconds: number): void {
    this.ackLatency.observe(this.labels, seconds);
  }
}
