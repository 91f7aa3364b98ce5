import { Inject, Injectable, type OnApplicationBootstrap, type OnApplicationShutdown } from '@nestjs/common';
import type { Logger } from '@tracking/core';
import { DataSource } from 'typeorm';
import { EvaluationRecordRepository } from './evaluation-record.repository.js';
import type { OmsConfig } from '../config.js';
import { IntervalJob } from '../scheduling/interval-job.js';
import { OMS_CONFIG, OMS_LOGGER } from '../tokens.js';
import { EVALUATION_CHUNK, ShipmentEvaluator } from './shipment-evaluator.js';

/** The sweep's queue and job scheduler (`IntervalJob`: once per interval, on one worker). */
export const EVALUATION_TIMERS_QUEUE = 'evaluation-timers';
/** Due shipments taken per sweep at most (the rest are the next sweep's). */
const SWEEP_BATCH = 500;

/**
 * The evaluation's timers (docs/geofence-evaluation.md): a device holding its shipment back that has been
 * silent for the lateness bound, and SignalLoss. Each evaluation stores in the shipment's record when the timers must look at it
 * next (`due_at`); starting, closing or changing the conditions of a shipment makes it due at once. A
 * BullMQ job scheduler with a fixed id (`IntervalJob`) runs the sweep once per `EVALUATION_SWEEP_INTERVAL_MS` across all
 * workers; each due shipment is evaluated with no new readings, under its record's lock, so a timer that
 * fires twice (or late, or on another worker after a restart) does the work once: the engine re-checks
 * what is due.
 */
@Injectable()
export class EvaluationTimers implements OnApplicationBootstrap, OnApplicationShutdown {
  private job?: IntervalJob;

  constructor(
    private readonly evaluator: ShipmentEvaluator,
    private readonly records: EvaluationRecordRepository,
    private readonly dataSource: DataSource,
    @Inject(OMS_CONFIG) private readonly config: OmsConfig,
    @Inject(OMS_LOGGER) private readonly logger: Logger,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    if (!this.config.EVALUATION_ENABLED) return;
    this.job = new IntervalJob({
      config: this.config,
      queue: EVALUATION_TIMERS_QUEUE,
      everyMs: this.config.EVALUATION_SWEEP_INTERVAL_MS,
      run: () => this.sweep(),
      logger: this.logger,
      what: 'evaluation sweep',
    });
    await this.job.start();
  }

  /** Evaluates every shipment due now (in batches); returns how many. */
  async sweep(now = Date.now()): Promise<number> {
    let swept = 0;
    for (;;) {
      const due = await this.records.due(this.dataSource.manager, SWEEP_BATCH);
      let failed = false;
      for (let i = 0; i < due.length; i += EVALUATION_CHUNK) {
        const chunk = due.slice(i, i + EVALUATION_CHUNK).map((shipment) => ({ ...shipment, readings: [] }));
        try {
          await this.evaluator.evaluateMany(chunk, now);
        } catch (error) {
          failed = true;
          this.logger.warn({ err: error, shipments: chunk.length }, 'evaluation timers failed; the shipments stay due');
        }
      }
      swept += due.length;
      // A shipment that failed stays due, and would come first again: leave it, and the rest, to the
      // next sweep rather than loop on it (a DMS that cannot answer restores would make that loop hot).
      if (due.length < SWEEP_BATCH || failed) return swept;
    }
  }

  async onApplicationShutdown(): Promise<void> {
    await this.job?.stop();
  }
}
