import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { ShipmentStoreModule } from '../shipments/shipment-store.module.js';
import { AlertEntity } from './alert.entity.js';
import { AlertLifecycle } from './alert-lifecycle.js';
import { AlertRepository } from './alert.repository.js';
import { EvaluationRecordRepository } from './evaluation-record.repository.js';
import { EvaluationStore } from './evaluation-store.js';
import { ExcursionRepository } from './excursion.repository.js';
import { VisitEntity } from './visit.entity.js';
import { VisitRepository } from './visit.repository.js';

/**
 * The tables of alerts, visits and excursions with their repositories, without the API: what the
 * shipments' lifecycle (closing a shipment closes its alerts) and the evaluation of readings
 * (`EvaluationStore`) import.
 */
@Module({
  imports: [TypeOrmModule.forFeature([AlertEntity, VisitEntity]), ShipmentStoreModule],
  providers: [AlertRepository, VisitRepository, ExcursionRepository, AlertLifecycle, EvaluationStore, EvaluationRecordRepository],
  exports: [AlertRepository, VisitRepository, AlertLifecycle, EvaluationStore, EvaluationRecordRepository],
})
export class AlertStoreModule {}
