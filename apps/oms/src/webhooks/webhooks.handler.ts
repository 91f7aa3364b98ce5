import { Controller } from '@nestjs/common';
import { Payload } from '@nestjs/microservices';
import {
  type CreateWebhookRequest,
  type DeleteWebhookRequest,
  type Delivery,
  type DeliveryRequest,
  type ItemPage,
  type ListDeliveriesRequest,
  type ListWebhooksRequest,
  Subjects,
  type UpdateWebhookRequest,
  type Versioned,
  type Webhook,
  type WebhookRequest,
  type WebhookWithSecret,
} from '@tracking/contracts';
import { Handles } from '@tracking/messaging';
import { WebhooksService } from './webhooks.service.js';

@Controller()
export class WebhooksHandler {
  constructor(private readonly webhooks: WebhooksService) {}

  @Handles(Subjects.oms.webhooks.list)
  list(@Payload() request: ListWebhooksRequest): Promise<ItemPage<Webhook>> {
    return this.webhooks.list(request);
  }

  @Handles(Subjects.oms.webhooks.create)
  create(@Payload() request: CreateWebhookRequest): Promise<Versioned<WebhookWithSecret>> {
    return this.webhooks.create(request);
  }

  @Handles(Subjects.oms.webhooks.get)
  get(@Payload() request: WebhookRequest): Promise<Versioned<Webhook>> {
    return this.webhooks.get(request);
  }

  @Handles(Subjects.oms.webhooks.update)
  update(@Payload() request: UpdateWebhookRequest): Promise<Versioned<Webhook>> {
    return this.webhooks.update(request);
  }

  @Handles(Subjects.oms.webhooks.delete)
  async delete(@Payload() request: DeleteWebhookRequest): Promise<void> {
    await this.webhooks.delete(request);
  }

  @Handles(Subjects.oms.webhooks.rotateSecret)
  rotateSecret(@Payload() request: WebhookRequest): Promise<Versioned<WebhookWithSecret>> {
    return this.webhooks.rotateSecret(request);
  }

  @Handles(Subjects.oms.webhooks.enable)
  async enable(@Payload() request: WebhookRequest): Promise<void> {
    await this.webhooks.enable(request);
  }

  @Handles(Subjects.oms.webhooks.test)
  test(@Payload() request: WebhookRequest): Promise<Delivery> {
    return this.webhooks.test(request);
  }

  @Handles(Subjects.oms.webhooks.deliveries)
  deliveries(@Payload() request: ListDeliveriesRequest): Promise<ItemPage<Delivery>> {
    return this.webhooks.deliveries(request);
  }

  @Handles(Subjects.oms.webhooks.redeliver)
  redeliver(@Payload() request: DeliveryRequest): Promise<Delivery> {
    return this.webhooks.redeliver(request);
  }
}
