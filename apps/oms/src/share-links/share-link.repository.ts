import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { type PageRequest, PUBLIC_VISITS, type ShipmentScope } from '@tracking/contracts';
import { CursorCodec, cursorBinding, keysetPage, lockInsertOrder, type KeysetPage } from '@tracking/paging';
import { preparedRecords } from '@tracking/database';
import type { Repository } from 'typeorm';
import { type PublicShipmentRow, ShipmentRepository } from '../shipments/shipment.repository.js';
import { ShareLinkEntity } from './share-link.entity.js';

export type { PublicShipmentRow } from '../shipments/shipment.repository.js';

export interface PublicVisitRow {
  name: string;
  arrived_at: Date;
  departed_at: Date | null;
  updated_at: Date;
}

/** Every statement on the `share_links` table. */
@Injectable()
export class ShareLinkRepository {
  constructor(
    @InjectRepository(ShareLinkEntity) private readonly links: Repository<ShareLinkEntity>,
    private readonly cursors: CursorCodec,
    private readonly shipments: ShipmentRepository,
  ) {}

  /**
   * Inserts the link when the shipment is the account's (false when it is not: nothing inserted). The
   * shipment's row is what the insert reads, so a concurrent delete either waits for it (and cascades)
   * or has removed the shipment first.
   */
  async insert(link: Omit<ShareLinkEntity, 'seq'>): Promise<boolean> {
    return this.links.manager.transaction(async (manager) => {
      await lockInsertOrder(manager, `share_links:${link.shipmentId}`);
      if (!(await this.shipments.lockForLink(manager, link, link.shipmentId))) return false;
      const rows = (await manager.query(
        `INSERT INTO share_links (id, tenant_id, account_id, shipment_id, token_digest, expires_at, created_at, revoked_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, NULL)
         RETURNING id`,
        [link.id, link.tenantId, link.accountId, link.shipmentId, link.tokenDigest, link.expiresAt, link.createdAt],
      )) as unknown[];
      return rows.length === 1;
    });
  }

  /** One page of the shipment's links, oldest first. */
  findPage(scope: ShipmentScope, page: PageRequest): Promise<KeysetPage<ShareLinkEntity>> {
    const query = this.links
      .createQueryBuilder('l')
      .where('l.shipment_id = :shipmentId', { shipmentId: scope.shipmentId })
      .andWhere('l.account_id = :accountId', { accountId: scope.accountId })
      .andWhere('l.tenant_id = :tenantId', { tenantId: scope.tenantId });
    return keysetPage(query, {
      seqColumn: 'l.seq',
      seqProperty: 'seq',
      page,
      codec: this.cursors,
      binding: cursorBinding('share-links', { accountId: scope.accountId, shipmentId: scope.shipmentId.toLowerCase() }),
    });
  }

  /** Revokes the link now unless it is revoked (the first `revokedAt` stays); false when the shipment has no such link. */
  async revoke(scope: ShipmentScope, linkId: string, at: Date): Promise<boolean> {
    const rows = (await this.links.query(
      `UPDATE share_links SET revoked_at = COALESCE(revoked_at, $5)
        WHERE id = $1 AND shipment_id = $2 AND account_id = $3 AND tenant_id = $4
        RETURNING id`,
      [linkId, scope.shipmentId, scope.accountId, scope.tenantId, at],
    )) as [unknown[], number];
    return rows[0].length === 1;
  }

  /**
   * The shipment of the live link (not revoked, not expired) whose token has this digest, with its origin
   * and destination; undefined for any other digest (`ShipmentRepository.findShared`: the statement reads
   * `shipments`, whose statements all live there).
   */
  findLive(tokenDigest: Buffer): Promise<PublicShipmentRow | undefined> {
    return this.shipments.findShared(tokenDigest);
  }

  /**
   * The shipment's newest visits (at most PUBLIC_VISITS) in arrival order, each with its place's name; a
   * visit of a place deleted since is left out, as nothing would name it.
   */
  findVisits(shipmentId: string): Promise<PublicVisitRow[]> {
    return preparedRecords<PublicVisitRow>(
      this.links.manager.connection,
      `SELECT name, arrived_at, departed_at, updated_at FROM (
         SELECT p.name, v.arrived_at, v.departed_at, v.updated_at
           FROM visits v JOIN points_of_interest p ON p.id = v.poi_id
          WHERE v.shipment_id = $1
          ORDER BY v.arrived_at DESC LIMIT $2) AS newest
        ORDER BY arrived_at`,
      [shipmentId, PUBLIC_VISITS],
    );
  }
}
