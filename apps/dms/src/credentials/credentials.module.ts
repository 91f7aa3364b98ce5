import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { DevicesModule } from '../devices/devices.module.js';
import { CredentialEntity } from './credential.entity.js';
import { CredentialRepository } from './credential.repository.js';
import { CredentialsHandler } from './credentials.handler.js';
import { CredentialsService } from './credentials.service.js';

@Module({
  imports: [TypeOrmModule.forFeature([CredentialEntity]), DevicesModule],
  controllers: [CredentialsHandler],
  providers: [CredentialsService, CredentialRepository],
  // Readings from the device gateway are stored only under a credential still live in their transaction.
  exports: [CredentialRepository],
})
export class CredentialsModule {}
