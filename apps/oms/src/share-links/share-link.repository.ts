import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { type PageRequest, PUBLIC_VISITS, type ShipmentScope } from '@tracking/contracts';
import { CursorCodec, cursorBinding, keysetPage, lockInsertOrder, type KeysetPage } from '@tracking/paging';
import { preparedRecords } from '@tracking/database';
import type { Repository } from 'typeorm';
import { ShipmentRepository } from '../shipments/shipment.repository.js';
import { ShareLinkEntity } from './share-link.entity.js';

/** The public tracking view's shipment (docs/share-links.md): what a share link shows, with its places. */
export interface PublicShipmentRow {
  tenant_id: string;
  account_id: string;
  shipment_id: string;
  name: string;
  status: string;
  updated_at: Date;
  api_json: string;
  last_position_lat: number | null;
  last_position_lng: number | null;
  last_position_recorded_at: Date | null;
  origin_name: string | null;
  origin_lat: number | null;
  origin_lng: number | null;
  origin_updated_at: Date | null;
  destination_name: string | null;
  destination_lat: number | null;
  destination_lng: number | null;
  destination_updated_at: Date | null;
}

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
   * and destination; undefined for any other digest. One probe of the unique digest index, then primary keys.
   * One prepared statement (`preparedRecords`) rather than two TypeORM queries (the link, then its shipment):
   * every poll of a consignee's page and every guessed token costs this lookup, without a token.
   */
  async findLive(tokenDigest: Buffer): Promise<PublicShipmentRow | undefined> {
    const [row] = await preparedRecords<PublicShipmentRow>(
      this.links.manager.connection,
      `SELECT s.tenant_id, s.account_id, s.id AS shipment_id, s.name, s.status, s.updated_at, s.api_json,
              s.last_position_lat, s.last_position_lng, s.last_position_recorded_at,
              o.name AS origin_name, o.lat AS origin_lat, o.lng AS origin_lng, o.updated_at AS origin_updated_at,
              d.name AS destination_name, d.lat AS destination_lat, d.lng AS destination_lng, d.updated_at AS destination_updated_at
         FROM share_links l
         JOIN shipments s ON s.id = l.shipment_id
         LEFT JOIN points_of_interest o ON o.id = s.origin_id
         LEFT JOIN points_of_interest d ON d.id = s.destination_id
        WHERE l.token_digest = $1 AND l.revoked_at IS NULL AND l.expires_at > now()`,
      [tokenDigest],
    );
    return row;
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
