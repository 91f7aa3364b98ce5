import { LATENCY_BUCKETS } from '@tracking/observability';
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';

/**
 * The device gateway's metrics as the Teltonika listener feeds them, every series labelled
 * `protocol="Teltonika"`. The names are shared by the protocols (each listener adds its own `protocol`
 * label), so a metric already in the registry is reused rather than registered twice.
 */
export class TeltonikaMetrics {
  private readonly connections: Gauge<'protocol'>;
  private readonly messages: Counter<'protocol' | 'outcome'>;
  private readonly readings: Counter<'protocol' | 'outcome'>;
  private readonly authFailures: Counter<'protocol'>;
  private readonly ackDuration: Histogram<'protocol'>;

  constructor(registry: Registry) {
    this.connections = existing(registry, 'device_connections') ?? new Gauge({
      name: 'device_connections',
      help: 'Open device connections, by protocol.',
      labelNames: ['protocol'] as const,
      registers: [registry],
    });
    this.messages = existing(registry, 'device_messages_total') ?? new Counter({
      name: 'device_messages_total',
      help: 'Device messages (a Teltonika AVL packet, an MQTT publish, an HTTP request), by protocol and outcome.',
      labelNames: ['protocol', 'outcome'] as const,
      registers: [registry],
    });
    this.readings = existing(registry, 'device_readings_total') ?? new Counter({
      name: 'device_readings_total',
      help: 'Readings (Teltonika: AVL records) received from devices, by protocol and outcome.',
      labelNames: ['protocol', 'outcome'] as const,
      registers: [registry],
    });
    this.authFailures = existing(registry, 'device_auth_failures_total') ?? new Counter({
      name: 'device_auth_failures_total',
      help: 'Refused device authentications (unknown or retired identifier, wrong secret, malformed or late handshake), by protocol.',
      labelNames: ['protocol'] as const,
      registers: [registry],
    });
    this.ackDuration = existing(registry, 'device_ack_duration_seconds') ?? new Histogram({
      name: 'device_ack_duration_seconds',
      help: 'From a device message fully received to its acknowledgement sent, by protocol.',
      labelNames: ['protocol'] as const,
      buckets: LATENCY_BUCKETS,
      registers: [registry],
    });
  }

  connectionOpened(): void {
    this.connections.inc({ protocol: 'Teltonika' });
  }

  connectionClosed(): void {
    this.connections.dec({ protocol: 'Teltonika' });
  }

  authFailed(): void {
    this.authFailures.inc({ protocol: 'Teltonika' });
  }

  /** `committed`, `limited`, `unavailable`, `revoked` or `malformed`. */
  message(outcome: string): void {
    this.messages.inc({ protocol: 'Teltonika', outcome });
  }

  /** `accepted`, `duplicate`, `rejected` (by the judgement) or `empty` (nothing to store). */
  records(outcome: string, count: number): void {
    if (count > 0) this.readings.inc({ protocol: 'Teltonika', outcome }, count);
  }

  acknowledged(seconds: number): void {
    this.ackDuration.observe({ protocol: 'Teltonika' }, seconds);
  }
}

function existing<T>(registry: Registry, name: string): T | undefined {
  return registry.getSingleMetric(name) as T | undefined;
}
