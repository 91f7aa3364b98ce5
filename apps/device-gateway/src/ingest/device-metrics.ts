import { LATENCY_BUCKETS } from '@tracking/observability';
import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { DeviceProtocol } from './device-sink.js';

/**
 * The device gateway's own metrics (docs/device-gateway.md, "Metrics"), for the listeners and the sink
 * to count into; `ServiceMetrics.include(registry)` serves them on the ops port with the process's.
 */
export class DeviceMetrics {
  readonly registry = new Registry();

  readonly connections = new Gauge({
    name: 'device_connections',
    help: 'Open device connections, by protocol.',
    labelNames: ['protocol'] as const,
    registers: [this.registry],
  });

  readonly messages = new Counter({
    name: 'device_messages_total',
    help: 'Device messages (an HTTP request, an MQTT publish, a Teltonika packet), by protocol and outcome.',
    labelNames: ['protocol', 'outcome'] as const,
    registers: [this.registry],
  });

  readonly readings = new Counter({
    name: 'device_readings_total',
    help: 'Readings sent by devices, by protocol and outcome (accepted, duplicate, rejected).',
    labelNames: ['protocol', 'outcome'] as const,
    registers: [this.registry],
  });

  readonly authFailures = new Counter({
    name: 'device_authentication_failures_total',
    help: 'Refused authentications, by protocol and reason (credentials, address-limit, timeout).',
    labelNames: ['protocol', 'reason'] as const,
    registers: [this.registry],
  });

  readonly refusals = new Counter({
    name: 'device_refusals_total',
    help: 'What a device may not do and was refused, by protocol and reason (connection-limit, body-too-large, ...).',
    labelNames: ['protocol', 'reason'] as const,
    registers: [this.registry],
  });

  readonly ackLatency = new Histogram({
    name: 'device_ack_latency_seconds',
    help: 'From a message received whole to its acknowledgement (after the DMS commit), by protocol.',
    labelNames: ['protocol'] as const,
    buckets: LATENCY_BUCKETS,
    registers: [this.registry],
  });

  readonly batchSize = new Histogram({
    name: 'device_batch_readings',
    help: 'Readings per DMS call of the batcher.',
    buckets: [1, 10, 50, 100, 250, 500, 1000, 2500, 5000],
    registers: [this.registry],
  });

  connected(protocol: DeviceProtocol): void {
    this.connections.inc({ protocol });
  }

  disconnected(protocol: DeviceProtocol): void {
    this.connections.dec({ protocol });
  }
}
