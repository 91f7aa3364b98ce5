import { Module } from '@nestjs/common';
import { AlertStoreModule } from '../alerts/alert-store.module.js';
import { ShipmentStoreModule } from '../shipments/shipment-store.module.js';
import { EvaluationRecordRepository } from './evaluation-record.repository.js';
import { EvaluationStore } from './evaluation-store.js';

/**
 * The evaluation's storage without its consumer: the per-shipment evaluation records
 * (`EvaluationRecordRepository`, which the shipments' lifecycle also clears) and the store the
 * evaluation writes its decisions through (`EvaluationStore`, over the alert and shipment tables).
 */
@Module({
  imports: [AlertStoreModule, ShipmentStoreModule],
  providers: [EvaluationStore, EvaluationRecordRepository],
  exports: [EvaluationStore, EvaluationRecordRepository],
})
export class EvaluationStoreModule {}
