import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { ShipmentStoreModule } from '../shipments/shipment-store.module.js';
import { ShareLinkEntity } from './share-link.entity.js';
import { ShareLinkRepository } from './share-link.repository.js';
import { ShareLinksHandler } from './share-links.handler.js';
import { ShareLinksService } from './share-links.service.js';

/** Share links on the OMS service: create, list, revoke, and the public view by a token's digest. */
@Module({
  imports: [TypeOrmModule.forFeature([ShareLinkEntity]), ShipmentStoreModule],
  controllers: [ShareLinksHandler],
  providers: [ShareLinksService, ShareLinkRepository],
})
export class ShareLinksModule {}
