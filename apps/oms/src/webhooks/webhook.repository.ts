import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { type AccountScope, DeliveryStatus, ErrorCode, type PageRequest } from '@tracking/contracts';
import { DomainError } from '@tracking/core';
import { foreignKeyViolation, ownedBy } from '@tracking/database';
import { CursorCodec, cursorBinding, keysetPage, lockInsertOrder, type KeysetPage } from '@tracking/paging';
import type { EntityManager, Repository } from 'typeorm';
import { WebhookDeliveryEntity } from './webhook-delivery.entity.js';
import { WebhookEntity } from './webhook.entity.js';

/**
 * A delivery list page's deliveries stay under this much JSON, so that the reply fits NATS's default
 * max_payload (1 MiB) with room for its envelope: a delivery holds up to ATTEMPT_LOG_LENGTH attempts of
 * up to 1 KiB of error text each (more once JSON escapes control characters).
 */
export const MAX_DELIVERY_PAGE_BYTES = 512 * 1024;
/** A delivery's JSON besides its attempts (ids, type, status, times), rounded up. */
const DELIVERY_OVERHEAD_BYTES = 300;

/**
 * The paging scope of a webhook's deliveries: every insert of a delivery, whoever makes it (a test
 * ping here, the event dispatch elsewhere), takes this lock, so that `seq` order is commit order.
 */
export function deliveryInsertOrderScope(webhookId: string): string {
  return `webhook-deliveries:${webhookId}`;
}

/** Takes the delivery insert-order locks of `webhookIds`, in one order (by the lock's key) whoever asks. */
export async function lockDeliveryInsertOrder(manager: EntityManager, webhookIds: readonly string[]): Promise<void> {
  await manager.query(
    `SELECT pg_advisory_xact_lock(k) FROM (SELECT DISTINCT hashtext(s) AS k FROM unnest($1::text[]) AS s ORDER BY 1) AS keys`,
    [webhookIds.map(deliveryInsertOrderScope)],
  );
}

@Injectable()
export class WebhookRepository {
  constructor(
    @InjectRepository(WebhookEntity) private readonly webhooks: Repository<WebhookEntity>,
    @InjectRepository(WebhookDeliveryEntity) private readonly deliveries: Repository<WebhookDeliveryEntity>,
    private readonly cursors: CursorCodec,
  ) {}

  /**
   * Inserts `webhook` unless the account already has `limit` webhooks. The account's insert-order lock
   * serialises concurrent creates, so the count each one sees includes every webhook committed before it.
   */
  async insertWithinLimit(webhook: Omit<WebhookEntity, 'seq'>, limit: number): Promise<boolean> {
    return this.webhooks.manager.transaction(async (manager) => {
      await lockInsertOrder(manager, `webhooks:${webhook.accountId}`);
      const count = await manager.countBy(WebhookEntity, { tenantId: webhook.tenantId, accountId: webhook.accountId });
      if (count >= limit) return false;
      await manager.insert(WebhookEntity, webhook);
      return true;
    });
  }

  findPage(scope: AccountScope, page: PageRequest): Promise<KeysetPage<WebhookEntity>> {
    const query = this.webhooks
      .createQueryBuilder('w')
      .where('w.account_id = :accountId', { accountId: scope.accountId })
      .andWhere('w.tenant_id = :tenantId', { tenantId: scope.tenantId });
    return keysetPage(query, {
      seqColumn: 'w.seq',
      seqProperty: 'seq',
      page,
      codec: this.cursors,
      binding: cursorBinding('webhooks', { accountId: scope.accountId }),
    });
  }

  async findOne(scope: AccountScope, id: string): Promise<WebhookEntity | null> {
    // By primary key alone, then the owner: see `ownedBy`.
    return ownedBy(await this.webhooks.findOneBy({ id }), scope);
  }

  /** Runs `work` in one transaction with the webhook locked (`FOR UPDATE`) until it returns. */
  withLockedWebhook<T>(scope: AccountScope, id: string, work: (webhook: WebhookEntity | null, manager: EntityManager) => Promise<T>): Promise<T> {
    return this.webhooks.manager.transaction(async (manager) => {
      const webhook = await manager.findOne(WebhookEntity, {
        where: { id, accountId: scope.accountId, tenantId: scope.tenantId },
        lock: { mode: 'pessimistic_write' },
      });
      return work(webhook, manager);
    });
  }

  async save(manager: EntityManager, webhook: WebhookEntity): Promise<void> {
    const { seq: _seq, ...columns } = webhook;
    await manager.update(WebhookEntity, { id: webhook.id }, columns);
  }

  /** Deletes the webhook; its deliveries go with it (`ON DELETE CASCADE`). */
  async delete(manager: EntityManager, webhook: WebhookEntity): Promise<void> {
    await manager.delete(WebhookEntity, { id: webhook.id });
  }

  /** Inserts a delivery in its webhook's insert order; WebhookNotExists when the webhook was deleted meanwhile. */
  async insertDelivery(delivery: Omit<WebhookDeliveryEntity, 'seq'>): Promise<void> {
    try {
      await this.deliveries.manager.transaction(async (manager) => {
        await lockDeliveryInsertOrder(manager, [delivery.webhookId]);
        await manager.insert(WebhookDeliveryEntity, delivery);
      });
    } catch (error) {
      if (foreignKeyViolation(error)) {
        throw new DomainError(ErrorCode.WebhookNotExists, `Webhook ${delivery.webhookId} does not exist in this account.`);
      }
      throw error;
    }
  }

  /**
   * One page of the webhook's deliveries, ended early (with the cursor after its last delivery) where their
   * attempt logs would outgrow MAX_DELIVERY_PAGE_BYTES: the reply has to fit one NATS message whatever
   * `limit` asked. A page always holds at least one delivery (one is at most ATTEMPT_LOG_LENGTH attempts).
   */
  async findDeliveryPage(scope: AccountScope, webhookId: string, page: PageRequest): Promise<KeysetPage<WebhookDeliveryEntity>> {
    const query = this.deliveries
      .createQueryBuilder('d')
      .where('d.tenant_id = :tenantId', { tenantId: scope.tenantId })
      .andWhere('d.account_id = :accountId', { accountId: scope.accountId })
      .andWhere('d.webhook_id = :webhookId', { webhookId });
    const binding = cursorBinding('webhook-deliveries', { accountId: scope.accountId, webhookId });
    const found = await keysetPage(query, { seqColumn: 'd.seq', seqProperty: 'seq', page, codec: this.cursors, binding });
    let size = 0;
    let previous: WebhookDeliveryEntity | undefined;
    for (const [i, row] of found.rows.entries()) {
      size += DELIVERY_OVERHEAD_BYTES + Buffer.byteLength(JSON.stringify(row.attempts));
      if (size > MAX_DELIVERY_PAGE_BYTES && previous) {
        return { rows: found.rows.slice(0, i), metadata: { ...found.metadata, nextCursor: this.cursors.encode(binding, previous.seq) } };
      }
      previous = row;
    }
    return found;
  }

  /**
   * Makes a delivery of the webhook due now again: Pending, no lease, a fresh retry schedule
   * (`attempt_count` 0), its attempt log kept. Null when the webhook has no such delivery.
   */
  async redeliver(scope: AccountScope, webhookId: string, deliveryId: string, now: Date): Promise<WebhookDeliveryEntity | null> {
    const delivery = ownedBy(await this.deliveries.findOneBy({ id: deliveryId }), scope);
    if (!delivery || delivery.webhookId !== webhookId) return null;
    const changes = { status: DeliveryStatus.Pending, nextAttemptAt: now, leaseUntil: null, attemptCount: 0, updatedAt: now };
    const result = await this.deliveries.update({ id: deliveryId, webhookId }, changes);
    // Deleted with its webhook between the read and the update.
    if (result.affected === 0) return null;
    return { ...delivery, ...changes };
  }
}
