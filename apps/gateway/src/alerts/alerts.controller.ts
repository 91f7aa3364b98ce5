import { Get, HttpCode, Param, Post, Query, Req } from '@nestjs/common';
import { ApiBadRequestResponse, ApiNoContentResponse, ApiOkResponse, ApiOperation, ApiParam, ApiTags } from '@nestjs/swagger';
import { type AccountScope, type Alert, ErrorCode, type ItemPage, Subjects, type Visit } from '@tracking/contracts';
import type { FastifyRequest } from 'fastify';
import { AccountController } from '../accounts/account-route.decorator.js';
import { Scope } from '../accounts/account-scope.decorator.js';
import { ApiAccountErrors, ApiNotFound } from '../http/api-responses.js';
import { ErrorEnvelopeDto } from '../http/common.dto.js';
import { ResourceIdPipe } from '../http/resource-id.pipe.js';
import { PageQuery } from '../paging/page-query.js';
import { ServiceClient } from '../rpc/rpc.module.js';
import { ShipmentIdPipe } from '../shipments/shipment-target.decorator.js';
import { AlertDto, AlertPageDto, VisitPageDto } from './alert.dto.js';
import { ListAlertsQuery } from './alert-query.js';

const AlertId = new ResourceIdPipe(ErrorCode.AlertNotExists, 'Alert');

const NotFound = () => ApiNotFound("AlertNotExists: unknown id, not a UUID, or another account's alert.");

/**
 * Alerts raised by the evaluation of readings against a shipment's conditions, and the visits of a
 * shipment to points of interest. Clients read both and acknowledge alerts; only the evaluation writes them.
 */
@ApiTags('Alerts and visits')
@AccountController('')
@ApiAccountErrors()
export class AlertsController {
  constructor(private readonly services: ServiceClient) {}

  @Get('alerts')
  @ApiOperation({ summary: "List the account's alerts, oldest first, with cursor paging; filters combine with AND" })
  @ApiOkResponse({ type: AlertPageDto, description: 'The alerts under `items`, next to `metadata`.' })
  @ApiBadRequestResponse({
    type: ErrorEnvelopeDto,
    description:
      'InvalidParameter: limit or includeTotal (InvalidFormat, OutOfRange), cursor (InvalidCursor, also for a cursor of other ' +
      'filters), status, kind, shipmentId or deviceId (InvalidFormat), any other parameter (UnknownField); accountId: AccountNotFound.',
  })
  list(@Scope() scope: AccountScope, @Query() query: ListAlertsQuery, @Req() request: FastifyRequest): Promise<ItemPage<Alert>> {
    const page = query.pageRequest();
    const filters = query.filters();
    return this.services.call(Subjects.oms.alerts.list, { ...scope, page, filters }, request);
  }

  @Get('alerts/:alertId')
  @ApiOperation({ summary: 'Get one alert' })
  @ApiParam({ name: 'alertId', format: 'uuid' })
  @ApiOkResponse({ type: AlertDto, description: 'The alert.' })
  @NotFound()
  get(@Scope() scope: AccountScope, @Param('alertId', AlertId) alertId: string, @Req() request: FastifyRequest): Promise<Alert> {
    return this.services.call(Subjects.oms.alerts.get, { ...scope, alertId }, request);
  }

  @Post('alerts/:alertId/acknowledge')
  @HttpCode(204)
  @ApiOperation({
    summary: 'Acknowledge an alert (open or closed)',
    description:
      'The first call sets acknowledgedAt and emits alert.acknowledged; a later call answers 204 too and changes nothing ' +
      '(the first acknowledgedAt stays, no second event). Needs write permission.',
  })
  @ApiParam({ name: 'alertId', format: 'uuid' })
  @ApiNoContentResponse({ description: 'Acknowledged (now or before).' })
  @NotFound()
  async acknowledge(@Scope() scope: AccountScope, @Param('alertId', AlertId) alertId: string, @Req() request: FastifyRequest): Promise<void> {
    await this.services.call(Subjects.oms.alerts.acknowledge, { ...scope, alertId }, request);
  }

  @Get('shipments/:shipmentId/visits')
  @ApiOperation({
    summary: "List a shipment's visits to points of interest, in the order they were found, with cursor paging",
    description:
      'arrivedAt and departedAt are event times (the readings\' recordedAt). A visit found late, from late readings, ' +
      'comes after those found before it, with its true, past times.',
  })
  @ApiParam({ name: 'shipmentId', format: 'uuid' })
  @ApiOkResponse({ type: VisitPageDto, description: 'The visits under `items`, next to `metadata`.' })
  @ApiNotFound("ShipmentNotExists: unknown id, not a UUID, or another account's shipment.")
  listVisits(
    @Scope() scope: AccountScope,
    @Param('shipmentId', ShipmentIdPipe) shipmentId: string,
    @Query() query: PageQuery,
    @Req() request: FastifyRequest,
  ): Promise<ItemPage<Visit>> {
    return this.services.call(Subjects.oms.visits.list, { ...scope, shipmentId, page: query.pageRequest() }, request);
  }
}
