import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { DeviceEntity } from './device.entity.js';
import { DeviceRepository } from './device.repository.js';
import { DevicesHandler } from './devices.handler.js';
import { DevicesService } from './devices.service.js';

@Module({
  imports: [TypeOrmModule.forFeature([DeviceEntity])],
  controllers: [DevicesHandler],
  providers: [DevicesService, DeviceRepository],
  // Bulk-operation chunks read and write devices through the same repository.
  exports: [DeviceRepository],
})
export class DevicesModule {}
