import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { CursorCodec } from '@tracking/paging';
import type { GatewayConfig } from '../config.js';
import { GATEWAY_CONFIG } from '../tokens.js';
import { SigningKeyEntity } from '../auth/signing-key.entity.js';
import { AccessService } from './access.service.js';
import { AccountEntity } from './account.entity.js';
import { ApplicationEntity } from './application.entity.js';
import { ApplicationRepository } from './application.repository.js';
import { IdentityService } from './identity.service.js';
import { TenantEntity } from './tenant.entity.js';
import { TenantRepository } from './tenant.repository.js';

export const IDENTITY_ENTITIES = [TenantEntity, AccountEntity, ApplicationEntity, SigningKeyEntity];

@Module({
  imports: [TypeOrmModule.forFeature([TenantEntity, AccountEntity, ApplicationEntity])],
  providers: [
    TenantRepository,
    ApplicationRepository,
    IdentityService,
    AccessService,
    // Signs the cursors of the gateway's own collection, the accounts (GET /v1/accounts).
    { provide: CursorCodec, inject: [GATEWAY_CONFIG], useFactory: (config: GatewayConfig) => new CursorCodec(config.CURSOR_SECRET) },
  ],
  exports: [TenantRepository, ApplicationRepository, IdentityService, AccessService],
})
export class IdentityModule {}
