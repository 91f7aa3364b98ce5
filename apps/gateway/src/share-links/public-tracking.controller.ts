import { Get, Param, Req, Res } from '@nestjs/common';
import { ApiBadRequestResponse, ApiNotFoundResponse, ApiOkResponse, ApiOperation, ApiParam, ApiTags, ApiTooManyRequestsResponse } from '@nestjs/swagger';
import { ErrorCode, PUBLIC_TRACK_POINTS, Subjects, type PublicShipmentView, type ShipmentScope, type TrackReply } from '@tracking/contracts';
import { DomainError } from '@tracking/core';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { LRUCache } from 'lru-cache';
import { ApiController } from '../http/api-controller.js';
import { ErrorEnvelopeDto } from '../http/common.dto.js';
import { ServiceClient } from '../rpc/rpc.module.js';
import { TRACK_READS_RETRY_AFTER_S } from '../tracks/tracks.controller.js';
import { PublicTrackingDto } from './dto/share-link.dto.js';
import { shareTokenDigest } from './share-link-token.js';

/** Headers of every answer of the public view, errors included (docs/share-links.md). */
export const PUBLIC_TRACKING_HEADERS = {
  'Cache-Control': 'private, max-age=30',
  'Referrer-Policy': 'no-referrer',
  // JSON for a script of this origin; nothing in it may load, run or be framed.
  'Content-Security-Policy': "default-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'",
  'X-Robots-Tag': 'noindex, nofollow',
} as const;

export type PublicTracking = PublicShipmentView & { track: { type: 'LineString'; coordinates: [number, number][] } | null };

/** How long a shared shipment's track is reused; the page reads the view every 30 s. */
export const PUBLIC_TRACK_CACHE_MS = 5000;
/** Shared shipments whose tracks one gateway keeps (a 500-point track is about 30 KB). */
const PUBLIC_TRACK_CACHE_ENTRIES = 1000;

const NOT_FOUND = 'ShareLinkNotExists: the same answer for an unknown, malformed, expired or revoked token and for a shipment deleted since.';

/**
 * The one read of the API without a token: what a share link shows (docs/share-links.md). A token that
 * cannot be one is refused here; any other costs one probe of the digest index in the OMS, after the
 * `public-tracking` rate limit of its address.
 */
@ApiTags('Share links')
@ApiController('v1/public/tracking')
export class PublicTrackingController {
  /**
   * Tracks of shared shipments, per shipment for PUBLIC_TRACK_CACHE_MS, concurrent reads of one shipment
   * sharing one DMS call (lru-cache's `fetch`): a link opened by many people costs one track read per
   * shipment and 5 s. Measured need: without it, 8 concurrent reads of one link got 429 `track-reads` (the
   * tenant's concurrent DMS track reads, shared with its API clients; bench/public-tracking.mjs). The link
   * itself is still checked on every request, so a revocation holds at once.
   */
  private readonly tracks = new LRUCache<string, TrackReply, { scope: ShipmentScope; request: FastifyRequest }>({
    max: PUBLIC_TRACK_CACHE_ENTRIES,
    ttl: PUBLIC_TRACK_CACHE_MS,
    fetchMethod: (_key, _stale, { context }) =>
      this.services.call(Subjects.dms.tracks.get, { ...context.scope, maxPoints: PUBLIC_TRACK_POINTS }, context.request),
  });

  constructor(private readonly services: ServiceClient) {}

  @Get(':token')
  @ApiOperation({
    summary: "A share link's view of its shipment, for the consignee: no Authorization",
    description:
      'Only these fields: no ids, devices, metadata, conditions or alerts. Rate limited per client address (policy public-tracking, ' +
      'RATE_LIMIT_PUBLIC_TRACKING). Every answer carries Cache-Control: private, max-age=30 and Referrer-Policy: no-referrer.',
  })
  @ApiParam({ name: 'token', description: 'The last path segment of the link’s url (22 characters of base64url).' })
  @ApiOkResponse({ type: PublicTrackingDto, description: 'The view.' })
  @ApiBadRequestResponse({ type: ErrorEnvelopeDto, description: 'InvalidParameter: any query parameter (UnknownField); the route takes none.' })
  @ApiNotFoundResponse({ type: ErrorEnvelopeDto, description: NOT_FOUND })
  @ApiTooManyRequestsResponse({ type: ErrorEnvelopeDto, description: 'RateLimitExceeded with Retry-After (details.policy public-tracking, or track-reads).' })
  async get(@Param('token') token: string, @Req() request: FastifyRequest, @Res({ passthrough: true }) reply: FastifyReply): Promise<PublicTracking> {
    void reply.headers(PUBLIC_TRACKING_HEADERS);
    const digest = shareTokenDigest(token);
    const resolved = digest === undefined ? null : await this.services.call(Subjects.oms.shareLinks.resolve, { tokenDigest: digest }, request);
    if (resolved === null) throw new DomainError(ErrorCode.ShareLinkNotExists, 'This link is unknown, has expired or was revoked.');
    let track: TrackReply;
    try {
      const { scope } = resolved;
      track = (await this.tracks.fetch(`${scope.tenantId}/${scope.accountId}/${scope.shipmentId}`, { context: { scope, request } })) as TrackReply;
    } catch (error) {
      if (error instanceof DomainError && error.code === ErrorCode.RateLimitExceeded) reply.header('Retry-After', String(TRACK_READS_RETRY_AFTER_S));
      throw error;
    }
    const { view } = resolved;
    // Field by field: whatever else a service may add to its answer stays out of the public one.
    return {
      name: view.name,
      status: view.status,
      origin: view.origin,
      destination: view.destination,
      lastPosition: view.lastPosition,
      eta: view.eta ?? null,
      track: lineOf(track),
      visits: view.visits,
      updatedAt: view.updatedAt,
    };
  }
}

/** Every position of every device, in recordedAt order, as one GeoJSON LineString; null with fewer than two. */
export function lineOf(track: TrackReply): PublicTracking['track'] {
  if (track.lat.length < 2) return null;
  return { type: 'LineString', coordinates: track.lat.map((lat, i): [number, number] => [track.lng[i] as number, lat]) };
}
