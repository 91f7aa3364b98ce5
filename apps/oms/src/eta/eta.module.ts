import { Module } from '@nestjs/common';
import { ShipmentStoreModule } from '../shipments/shipment-store.module.js';
import { EtaRepository } from './eta.repository.js';
import { EtaTracker } from './eta-tracker.js';

/** The estimated arrival (docs/eta.md): the tracker the evaluation calls and the lanes' statistics. */
@Module({
  imports: [ShipmentStoreModule],
  providers: [EtaRepository, EtaTracker],
  exports: [EtaTracker],
})
export class EtaModule {}
