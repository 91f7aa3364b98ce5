import { type DynamicModule, Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import { SigningKeyEntity } from '../auth/signing-key.entity.js';
import { SigningKeyRepository } from '../auth/signing-key.repository.js';
import { SigningKeysService } from '../auth/signing-keys.service.js';
import type { GatewayConfig } from '../config.js';
import { IdentityModule } from '../identity/identity.module.js';
import { GATEWAY_CONFIG } from '../tokens.js';

/** What the admin command line needs: identity provisioning and signing keys, no HTTP, no NATS. */
@Module({})
export class AdminModule {
  static forRoot(config: GatewayConfig, dataSource: DataSource): DynamicModule {
    return {
      module: AdminModule,
      global: true,
      imports: [
        TypeOrmModule.forRootAsync({ useFactory: () => ({}), dataSourceFactory: async () => dataSource }),
        TypeOrmModule.forFeature([SigningKeyEntity]),
        IdentityModule,
      ],
      providers: [{ provide: GATEWAY_CONFIG, useValue: config }, SigningKeyRepository, SigningKeysService],
      exports: [GATEWAY_CONFIG],
    };
  }
}
