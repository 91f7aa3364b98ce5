import { Module } from '@nestjs/common';
import { AlertStoreModule } from '../alerts/alert-store.module.js';
import { EvaluationStoreModule } from '../evaluation/evaluation-store.module.js';
import { ShipmentStoreModule } from './shipment-store.module.js';
import { ShipmentsHandler } from './shipments.handler.js';
import { ShipmentsService } from './shipments.service.js';

@Module({
  imports: [ShipmentStoreModule, AlertStoreModule, EvaluationStoreModule],
  controllers: [ShipmentsHandler],
  providers: [ShipmentsService],
})
export class ShipmentsModule {}
