import { Injectable } from '@nestjs/common';
import type { GeofenceReading } from '@tracking/geofence';
import { ServiceMetrics } from '@tracking/observability';
import { Counter, Gauge, Histogram } from 'prom-client';

/** The evaluation's metrics (docs/geofence-evaluation.md, "Operating it"). */
@Injectable()
export class EvaluationMetrics {
  /** Evaluations that had to restore a shipment's state from the database and the DMS. */
  readonly restores: Counter;
  readonly alertsOpened: Counter<'kind'>;
  /** Readings recorded before their own device's watermark (they change nothing already published). */
  readonly lateReadings: Counter;
  private readonly lag: Histogram;
  private newestReceivedAt: number | null = null;

  constructor(metrics: ServiceMetrics) {
    const registers = [metrics.registry];
    this.restores = new Counter({
      name: 'evaluation_restores_total',
      help: "Evaluations that restored a shipment's state (another replica evaluated it last, or this one restarted).",
      registers,
    });
    this.lateReadings = new Counter({
      name: 'evaluation_late_readings_total',
      help: "Readings evaluated that were recorded before their own device's watermark: stored, but they change nothing already published.",
      registers,
    });
    this.alertsOpened = new Counter({ name: 'alerts_opened_total', help: 'Alerts this worker opened, by kind.', labelNames: ['kind'] as const, registers });
    this.lag = new Histogram({
      name: 'evaluation_lag_seconds',
      help: "From a reading's ingest commit (its receivedAt) to the commit of the evaluation that took it in, the reorder delay included.",
      buckets: [0.05, 0.1, 0.25, 0.5, 1, 1.5, 2, 3, 5, 10, 30, 60, 300],
      registers,
    });
    const newest = (): number | null => this.newestReceivedAt;
    new Gauge({
      name: 'evaluation_newest_reading_age_seconds',
      help: 'Server time since the receipt of the newest reading this worker evaluated (grows while readings wait or none arrive).',
      registers,
      collect() {
        const received = newest();
        if (received !== null) this.set((Date.now() - received) / 1000);
      },
    });
  }

  /** An evaluation of `readings` committed at `now`. */
  evaluated(readings: readonly GeofenceReading[], now: number): void {
    let newest: number | null = null;
    for (const reading of readings) {
      const received = new Date(reading.receivedAt).getTime();
      if (newest === null || received > newest) newest = received;
    }
    if (newest === null) return;
    this.lag.observe(Math.max(0, now - newest) / 1000);
    if (this.newestReceivedAt === null || newest > this.newestReceivedAt) this.newestReceivedAt = newest;
  }
}
