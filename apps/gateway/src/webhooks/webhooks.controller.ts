import { Body, Delete, Get, Header, Headers, HttpCode, Param, Patch, Post, Query, Req, Res } from '@nestjs/common';
import {
  ApiAcceptedResponse,
  ApiConflictResponse,
  ApiCreatedResponse,
  ApiNoContentResponse,
  ApiOkResponse,
  ApiOperation,
  ApiParam,
  ApiServiceUnavailableResponse,
  ApiTags,
} from '@nestjs/swagger';
import { type AccountScope, type Delivery, ErrorCode, type ItemPage, Subjects, type Webhook, type WebhookInput, type WebhookWithSecret } from '@tracking/contracts';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { AccountController } from '../accounts/account-route.decorator.js';
import { Scope } from '../accounts/account-scope.decorator.js';
import { ApiAccountErrors, ApiIfMatch, ApiNotFound } from '../http/api-responses.js';
import { ErrorEnvelopeDto } from '../http/common.dto.js';
import { parseIfMatch, withETag } from '../http/etag.js';
import { NestedResourceIdPipe, ResourceIdPipe } from '../http/resource-id.pipe.js';
import { PageQuery } from '../paging/page-query.js';
import { ServiceClient } from '../rpc/rpc.module.js';
import {
  CreateWebhookDto,
  DeliveryDto,
  DeliveryPageDto,
  UpdateWebhookDto,
  WebhookDto,
  WebhookPageDto,
  WebhookWithSecretDto,
} from './dto/webhook.dto.js';
import { SECRET_CACHE_CONTROL, webhookViewFor } from './webhook-views.js';

const WebhookId = new ResourceIdPipe(ErrorCode.WebhookNotExists, 'Webhook');
const NO_WEBHOOK = "WebhookNotExists: unknown id, not a UUID, or another account's webhook.";
const NotFound = () => ApiNotFound(NO_WEBHOOK);
const URL_REFUSED =
  'InvalidParameter: a field (eventTypes with an unknown type: InvalidFormat), or the url refused by the SSRF policy ' +
  '(issue InvalidFormat: not https, or user info; ForbiddenAddress: a loopback, private, link-local, metadata or other ' +
  'special-purpose address, as a literal or what the name resolves to; UnresolvableHost: the name has no address); ' +
  'accountId: AccountNotFound; MalformedRequest.';
const VIEWER_URL = ' Callers without write permission on the account (Viewer) see each `url` without user info, query and fragment.';
const NO_STORE = {
  'Cache-Control': { description: '`no-store`: the answer carries the signing secret; no cache may keep it.', schema: { type: 'string', example: SECRET_CACHE_CONTROL } },
};
const RESOLVER_DOWN = () =>
  ApiServiceUnavailableResponse({
    type: ErrorEnvelopeDto,
    description: "ServiceUnavailable: the url's host name could not be resolved right now (or the service is unavailable); retry.",
  });

/** The webhooks of an account and their delivery logs (docs/webhooks.md). */
@ApiTags('Webhooks')
@AccountController('webhooks')
@ApiAccountErrors()
export class WebhooksController {
  constructor(private readonly services: ServiceClient) {}

  @Get()
  @ApiOperation({ summary: 'List webhooks, oldest first, with cursor paging; never their secrets', description: VIEWER_URL.trim() })
  @ApiOkResponse({ type: WebhookPageDto, description: 'The webhooks under `items`, next to `metadata`.' })
  async list(@Scope() scope: AccountScope, @Query() query: PageQuery, @Req() request: FastifyRequest): Promise<ItemPage<Webhook>> {
    const page = await this.services.call(Subjects.oms.webhooks.list, { ...scope, page: query.pageRequest() }, request);
    return { ...page, items: page.items.map(webhookViewFor(request, scope.accountId)) };
  }

  @Post()
  @HttpCode(201)
  @Header('Cache-Control', SECRET_CACHE_CONTROL)
  @ApiOperation({
    summary: 'Create a webhook; the answer carries its signing secret, shown this once',
    description: `At most 20 webhooks per account. The URL is checked against the SSRF policy now and again at every delivery. 400: ${URL_REFUSED}`,
  })
  @ApiCreatedResponse({
    type: WebhookWithSecretDto,
    description: 'Location and ETag headers name the new webhook; `secret` is shown only here (`Cache-Control: no-store`).',
    headers: NO_STORE,
  })
  @ApiConflictResponse({ type: ErrorEnvelopeDto, description: 'WebhookLimitReached: the account already has 20 webhooks.' })
  @RESOLVER_DOWN()
  async create(
    @Scope() scope: AccountScope,
    @Body() body: CreateWebhookDto,
    @Req() request: FastifyRequest,
    @Res({ passthrough: true }) reply: FastifyReply,
  ): Promise<WebhookWithSecret> {
    const created = await this.services.call(Subjects.oms.webhooks.create, { ...scope, webhook: body as WebhookInput }, request);
    reply.header('Location', `/v1/accounts/${scope.accountId}/webhooks/${created.resource.id}`);
    return withETag(reply, created);
  }

  @Get(':webhookId')
  @ApiOperation({ summary: 'Get one webhook, without its secret', description: VIEWER_URL.trim() })
  @ApiParam({ name: 'webhookId', format: 'uuid' })
  @ApiOkResponse({ type: WebhookDto, description: 'The ETag header carries its version.' })
  @NotFound()
  async get(
    @Scope() scope: AccountScope,
    @Param('webhookId', WebhookId) webhookId: string,
    @Req() request: FastifyRequest,
    @Res({ passthrough: true }) reply: FastifyReply,
  ): Promise<Webhook> {
    const found = await this.services.call(Subjects.oms.webhooks.get, { ...scope, webhookId }, request);
    return withETag(reply, { ...found, resource: webhookViewFor(request, scope.accountId)(found.resource) });
  }

  @Patch(':webhookId')
  @ApiOperation({ summary: 'Change the url, description or eventTypes of a webhook; honours If-Match', description: `400: ${URL_REFUSED}` })
  @ApiParam({ name: 'webhookId', format: 'uuid' })
  @ApiIfMatch()
  @ApiOkResponse({ type: WebhookDto, description: 'The ETag header carries the new version. No secret.' })
  @NotFound()
  @RESOLVER_DOWN()
  async update(
    @Scope() scope: AccountScope,
    @Param('webhookId', WebhookId) webhookId: string,
    @Body() body: UpdateWebhookDto,
    @Headers('if-match') ifMatch: string | undefined,
    @Req() request: FastifyRequest,
    @Res({ passthrough: true }) reply: FastifyReply,
  ): Promise<Webhook> {
    const updated = await this.services.call(
      Subjects.oms.webhooks.update,
      { ...scope, webhookId, patch: body as Partial<WebhookInput>, expectedVersion: parseIfMatch(ifMatch) },
      request,
    );
    return withETag(reply, updated);
  }

  @Delete(':webhookId')
  @HttpCode(204)
  @ApiOperation({ summary: 'Delete a webhook and its delivery log; honours If-Match' })
  @ApiParam({ name: 'webhookId', format: 'uuid' })
  @ApiIfMatch()
  @ApiNoContentResponse({ description: 'Deleted; deliveries still pending are dropped.' })
  @NotFound()
  async delete(
    @Scope() scope: AccountScope,
    @Param('webhookId', WebhookId) webhookId: string,
    @Headers('if-match') ifMatch: string | undefined,
    @Req() request: FastifyRequest,
  ): Promise<void> {
    await this.services.call(Subjects.oms.webhooks.delete, { ...scope, webhookId, expectedVersion: parseIfMatch(ifMatch) }, request);
  }

  @Post(':webhookId/rotate-secret')
  @HttpCode(200)
  @Header('Cache-Control', SECRET_CACHE_CONTROL)
  @ApiOperation({
    summary: 'Replace the signing secret; the old one keeps signing beside the new one for 24 hours',
    description: 'Deliveries carry two signatures until then. A second rotation within the 24 hours ends the overlap of the first.',
  })
  @ApiParam({ name: 'webhookId', format: 'uuid' })
  @ApiOkResponse({
    type: WebhookWithSecretDto,
    description: 'The webhook with its new `secret`, shown only here (`Cache-Control: no-store`); the ETag header carries its version.',
    headers: NO_STORE,
  })
  @NotFound()
  async rotateSecret(
    @Scope() scope: AccountScope,
    @Param('webhookId', WebhookId) webhookId: string,
    @Req() request: FastifyRequest,
    @Res({ passthrough: true }) reply: FastifyReply,
  ): Promise<WebhookWithSecret> {
    return withETag(reply, await this.services.call(Subjects.oms.webhooks.rotateSecret, { ...scope, webhookId }, request));
  }

  @Post(':webhookId/enable')
  @HttpCode(204)
  @ApiOperation({ summary: 'Make a Disabled webhook Active again (an Active one stays as it is)' })
  @ApiParam({ name: 'webhookId', format: 'uuid' })
  @ApiNoContentResponse({ description: 'Active, with disabledReason null; its failure streak starts afresh.' })
  @NotFound()
  async enable(@Scope() scope: AccountScope, @Param('webhookId', WebhookId) webhookId: string, @Req() request: FastifyRequest): Promise<void> {
    await this.services.call(Subjects.oms.webhooks.enable, { ...scope, webhookId }, request);
  }

  @Post(':webhookId/test')
  @HttpCode(202)
  @ApiOperation({
    summary: 'Send a webhook.test event to the webhook, whatever its eventTypes',
    description: 'The event is `{id, type: "webhook.test", occurredAt, accountId, data: {webhookId}}`; its delivery appears in the delivery log.',
  })
  @ApiParam({ name: 'webhookId', format: 'uuid' })
  @ApiAcceptedResponse({ type: DeliveryDto, description: 'The delivery, Pending and due now; Location names the delivery log that shows its outcome.' })
  @NotFound()
  async test(
    @Scope() scope: AccountScope,
    @Param('webhookId', WebhookId) webhookId: string,
    @Req() request: FastifyRequest,
    @Res({ passthrough: true }) reply: FastifyReply,
  ): Promise<Delivery> {
    const delivery = await this.services.call(Subjects.oms.webhooks.test, { ...scope, webhookId }, request);
    return followDelivery(reply, scope, webhookId, delivery);
  }

  @Get(':webhookId/deliveries')
  @ApiOperation({ summary: "The webhook's delivery log, oldest first, with cursor paging" })
  @ApiParam({ name: 'webhookId', format: 'uuid' })
  @ApiOkResponse({
    type: DeliveryPageDto,
    description: 'The deliveries under `items`, next to `metadata`. A page may hold fewer than `limit` deliveries (at least one) when their attempt logs are long: its deliveries stay under 512 KiB of JSON; follow `nextCursor`.',
  })
  @NotFound()
  deliveries(
    @Scope() scope: AccountScope,
    @Param('webhookId', WebhookId) webhookId: string,
    @Query() query: PageQuery,
    @Req() request: FastifyRequest,
  ): Promise<ItemPage<Delivery>> {
    return this.services.call(Subjects.oms.webhooks.deliveries, { ...scope, webhookId, page: query.pageRequest() }, request);
  }

  @Post(':webhookId/deliveries/:deliveryId/redeliver')
  @HttpCode(202)
  @ApiOperation({
    summary: 'Send a delivery again, whatever its status',
    description: 'It becomes Pending and due now, with a fresh retry schedule; its attempt log is kept and grows.',
  })
  @ApiParam({ name: 'webhookId', format: 'uuid' })
  @ApiParam({ name: 'deliveryId', format: 'uuid' })
  @ApiAcceptedResponse({ type: DeliveryDto, description: 'The delivery, Pending and due now; Location names the delivery log that shows its outcome.' })
  @ApiNotFound(`${NO_WEBHOOK} DeliveryNotExists: the webhook has no such delivery.`)
  async redeliver(
    @Scope() scope: AccountScope,
    @Param('webhookId', WebhookId) webhookId: string,
    @Param('deliveryId', NestedResourceIdPipe) deliveryId: string,
    @Req() request: FastifyRequest,
    @Res({ passthrough: true }) reply: FastifyReply,
  ): Promise<Delivery> {
    const delivery = await this.services.call(Subjects.oms.webhooks.redeliver, { ...scope, webhookId, deliveryId }, request);
    return followDelivery(reply, scope, webhookId, delivery);
  }
}

/** The headers of a 202 that queued a delivery: where its outcome shows (the delivery log), and when to look. */
function followDelivery(reply: FastifyReply, scope: AccountScope, webhookId: string, delivery: Delivery): Delivery {
  reply.header('Location', `/v1/accounts/${scope.accountId}/webhooks/${webhookId}/deliveries`);
  reply.header('Retry-After', '1');
  return delivery;
}
