import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { EtaModule } from '../eta/eta.module.js';
import { PointOfInterestEntity } from '../points-of-interest/point-of-interest.entity.js';
import { PointOfInterestRepository } from '../points-of-interest/point-of-interest.repository.js';
import { EvaluationConsumer } from './evaluation.consumer.js';
import { EvaluationMetrics } from './evaluation-metrics.js';
import { EvaluationStoreModule } from './evaluation-store.module.js';
import { EvaluationTimers } from './evaluation-timers.js';
import { PlaceCache } from './place-cache.js';
import { ShipmentEvaluator } from './shipment-evaluator.js';

/**
 * The evaluation of readings into visits, alerts, autoTransitions and excursions, in the worker process
 * (docs/geofence-evaluation.md): the readings stream's consumer and the timers.
 */
@Module({
  imports: [TypeOrmModule.forFeature([PointOfInterestEntity]), EvaluationStoreModule, EtaModule],
  providers: [PointOfInterestRepository, PlaceCache, EvaluationMetrics, ShipmentEvaluator, EvaluationConsumer, EvaluationTimers],
  exports: [ShipmentEvaluator, EvaluationTimers],
})
export class EvaluationModule {}
