import { Inject, Injectable } from '@nestjs/common';
import type { ShipmentScope } from '@tracking/contracts';
import type { Logger } from '@tracking/core';
import { DataSource } from 'typeorm';
import { EvaluationRecordRepository } from './evaluation-record.repository.js';
import type { OmsConfig } from '../config.js';
import { OMS_CONFIG, OMS_LOGGER } from '../tokens.js';
import { EVALUATION_CHUNK } from './shipment-evaluator.js';

/** Due shipments taken per sweep at most (the rest are the next sweep's). */
const SWEEP_BATCH = 500;

/**
 * The evaluation's timers (docs/geofence-evaluation.md): a device holding its shipment back that has been
 * silent for the lateness bound, and SignalLoss. Each evaluation stores in the shipment's record when the
 * timers must look at it next (`due_at`); starting, closing or changing the conditions of a shipment makes
 * it due at once. Each worker sweeps the due shipments of the partitions it holds, every
 * `EVALUATION_SWEEP_INTERVAL_MS` (`EvaluationConsumer`), through the partition's own turn and lease, so a
 * timer is the partition owner's work like its readings; each due shipment is evaluated with no new
 * readings, and the engine re-checks what is due, so a timer that fires twice (or late, or on the next
 * owner after a takeover) does the work once.
 */
@Injectable()
export class EvaluationTimers {
  constructor(
    private readonly records: EvaluationRecordRepository,
    private readonly dataSource: DataSource,
    @Inject(OMS_CONFIG) private readonly config: OmsConfig,
    @Inject(OMS_LOGGER) private readonly logger: Logger,
  ) {}

  /**
   * Evaluates every shipment of these partitions due now (in batches, chunks of one partition at a time
   * through `evaluate`); returns how many.
   */
  async sweep(partitions: readonly number[], evaluate: (partition: number, chunk: ShipmentScope[]) => Promise<void>): Promise<number> {
    let swept = 0;
    for (;;) {
      const due = await this.records.due(this.dataSource.manager, partitions, this.config.READINGS_PARTITIONS, SWEEP_BATCH);
      const byPartition = new Map<number, ShipmentScope[]>();
      for (const { partition, tenantId, accountId, shipmentId } of due) {
        const list = byPartition.get(partition);
        if (list) list.push({ tenantId, accountId, shipmentId });
        else byPartition.set(partition, [{ tenantId, accountId, shipmentId }]);
      }
      let failed = false;
      for (const [partition, list] of byPartition) {
        for (let i = 0; i < list.length; i += EVALUATION_CHUNK) {
          const chunk = list.slice(i, i + EVALUATION_CHUNK);
          try {
            await evaluate(partition, chunk);
          } catch (error) {
            failed = true;
            this.logger.warn({ err: error, shipments: chunk.length, partition }, 'evaluation timers failed; the shipments stay due');
          }
        }
      }
      swept += due.length;
      // A shipment that failed stays due, and would come first again: leave it, and the rest, to the
      // next sweep rather than loop on it (a DMS that cannot answer restores would make that loop hot).
      if (due.length < SWEEP_BATCH || failed) return swept;
    }
  }
}
