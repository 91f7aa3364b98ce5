import { Get, Query, Req, Res } from '@nestjs/common';
import {
  ApiBadRequestResponse,
  ApiExtraModels,
  ApiGatewayTimeoutResponse,
  ApiHeader,
  ApiOkResponse,
  ApiOperation,
  ApiTags,
  ApiTooManyRequestsResponse,
  getSchemaPath,
} from '@nestjs/swagger';
import { ErrorCode, type ShipmentScope, Subjects, type Track } from '@tracking/contracts';
import { DomainError } from '@tracking/core';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { AccountController } from '../accounts/account-route.decorator.js';
import { ApiAccountErrors, ApiNotFound } from '../http/api-responses.js';
import { ErrorEnvelopeDto } from '../http/common.dto.js';
import { ServiceClient } from '../rpc/rpc.module.js';
import { ApiShipmentParam, SHIPMENT_NOT_FOUND, ShipmentPath } from '../sets/shipment-contents.decorator.js';
import { TRACK_GEO_JSON_SCHEMA, TrackDto } from './track.dto.js';
import { GEO_JSON, prefersGeoJson, type TrackFeatureCollection, trackFeatures, trackOf } from './track-format.js';
import { TrackQuery } from './track.query.js';

/** Retry-After (seconds) of a track refused because the tenant has too many being read. */
export const TRACK_READS_RETRY_AFTER_S = 1;

/**
 * A shipment's track (docs/tracks.md). The OMS answers whether the shipment is the account's (its 404),
 * then the DMS, which holds the readings and the assignment periods, reads and simplifies the positions:
 * two small hops from here rather than the OMS relaying the DMS's answer, as for a shipment's devices.
 */
@ApiTags('Tracks')
@AccountController('shipments/:shipmentId')
@ApiAccountErrors()
@ApiShipmentParam()
@ApiExtraModels(TrackDto)
export class TracksController {
  constructor(private readonly services: ServiceClient) {}

  @Get('track')
  @ApiOperation({
    summary: "A shipment's track: its devices' positions while assigned to it, in recordedAt order, simplified to maxPoints",
    description:
      'Every assignment of a device to the shipment is kept as a period; a position counts when its recordedAt lies in one ' +
      'of them (and in the half-open window from..to). Above maxPoints the track is simplified with Douglas-Peucker, one ' +
      "tolerance for every device, each device's first and last point kept. Accept: application/geo+json answers an RFC 7946 " +
      'FeatureCollection with one LineString Feature per device ([lng, lat]; a Point for a device with a single position). ' +
      'Not a paged collection.',
  })
  @ApiHeader({ name: 'Accept', required: false, description: `application/json (the default) or ${GEO_JSON}.` })
  @ApiOkResponse({
    description: 'The track, as JSON or GeoJSON by the Accept header.',
    content: {
      'application/json': { schema: { $ref: getSchemaPath(TrackDto) } },
      [GEO_JSON]: { schema: TRACK_GEO_JSON_SCHEMA as never },
    },
  })
  @ApiBadRequestResponse({
    type: ErrorEnvelopeDto,
    description:
      'InvalidParameter: from or to (InvalidFormat; to before from: OutOfRange), deviceId (InvalidFormat), maxPoints ' +
      '(InvalidFormat, OutOfRange outside 2..10000), a repeated parameter (InvalidFormat), any other parameter (UnknownField); ' +
      'accountId: AccountNotFound.',
  })
  @ApiTooManyRequestsResponse({
    type: ErrorEnvelopeDto,
    description:
      'RateLimitExceeded with Retry-After: over a rate limit (details.policy names it), or, with details.policy track-reads, ' +
      'the tenant already has as many tracks being read as one DMS replica allows at once (TRACK_CONCURRENCY_PER_TENANT, ' +
      'default 2); nothing was read.',
  })
  @ApiGatewayTimeoutResponse({
    type: ErrorEnvelopeDto,
    description:
      "GatewayTimeout: the track was not read within the gateway's deadline (RPC_TIMEOUT_MS); the DMS's statements end " +
      'before it, so nothing of the request runs on. A narrower window (from, to) or fewer devices is cheaper.',
  })
  @ApiNotFound(SHIPMENT_NOT_FOUND)
  async get(
    @ShipmentPath() shipment: ShipmentScope,
    @Query() query: TrackQuery,
    @Req() request: FastifyRequest,
    @Res({ passthrough: true }) reply: FastifyReply,
  ): Promise<Track | TrackFeatureCollection> {
    const filters = query.filters();
    // The shipment's 404 comes from the OMS; the DMS knows devices and their periods only.
    await this.services.call(Subjects.oms.shipments.get, shipment, request);
    let track;
    try {
      track = await this.services.call(Subjects.dms.tracks.get, { ...shipment, ...filters }, request);
    } catch (error) {
      // The tenant's concurrent reads on the DMS: one ends within a request's time, so a retry soon may pass.
      if (error instanceof DomainError && error.code === ErrorCode.RateLimitExceeded) reply.header('Retry-After', String(TRACK_READS_RETRY_AFTER_S));
      throw error;
    }
    if (prefersGeoJson(request.headers.accept)) {
      void reply.type(GEO_JSON);
      return trackFeatures(track);
    }
    return trackOf(shipment.shipmentId, filters, track);
  }
}
