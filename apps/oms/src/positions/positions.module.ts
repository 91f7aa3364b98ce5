import { Module } from '@nestjs/common';
import { ShipmentStoreModule } from '../shipments/shipment-store.module.js';
import { ShipmentPositionsConsumer } from './shipment-positions.consumer.js';

/** Shipments' `lastPosition`, from the readings stream, on the OMS service. */
@Module({
  imports: [ShipmentStoreModule],
  providers: [ShipmentPositionsConsumer],
})
export class PositionsModule {}
