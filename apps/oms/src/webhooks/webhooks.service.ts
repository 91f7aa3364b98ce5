import { Inject, Injectable } from '@nestjs/common';
import {
  type CreateWebhookRequest,
  type DeleteWebhookRequest,
  type Delivery,
  type DeliveryRequest,
  DeliveryStatus,
  ErrorCode,
  EventType,
  type ItemPage,
  type ListDeliveriesRequest,
  type ListWebhooksRequest,
  MAX_WEBHOOKS_PER_ACCOUNT,
  PREVIOUS_SECRET_OVERLAP_MS,
  redactWebhook,
  type TrackingEvent,
  type UpdateWebhookRequest,
  type Versioned,
  type Webhook,
  type WebhookRequest,
  WebhookStatus,
  type WebhookWithSecret,
} from '@tracking/contracts';
import { DomainError } from '@tracking/core';
import { applyChanges, checkVersion } from '@tracking/database';
import { checkWebhookUrl, generateWebhookSecret, type WebhookUrlPolicy } from '@tracking/webhooks';
import { validate as isUuid, v7 as uuidv7 } from 'uuid';
import type { OmsConfig } from '../config.js';
import { OMS_CONFIG } from '../tokens.js';
import type { WebhookDeliveryEntity } from './webhook-delivery.entity.js';
import type { WebhookEntity } from './webhook.entity.js';
import { WebhookRepository } from './webhook.repository.js';

/** The management of webhooks (docs/webhooks.md); sending their deliveries is the sender's (delivery/webhook-sender.ts). */
@Injectable()
export class WebhooksService {
  private readonly policy: WebhookUrlPolicy;

  constructor(
    private readonly webhooks: WebhookRepository,
    @Inject(OMS_CONFIG) config: OmsConfig,
  ) {
    this.policy = { allowInsecure: config.WEBHOOK_ALLOW_INSECURE, allowPrivateNetworks: config.WEBHOOK_ALLOW_PRIVATE_NETWORKS };
  }

  async list(request: ListWebhooksRequest): Promise<ItemPage<Webhook>> {
    const { rows, metadata } = await this.webhooks.findPage(request, request.page);
    return { items: rows.map(toWebhook), metadata };
  }

  async create(request: CreateWebhookRequest): Promise<Versioned<WebhookWithSecret>> {
    const input = request.webhook;
    // Outside any transaction: resolving the host may take seconds.
    await checkWebhookUrl(input.url, this.policy);
    const now = new Date();
    const entity: Omit<WebhookEntity, 'seq'> = {
      id: uuidv7(),
      tenantId: request.tenantId,
      accountId: request.accountId,
      url: input.url,
      description: input.description ?? null,
      eventTypes: input.eventTypes,
      status: WebhookStatus.Active,
      disabledReason: null,
      secret: generateWebhookSecret(),
      previousSecret: null,
      previousSecretExpiresAt: null,
      failingSince: null,
      version: 1,
      createdAt: now,
      updatedAt: now,
    };
    if (!(await this.webhooks.insertWithinLimit(entity, MAX_WEBHOOKS_PER_ACCOUNT))) {
      throw new DomainError(
        ErrorCode.WebhookLimitReached,
        `The account has ${MAX_WEBHOOKS_PER_ACCOUNT} webhooks, the most it may have; delete one first.`,
      );
    }
    return { resource: { ...toWebhook(entity), secret: entity.secret }, version: entity.version };
  }

  async get(request: WebhookRequest): Promise<Versioned<Webhook>> {
    const entity = await this.webhooks.findOne(request, request.webhookId);
    if (!entity) throw notFound(request.webhookId);
    return { resource: toWebhook(entity), version: entity.version };
  }

  async update(request: UpdateWebhookRequest): Promise<Versioned<Webhook>> {
    const id = request.webhookId;
    const { patch } = request;
    if (patch.url !== undefined) {
      // An unknown webhook is 404 whatever its new URL; the URL is judged before the row is locked.
      if (!(await this.webhooks.findOne(request, id))) throw notFound(id);
      await checkWebhookUrl(patch.url, this.policy);
    }
    return this.webhooks.withLockedWebhook(request, id, async (entity, manager) => {
      if (!entity) throw notFound(id);
      checkVersion('webhook', entity, request.expectedVersion);
      const changed: Partial<WebhookEntity> = {};
      if (patch.url !== undefined) changed.url = patch.url;
      if (patch.description !== undefined) changed.description = patch.description;
      if (patch.eventTypes !== undefined) changed.eventTypes = patch.eventTypes;
      if (applyChanges(entity, changed)) await this.webhooks.save(manager, entity);
      return { resource: toWebhook(entity), version: entity.version };
    });
  }

  delete(request: DeleteWebhookRequest): Promise<void> {
    const id = request.webhookId;
    return this.webhooks.withLockedWebhook(request, id, async (entity, manager) => {
      if (!entity) throw notFound(id);
      checkVersion('webhook', entity, request.expectedVersion);
      await this.webhooks.delete(manager, entity);
    });
  }

  /** A new secret; the current one keeps signing beside it for 24 h, replacing any older previous secret. */
  rotateSecret(request: WebhookRequest): Promise<Versioned<WebhookWithSecret>> {
    const id = request.webhookId;
    return this.webhooks.withLockedWebhook(request, id, async (entity, manager) => {
      if (!entity) throw notFound(id);
      const now = new Date();
      Object.assign(entity, {
        previousSecret: entity.secret,
        previousSecretExpiresAt: new Date(now.getTime() + PREVIOUS_SECRET_OVERLAP_MS),
        secret: generateWebhookSecret(),
        version: entity.version + 1,
        updatedAt: now,
      });
      await this.webhooks.save(manager, entity);
      return { resource: { ...toWebhook(entity), secret: entity.secret }, version: entity.version };
    });
  }

  /** Active again, its failure streak forgotten; enabling an Active webhook changes nothing. */
  enable(request: WebhookRequest): Promise<void> {
    const id = request.webhookId;
    return this.webhooks.withLockedWebhook(request, id, async (entity, manager) => {
      if (!entity) throw notFound(id);
      const changed: Partial<WebhookEntity> = { status: WebhookStatus.Active, disabledReason: null, failingSince: null };
      if (applyChanges(entity, changed)) await this.webhooks.save(manager, entity);
    });
  }

  /** A `webhook.test` delivery, due now, whatever the webhook's event types; the sender sends it (its insert wakes every worker's sender). */
  async test(request: WebhookRequest): Promise<Delivery> {
    const webhook = await this.webhooks.findOne(request, request.webhookId);
    if (!webhook) throw notFound(request.webhookId);
    const now = new Date();
    const event: TrackingEvent<{ webhookId: string }> = {
      id: uuidv7(),
      type: EventType.WebhookTest,
      occurredAt: now.toISOString(),
      accountId: webhook.accountId,
      data: { webhookId: webhook.id },
    };
    const delivery: Omit<WebhookDeliveryEntity, 'seq'> = {
      id: uuidv7(),
      tenantId: webhook.tenantId,
      accountId: webhook.accountId,
      webhookId: webhook.id,
      eventId: event.id,
      eventType: event.type,
      payload: JSON.stringify(event),
      status: DeliveryStatus.Pending,
      attempts: [],
      attemptsTotal: 0,
      attemptCount: 0,
      nextAttemptAt: now,
      leaseUntil: null,
      createdAt: now,
      updatedAt: now,
    };
    await this.webhooks.insertDelivery(delivery);
    return toDelivery(delivery);
  }

  async deliveries(request: ListDeliveriesRequest): Promise<ItemPage<Delivery>> {
    if (!(await this.webhooks.findOne(request, request.webhookId))) throw notFound(request.webhookId);
    const { rows, metadata } = await this.webhooks.findDeliveryPage(request, request.webhookId, request.page);
    return { items: rows.map(toDelivery), metadata };
  }

  async redeliver(request: DeliveryRequest): Promise<Delivery> {
    if (!(await this.webhooks.findOne(request, request.webhookId))) throw notFound(request.webhookId);
    // A path id that is no UUID names no delivery (and would not reach PostgreSQL's uuid column).
    const delivery = isUuid(request.deliveryId) ? await this.webhooks.redeliver(request, request.webhookId, request.deliveryId, new Date()) : null;
    if (!delivery) {
      throw new DomainError(ErrorCode.DeliveryNotExists, `Delivery ${request.deliveryId} does not exist for this webhook.`);
    }
    return toDelivery(delivery);
  }
}

function notFound(id: string): DomainError {
  return new DomainError(ErrorCode.WebhookNotExists, `Webhook ${id} does not exist in this account.`);
}

/** The webhook as answers show it: never a secret. */
export function toWebhook(entity: Omit<WebhookEntity, 'seq'>): Webhook {
  return {
    id: entity.id,
    url: entity.url,
    description: entity.description,
    eventTypes: entity.eventTypes as Webhook['eventTypes'],
    status: entity.status,
    disabledReason: entity.disabledReason,
    createdAt: entity.createdAt.toISOString(),
    updatedAt: entity.updatedAt.toISOString(),
  };
}

/**
 * The webhook as events carry it (`webhook.disabled`): every webhook of the account taking `*` receives
 * it, and every Viewer reads the feed, so its URL is redacted (`redactWebhookUrl`: no user info, query or
 * fragment).
 */
export function toWebhookEventData(entity: Omit<WebhookEntity, 'seq'>): Webhook {
  return redactWebhook(toWebhook(entity));
}

export function toDelivery(entity: Omit<WebhookDeliveryEntity, 'seq'>): Delivery {
  return {
    id: entity.id,
    eventId: entity.eventId,
    eventType: entity.eventType as EventType,
    status: entity.status,
    attempts: entity.attempts.map(({ at, statusCode, durationMs, error }) => ({ at, statusCode, durationMs, error })),
    attemptsTotal: entity.attemptsTotal,
    nextAttemptAt: entity.nextAttemptAt?.toISOString() ?? null,
  };
}
