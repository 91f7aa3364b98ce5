import { Body, Delete, Get, Header, HttpCode, Inject, Param, Post, Query, Req, Res } from '@nestjs/common';
import { ApiBody, ApiCreatedResponse, ApiNoContentResponse, ApiOkResponse, ApiOperation, ApiParam, ApiTags } from '@nestjs/swagger';
import {
  type ItemPage,
  ParameterIssue,
  SHARE_LINK_DEFAULT_TTL_MS,
  SHARE_LINK_MAX_TTL_MS,
  type ShareLink,
  type ShipmentScope,
  Subjects,
} from '@tracking/contracts';
import { DomainError, parseDateTime } from '@tracking/core';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { AccountController } from '../accounts/account-route.decorator.js';
import type { GatewayConfig } from '../config.js';
import { ApiAccountErrors, ApiNotFound } from '../http/api-responses.js';
import { NestedResourceIdPipe } from '../http/resource-id.pipe.js';
import { createValidationPipe } from '../http/validation.js';
import { PageQuery } from '../paging/page-query.js';
import { ServiceClient } from '../rpc/rpc.module.js';
import { ApiShipmentParam, SHIPMENT_NOT_FOUND, ShipmentPath } from '../sets/shipment-contents.decorator.js';
import { GATEWAY_CONFIG } from '../tokens.js';
import { SECRET_CACHE_CONTROL } from '../webhooks/webhook-views.js';
import { CreatedShareLinkDto, CreateShareLinkDto, ShareLinkPageDto } from './dto/share-link.dto.js';
import { newShareToken } from './share-link-token.js';
import { TRACKING_PAGE_PATH } from './tracking-page.js';

/** A client's clock may run this far ahead of ours: an `expiresAt` of "30 days from now" by its clock still passes. */
const CLOCK_SKEW_MS = 60_000;
/**
 * The body is optional (no body: every default), which a declared DTO type would refuse as not a JSON
 * object; so the route declares none and runs the same validation itself, on `{}` when there is no body.
 */
const bodyValidation = createValidationPipe();
const LINK_NOT_FOUND = `${SHIPMENT_NOT_FOUND} Then ShareLinkNotExists: unknown id, not a UUID, or a link of another shipment.`;

/**
 * Share links of a shipment (docs/share-links.md): Admin and Operator create and revoke them, Viewer
 * lists them (a listed link carries no token: only the answer to create shows its url).
 */
@ApiTags('Share links')
@AccountController('shipments/:shipmentId/share-links')
@ApiAccountErrors()
@ApiShipmentParam()
export class ShareLinksController {
  constructor(
    private readonly services: ServiceClient,
    @Inject(GATEWAY_CONFIG) private readonly config: GatewayConfig,
  ) {}

  @Post()
  @HttpCode(201)
  @Header('Cache-Control', SECRET_CACHE_CONTROL)
  @ApiOperation({
    summary: 'Create a link that shows the shipment to someone without an account, until it expires; its url is shown this once',
    description:
      'The url opens the tracking page (GET /track/{token}); its token is 128 random bits, stored only as a SHA-256 digest, so ' +
      'a lost url cannot be shown again: create another. 400 InvalidParameter expiresAt: InvalidFormat, or OutOfRange when not ' +
      'in the future or more than 30 days ahead.',
  })
  @ApiCreatedResponse({
    type: CreatedShareLinkDto,
    description: 'The link with its `url`, shown only here (`Cache-Control: no-store`).',
    headers: { 'Cache-Control': { description: '`no-store`: the answer carries the link.', schema: { type: 'string', example: SECRET_CACHE_CONTROL } } },
  })
  @ApiBody({ type: CreateShareLinkDto, required: false })
  @ApiNotFound(SHIPMENT_NOT_FOUND)
  async create(
    @ShipmentPath() shipment: ShipmentScope,
    @Body() raw: unknown,
    @Req() request: FastifyRequest,
    @Res({ passthrough: true }) reply: FastifyReply,
  ): Promise<ShareLink & { url: string }> {
    const body = (await bodyValidation.transform(raw === undefined ? {} : raw, { type: 'body', metatype: CreateShareLinkDto })) as CreateShareLinkDto;
    const expiresAt = expiryOf(body.expiresAt, Date.now());
    const { token, digest } = newShareToken();
    const link = await this.services.call(Subjects.oms.shareLinks.create, { ...shipment, tokenDigest: digest, expiresAt }, request);
    reply.header('Location', `/v1/accounts/${shipment.accountId}/shipments/${shipment.shipmentId}/share-links/${link.id}`);
    return { id: link.id, url: `${this.config.PUBLIC_BASE_URL}${TRACKING_PAGE_PATH}/${token}`, expiresAt: link.expiresAt, createdAt: link.createdAt, revokedAt: link.revokedAt };
  }

  @Get()
  @ApiOperation({ summary: "List the shipment's share links, oldest first, with cursor paging; never their urls", description: 'Expired and revoked links stay listed.' })
  @ApiOkResponse({ type: ShareLinkPageDto, description: 'The links under `items`, next to `metadata`.' })
  @ApiNotFound(SHIPMENT_NOT_FOUND)
  list(@ShipmentPath() shipment: ShipmentScope, @Query() query: PageQuery, @Req() request: FastifyRequest): Promise<ItemPage<ShareLink>> {
    return this.services.call(Subjects.oms.shareLinks.list, { ...shipment, page: query.pageRequest() }, request);
  }

  @Delete(':linkId')
  @HttpCode(204)
  @ApiOperation({ summary: 'Revoke a share link at once: its url answers 404 from now on', description: 'Revoking it again is a 204 that changes nothing.' })
  @ApiParam({ name: 'linkId', format: 'uuid' })
  @ApiNoContentResponse({ description: 'Revoked; the link stays listed with its revokedAt.' })
  @ApiNotFound(LINK_NOT_FOUND)
  async delete(@ShipmentPath() shipment: ShipmentScope, @Param('linkId', new NestedResourceIdPipe()) linkId: string, @Req() request: FastifyRequest): Promise<void> {
    await this.services.call(Subjects.oms.shareLinks.delete, { ...shipment, linkId }, request);
  }
}

/** The link's expiry in epoch ms: the default, or the client's instant once it lies in (now, now + 30 days]. */
export function expiryOf(expiresAt: string | undefined, now: number): number {
  if (expiresAt === undefined) return now + SHARE_LINK_DEFAULT_TTL_MS;
  const at = parseDateTime(expiresAt)?.getTime();
  // The DTO has checked the format; this only keeps the compiler sure of it.
  if (at === undefined) throw DomainError.invalidParameter('expiresAt', ParameterIssue.InvalidFormat, 'expiresAt must be an RFC 3339 date-time.');
  if (at <= now) throw DomainError.invalidParameter('expiresAt', ParameterIssue.OutOfRange, 'expiresAt must lie in the future.');
  if (at > now + SHARE_LINK_MAX_TTL_MS + CLOCK_SKEW_MS) {
    throw DomainError.invalidParameter('expiresAt', ParameterIssue.OutOfRange, 'expiresAt must lie at most 30 days ahead.');
  }
  return at;
}

