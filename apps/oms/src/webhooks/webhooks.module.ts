import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { WebhookDeliveryEntity } from './webhook-delivery.entity.js';
import { WebhookEntity } from './webhook.entity.js';
import { WebhookRepository } from './webhook.repository.js';
import { WebhooksHandler } from './webhooks.handler.js';
import { WebhooksService } from './webhooks.service.js';

@Module({
  imports: [TypeOrmModule.forFeature([WebhookEntity, WebhookDeliveryEntity])],
  controllers: [WebhooksHandler],
  providers: [WebhooksService, WebhookRepository],
  exports: [WebhookRepository],
})
export class WebhooksModule {}
