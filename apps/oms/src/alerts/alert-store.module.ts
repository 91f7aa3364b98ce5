import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { ShipmentStoreModule } from '../shipments/shipment-store.module.js';
import { AlertEntity } from './alert.entity.js';
import { AlertLifecycle } from './alert-lifecycle.js';
import { AlertRepository } from './alert.repository.js';
import { ExcursionRepository } from './excursion.repository.js';
import { VisitEntity } from './visit.entity.js';
import { VisitRepository } from './visit.repository.js';

/**
 * The tables of alerts, visits and excursions with their repositories, without the API: what the
 * shipments' lifecycle (closing a shipment closes its alerts) and the evaluation's store
 * (`EvaluationStoreModule`) import.
 */
@Module({
  imports: [TypeOrmModule.forFeature([AlertEntity, VisitEntity]), ShipmentStoreModule],
  providers: [AlertRepository, VisitRepository, ExcursionRepository, AlertLifecycle],
  exports: [AlertRepository, VisitRepository, ExcursionRepository, AlertLifecycle],
})
export class AlertStoreModule {}
