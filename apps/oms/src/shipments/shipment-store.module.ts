import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { ShipmentEntity } from './shipment.entity.js';
import { ShipmentRepository } from './shipment.repository.js';

/**
 * The `shipments` table and its one repository, without the shipments API: what sets, items,
 * assignments, points of interest and the operation worker import to read or lock shipments.
 */
@Module({
  imports: [TypeOrmModule.forFeature([ShipmentEntity])],
  providers: [ShipmentRepository],
  exports: [ShipmentRepository],
})
export class ShipmentStoreModule {}
