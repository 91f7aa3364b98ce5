import type { DeviceMetrics } from '../ingest/device-metrics.js';

/** Why a Teltonika device failed to authenticate, as every protocol counts it. */
export type TeltonikaAuthFailure = 'credentials' | 'address-limit' | 'timeout' | 'revoked';

/**
 * The Teltonika listener's counts in the device gateway's one set of series (`DeviceMetrics`), every
 * series labelled `protocol="Teltonika"`.
 */
export class TeltonikaMetrics {
  private readonly labels = { protocol: 'Teltonika' } as const;

  constructor(private readonly metrics: DeviceMetrics) {
    metrics.connections.set(this.labels, 0);
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
    this.metrics.messages.inc({ ...this.labels, outcome });
  }

  /** `accepted`, `duplicate`, `rejected` (by the judgement) or `empty` (nothing to store). */
  records(outcome: string, count: number): void {
    if (count > 0) this.metrics.readings.inc({ ...this.labels, outcome }, count);
  }

  acknowledged(seconds: number): void {
    this.metrics.ackLatency.observe(this.labels, seconds);
  }
}
