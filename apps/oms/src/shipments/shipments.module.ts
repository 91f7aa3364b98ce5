import { Module } from '@nestjs/common';
import { ShipmentStoreModule } from './shipment-store.module.js';
import { ShipmentsHandler } from './shipments.handler.js';
import { ShipmentsService } from './shipments.service.js';

@Module({
  imports: [ShipmentStoreModule],
  controllers: [ShipmentsHandler],
  providers: [ShipmentsService],
})
export class ShipmentsModule {}
