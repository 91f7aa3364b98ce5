import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { ShipmentStoreModule } from '../shipments/shipment-store.module.js';
import { PointOfInterestEntity } from './point-of-interest.entity.js';
import { PointOfInterestRepository } from './point-of-interest.repository.js';
import { PointsOfInterestHandler } from './points-of-interest.handler.js';
import { PointsOfInterestService } from './points-of-interest.service.js';

@Module({
  imports: [TypeOrmModule.forFeature([PointOfInterestEntity]), ShipmentStoreModule],
  controllers: [PointsOfInterestHandler],
  providers: [PointsOfInterestService, PointOfInterestRepository],
})
export class PointsOfInterestModule {}
