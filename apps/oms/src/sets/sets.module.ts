import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { ShipmentStoreModule } from '../shipments/shipment-store.module.js';
import { SetEntity } from './set.entity.js';
import { SetRepository } from './set.repository.js';
import { SetsHandler } from './sets.handler.js';
import { SetsService } from './sets.service.js';
import { ShipmentContentsService } from './shipment-contents.service.js';

@Module({
  imports: [TypeOrmModule.forFeature([SetEntity]), ShipmentStoreModule],
  controllers: [SetsHandler],
  providers: [SetsService, SetRepository, ShipmentContentsService],
  // Items live in sets: they make the same shipment and set checks.
  exports: [ShipmentContentsService],
})
export class SetsModule {}
