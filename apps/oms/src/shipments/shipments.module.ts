import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { ShipmentEntity } from './shipment.entity.js';
import { ShipmentRepository } from './shipment.repository.js';
import { ShipmentsHandler } from './shipments.handler.js';
import { ShipmentsService } from './shipments.service.js';

@Module({
  imports: [TypeOrmModule.forFeature([ShipmentEntity])],
  controllers: [ShipmentsHandler],
  providers: [ShipmentsService, ShipmentRepository],
})
export class ShipmentsModule {}
