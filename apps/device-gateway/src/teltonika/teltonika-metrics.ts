import type { DeviceMetrics } from '../ingest/device-metrics.js';

/** Why a Teltonika device failed to authenticate, as every protocol counts it. */
export type TeltonikaAuthFailure = 'credentials' | 'address-limit' | 'timeout' | 'revoked';

/**
 * The Teltonika listener's counts in the device gateway's one set of series (`DeviceMetrics`), every
 * series labelled `protocol="Teltonika"`.
 */
export class TeltonikaMetrics {
  private readonly labels = { protocol: 'Teltonika' } as const;
  // The series counted for every packet, looked up once (as DeviceMqttMetrics does).
  private readonly messages = new Map<string, { inc(): void }>();
  private readonly recordSeries = new Map<string, { inc(count: number): void }>();
  private readonly latency: { observe(seconds: number): void };

  constructor(private readonly metrics: DeviceMetrics) {
    metrics.connections.set(this.labels, 0);
    this.latency = metrics.ackLatency.labels(this.labels);
  }

  connectionOpened(): void {
    this.metrics.connected('Teltonika');
  }

  connectionClosed(): void {
    this.metrics.disconnected('Teltonika');
  }

  /** An unknown or retired IMEI, a malformed handshake (`credentials`), an address over its limit, no IMEI in time. */
  authFailed(reason: TeltonikaAuthFailure): void {
    this.metrics.authFailures.inc({ ...this.labels, reason });
  }

  /** A connection over DEVICE_MAX_CONNECTIONS, closed at once. */
  refused(reason: 'connection-limit'): void {
    this.metrics.refusals.inc({ ...this.labels, reason });
  }

  /** `committed`, `limited`, `unavailable`, `revoked` or `malformed`. */
  message(outcome: string): void {
    let series = this.messages.get(outcome);
    if (!series) this.messages.set(outcome, (series = this.metrics.messages.labels({ ...this.labels, outcome })));
    series.inc();
  }

  /** `accepted`, `duplicate`, `rejected` (by the judgement) or `empty` (nothing to store). */
  records(outcome: string, count: number): void {
    if (count <= 0) return;
    let series = this.recordSeries.get(outcome);
    if (!series) this.recordSeries.set(outcome, (series = this.metrics.readings.labels({ ...this.labels, outcome })));
    series.inc(count);
  }

  acknowledged(seconds: number): void {
    this.latency.observe(seconds);
  }
}
