import { Injectable } from '@nestjs/common';
import {
  type CreateShareLinkRequest,
  ErrorCode,
  type ItemPage,
  type ListShareLinksRequest,
  type PublicPlace,
  type PublicShipmentView,
  type ResolvedShareLink,
  type ResolveShareLinkRequest,
  type ShareLink,
  type ShareLinkRequest,
} from '@tracking/contracts';
import { DomainError } from '@tracking/core';
import { validate as isUuid, v7 as uuidv7 } from 'uuid';
import { ShipmentRepository } from '../shipments/shipment.repository.js';
import type { ShareLinkEntity } from './share-link.entity.js';
import { ShareLinkRepository } from './share-link.repository.js';

/** Share links of shipments and the public view they open (docs/share-links.md). */
@Injectable()
export class ShareLinksService {
  constructor(
    private readonly links: ShareLinkRepository,
    private readonly shipments: ShipmentRepository,
  ) {}

  async create(request: CreateShareLinkRequest): Promise<ShareLink> {
    const now = new Date();
    const entity: Omit<ShareLinkEntity, 'seq'> = {
      id: uuidv7(),
      tenantId: request.tenantId,
      accountId: request.accountId,
      shipmentId: request.shipmentId,
      tokenDigest: Buffer.from(request.tokenDigest, 'hex'),
      expiresAt: new Date(request.expiresAt),
      createdAt: now,
      revokedAt: null,
    };
    if (!(await this.links.insert(entity))) throw shipmentNotFound(request.shipmentId);
    return toShareLink(entity);
  }

  async list(request: ListShareLinksRequest): Promise<ItemPage<ShareLink>> {
    if ((await this.shipments.findStatus(request)) === null) throw shipmentNotFound(request.shipmentId);
    const { rows, metadata } = await this.links.findPage(request, request.page);
    return { items: rows.map(toShareLink), metadata };
  }

  /** Revokes at once: the next public read of its token is a 404. Revoking again changes nothing. */
  async revoke(request: ShareLinkRequest): Promise<void> {
    // A linkId that is not a UUID names no link; the shipment's 404 still comes first.
    if (isUuid(request.linkId) && (await this.links.revoke(request, request.linkId, new Date()))) return;
    if ((await this.shipments.findStatus(request)) === null) throw shipmentNotFound(request.shipmentId);
    throw new DomainError(ErrorCode.ShareLinkNotExists, `Share link ${request.linkId} does not exist on this shipment.`);
  }

  /** The public view of a live link's shipment, or null for any digest that names none (unknown, expired, revoked, deleted). */
  async resolve(request: ResolveShareLinkRequest): Promise<ResolvedShareLink | null> {
    const row = await this.links.findLive(Buffer.from(request.tokenDigest, 'hex'));
    if (row === undefined) return null;
    const visits = await this.links.findVisits(row.shipment_id);
    const eta = etaOf(row.api_json);
    // When anything shown last changed: the shipment, its places, its newest position, visit or estimate.
    const changes = [row.updated_at, row.last_position_recorded_at, row.origin_updated_at, row.destination_updated_at, ...visits.map((visit) => visit.updated_at)];
    const changedAt = Math.max(...changes.filter((at): at is Date => at !== null).map((at) => at.getTime()), calculatedAt(eta));
    return {
      scope: { tenantId: row.tenant_id, accountId: row.account_id, shipmentId: row.shipment_id },
      view: {
        name: row.name,
        status: row.status,
        origin: placeOf(row.origin_name, row.origin_lat, row.origin_lng),
        destination: placeOf(row.destination_name, row.destination_lat, row.destination_lng),
        lastPosition: positionOf(row.last_position_lat, row.last_position_lng, row.last_position_recorded_at),
        eta,
        visits: visits.map((visit) => ({ name: visit.name, arrivedAt: visit.arrived_at.toISOString(), departedAt: visit.departed_at && visit.departed_at.toISOString() })),
        updatedAt: new Date(changedAt).toISOString(),
      },
    };
  }
}

export function toShareLink(entity: Omit<ShareLinkEntity, 'seq' | 'tokenDigest'>): ShareLink {
  return { id: entity.id, expiresAt: entity.expiresAt.toISOString(), createdAt: entity.createdAt.toISOString(), revokedAt: entity.revokedAt && entity.revokedAt.toISOString() };
}

function shipmentNotFound(shipmentId: string): DomainError {
  return new DomainError(ErrorCode.ShipmentNotExists, `Shipment ${shipmentId} does not exist in this account.`);
}

function positionOf(lat: number | null, lng: number | null, recordedAt: Date | null): PublicShipmentView['lastPosition'] {
  return lat === null || lng === null || recordedAt === null ? null : { lat, lng, recordedAt: recordedAt.toISOString() };
}

function placeOf(name: string | null, lat: number | null, lng: number | null): PublicPlace | null {
  return name === null || lat === null || lng === null ? null : { name, location: { lat, lng } };
}

/**
 * The shipment's `eta` exactly as `GET /shipments/{id}` shows it, read from its stored representation
 * (docs/eta.md); null when it has none.
 */
function etaOf(apiJson: string): unknown {
  const shipment = JSON.parse(apiJson) as { eta?: unknown };
  return shipment.eta ?? null;
}

function calculatedAt(eta: unknown): number {
  const at = typeof eta === 'object' && eta !== null ? Date.parse(String((eta as { calculatedAt?: unknown }).calculatedAt)) : NaN;
  return Number.isNaN(at) ? 0 : at;
}
