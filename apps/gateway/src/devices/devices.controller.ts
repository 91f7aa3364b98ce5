import { applyDecorators, Body, Delete, Get, HttpCode, Param, Patch, Post, Query, Req, Res } from '@nestjs/common';
import {
  ApiBadRequestResponse,
  ApiConflictResponse,
  ApiCreatedResponse,
  ApiNoContentResponse,
  ApiOkResponse,
  ApiOperation,
  ApiParam,
  ApiTags,
} from '@nestjs/swagger';
import {
  type AccountScope,
  type Device,
  type DevicePage,
  ErrorCode,
  Subjects,
} from '@tracking/contracts';
import type { JsonBytes } from '@tracking/messaging';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { AccountController } from '../accounts/account-route.decorator.js';
import { Scope } from '../accounts/account-scope.decorator.js';
import { resourceTarget, type ResourceTarget } from '../accounts/resource-target.decorator.js';
import { ApiAccountErrors, ApiIfMatch, ApiNotFound } from '../http/api-responses.js';
import { ErrorEnvelopeDto } from '../http/common.dto.js';
import { etag, withETag } from '../http/etag.js';
import { jsonBody } from '../http/json-body.js';
import { ResourceIdPipe } from '../http/resource-id.pipe.js';
import { ServiceClient } from '../rpc/rpc.module.js';
import { ListDevicesQuery } from './dto/device-query.js';
import { CreateDeviceDto, DeviceDto, DevicePageDto, UpdateDeviceDto } from './dto/device.dto.js';

const DeviceIdPipe = new ResourceIdPipe(ErrorCode.DeviceNotExists, 'Device');

/** The device a write acts on: account scope, `deviceId` and `If-Match`. */
const TargetDevice = resourceTarget('deviceId', DeviceIdPipe);
type DeviceTarget = ResourceTarget<'deviceId'>;

/** The 404 of every route on one device, with its path parameter. */
const OneDevice = () =>
  applyDecorators(
    ApiParam({ name: 'deviceId', format: 'uuid' }),
    ApiNotFound("DeviceNotExists: unknown id, not a UUID, or another account's device."),
  );

const INVALID_BODY =
  'InvalidParameter: a field breaks its rule (Required, InvalidFormat, OutOfRange, UnknownField, ReadOnly; ' +
  'serialNumber with white space at either end is InvalidFormat, and on PATCH ReadOnly); MalformedRequest: the ' +
  'body is not a JSON object; accountId: AccountNotFound.';

const RETIRED = 'DeviceRetired: the device is retired, which is final.';
const ASSIGNED = 'DeviceAssigned: the device is assigned to a shipment; release it first.';

@ApiTags('Devices')
@AccountController('devices')
@ApiAccountErrors()
export class DevicesController {
  constructor(private readonly services: ServiceClient) {}

  @Get()
  @ApiOperation({ summary: 'List devices, oldest first, with cursor paging; filters combine with AND' })
  @ApiOkResponse({ type: DevicePageDto, description: 'The devices under `devices`, next to `metadata`.' })
  @ApiBadRequestResponse({
    type: ErrorEnvelopeDto,
    description:
      'InvalidParameter: limit or includeTotal (InvalidFormat, OutOfRange), cursor (InvalidCursor, also for a cursor of ' +
      'other filters), status or shipmentId (InvalidFormat), serialNumber (OutOfRange), any other parameter ' +
      '(UnknownField); accountId: AccountNotFound.',
  })
  async list(
    @Scope() scope: AccountScope,
    @Query() query: ListDevicesQuery,
    @Req() request: FastifyRequest,
    @Res({ passthrough: true }) reply: FastifyReply,
  ): Promise<JsonBytes<DevicePage>> {
    const page = query.pageRequest();
    const filters = query.filters();
    const json = await this.services.callJson(
      Subjects.dms.devices.list,
      { ...scope, page, filters },
      request,
    );
    return jsonBody(reply, json);
  }

  @Post()
  @HttpCode(201)
  @ApiOperation({ summary: 'Register a device (status Available)' })
  @ApiCreatedResponse({ type: DeviceDto, description: 'Location and ETag headers name the new device.' })
  @ApiBadRequestResponse({ type: ErrorEnvelopeDto, description: INVALID_BODY })
  @ApiConflictResponse({
    type: ErrorEnvelopeDto,
    description: 'DuplicateSerialNumber: a device of the tenant (in any of its accounts) has this serial number, retired ones included.',
  })
  async create(
    @Scope() scope: AccountScope,
    @Body() body: CreateDeviceDto,
    @Req() request: FastifyRequest,
    @Res({ passthrough: true }) reply: FastifyReply,
  ): Promise<Device> {
    const created = await this.services.call(
      Subjects.dms.devices.create,
      { ...scope, device: body },
      request,
    );
    reply.header('Location', `/v1/accounts/${scope.accountId}/devices/${created.resource.id}`);
    return withETag(reply, created);
  }

  @Get(':deviceId')
  @ApiOperation({ summary: 'Get one device' })
  @ApiOkResponse({ type: DeviceDto, description: 'The ETag header carries its version.' })
  @OneDevice()
  async get(
    @Scope() scope: AccountScope,
    @Param('deviceId', DeviceIdPipe) deviceId: string,
    @Req() request: FastifyRequest,
    @Res({ passthrough: true }) reply: FastifyReply,
  ): Promise<Device> {
    const found = await this.services.call(Subjects.dms.devices.get, { ...scope, deviceId }, request);
    return withETag(reply, found);
  }

  @Patch(':deviceId')
  @ApiOperation({ summary: 'Change some fields of a device; honours If-Match' })
  @ApiIfMatch()
  @ApiOkResponse({ type: DeviceDto, description: 'The ETag header carries the new version; a patch that changes nothing keeps it.' })
  @ApiBadRequestResponse({ type: ErrorEnvelopeDto, description: INVALID_BODY })
  @OneDevice()
  @ApiConflictResponse({ type: ErrorEnvelopeDto, description: RETIRED })
  async update(
    @TargetDevice() target: DeviceTarget,
    @Body() body: UpdateDeviceDto,
    @Req() request: FastifyRequest,
    @Res({ passthrough: true }) reply: FastifyReply,
  ): Promise<Device> {
    const updated = await this.services.call(
      Subjects.dms.devices.update,
      { ...target, patch: body },
      request,
    );
    return withETag(reply, updated);
  }

  @Delete(':deviceId')
  @HttpCode(204)
  @ApiOperation({ summary: 'Delete an Available device, freeing its serial number; honours If-Match' })
  @ApiIfMatch()
  @ApiNoContentResponse({ description: 'Deleted.' })
  @OneDevice()
  @ApiConflictResponse({ type: ErrorEnvelopeDto, description: `${ASSIGNED} ${RETIRED} A retired device is kept, and so is its serial number.` })
  async delete(@TargetDevice() target: DeviceTarget, @Req() request: FastifyRequest): Promise<void> {
    await this.services.call(Subjects.dms.devices.delete, target, request);
  }

  @Post(':deviceId/retire')
  @HttpCode(204)
  @ApiOperation({
    summary: 'Retire an Available device for good: it becomes Retired and retiredAt is set',
    description: 'Answers 204 without a body; the ETag header carries the new version. If-Match is optional.',
  })
  @ApiIfMatch()
  @ApiNoContentResponse({ description: 'Retired; the ETag header carries the new version.' })
  @OneDevice()
  @ApiConflictResponse({ type: ErrorEnvelopeDto, description: `${ASSIGNED} ${RETIRED}` })
  async retire(
    @TargetDevice() target: DeviceTarget,
    @Req() request: FastifyRequest,
    @Res({ passthrough: true }) reply: FastifyReply,
  ): Promise<void> {
    const { version } = await this.services.call(
      Subjects.dms.devices.retire,
      target,
      request,
    );
    reply.header('ETag', etag(version));
  }
}
