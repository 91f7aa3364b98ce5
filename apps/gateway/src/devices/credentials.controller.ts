import { Body, Delete, Get, Header, HttpCode, Param, Post, Query, Req, Res } from '@nestjs/common';
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
import { type AccountScope, type DeviceCredentialPage, type DeviceCredentialWithSecret, ErrorCode, Subjects } from '@tracking/contracts';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { AccountController } from '../accounts/account-route.decorator.js';
import { Scope } from '../accounts/account-scope.decorator.js';
import { ApiAccountErrors, ApiNotFound } from '../http/api-responses.js';
import { ErrorEnvelopeDto } from '../http/common.dto.js';
import { NestedResourceIdPipe, ResourceIdPipe } from '../http/resource-id.pipe.js';
import { PageQuery } from '../paging/page-query.js';
import { ServiceClient } from '../rpc/rpc.module.js';
import { SECRET_CACHE_CONTROL } from '../webhooks/webhook-views.js';
import { CREDENTIAL_LIMIT, CreateCredentialDto, CredentialPageDto, CredentialWithSecretDto } from './dto/credential.dto.js';

const DeviceIdPipe = new ResourceIdPipe(ErrorCode.DeviceNotExists, 'Device');
const NO_DEVICE = "DeviceNotExists: unknown id, not a UUID, or another account's device.";
const NO_STORE = {
  'Cache-Control': { description: '`no-store`: the answer carries the secret; no cache may keep it.', schema: { type: 'string', example: SECRET_CACHE_CONTROL } },
};

/** The credentials trackers use to reach the device gateway (docs/device-gateway.md, "Credentials"). */
@ApiTags('Devices')
@AccountController('devices/:deviceId/credentials')
@ApiAccountErrors()
@ApiParam({ name: 'deviceId', format: 'uuid' })
export class CredentialsController {
  constructor(private readonly services: ServiceClient) {}

  @Post()
  @HttpCode(201)
  @Header('Cache-Control', SECRET_CACHE_CONTROL)
  @ApiOperation({
    summary: "Create a credential for the device gateway; the answer carries the secret (Mqtt, Http), shown this once",
    description:
      'At most 5 per device. The secret is stored only as a SHA-256 digest. A credential stops working at once when it is ' +
      'deleted or its device is retired or deleted; open connections that used it are closed within 60 seconds.',
  })
  @ApiCreatedResponse({ type: CredentialWithSecretDto, description: 'The credential; `secret` only here.', headers: NO_STORE })
  @ApiBadRequestResponse({
    type: ErrorEnvelopeDto,
    description:
      'InvalidParameter: protocol (Required, InvalidFormat), identifier (Required for Teltonika; InvalidFormat: not 15 digits ' +
      'for Teltonika, or a character outside A-Z a-z 0-9 . _ -; OutOfRange: not 1 to 64 characters), any other field ' +
      '(UnknownField); MalformedRequest; accountId: AccountNotFound.',
  })
  @ApiNotFound(NO_DEVICE)
  @ApiConflictResponse({
    type: ErrorEnvelopeDto,
    description: `DuplicateIdentifier: another device holds this identifier for this protocol (or this IMEI has a credential). ${CREDENTIAL_LIMIT} DeviceRetired.`,
  })
  async create(
    @Scope() scope: AccountScope,
    @Param('deviceId', DeviceIdPipe) deviceId: string,
    @Body() body: CreateCredentialDto,
    @Req() request: FastifyRequest,
    @Res({ passthrough: true }) reply: FastifyReply,
  ): Promise<DeviceCredentialWithSecret> {
    const created = await this.services.call(Subjects.dms.credentials.create, { ...scope, deviceId, credential: body }, request);
    // Where it is deleted (a credential has no GET of its own; its secret is never shown again).
    reply.header('Location', `/v1/accounts/${scope.accountId}/devices/${deviceId}/credentials/${created.id}`);
    return created;
  }

  @Get()
  @ApiOperation({ summary: "List the device's credentials, oldest first, with cursor paging; never their secrets" })
  @ApiOkResponse({ type: CredentialPageDto, description: 'The credentials under `credentials`, next to `metadata`.' })
  @ApiNotFound(NO_DEVICE)
  list(
    @Scope() scope: AccountScope,
    @Param('deviceId', DeviceIdPipe) deviceId: string,
    @Query() query: PageQuery,
    @Req() request: FastifyRequest,
  ): Promise<DeviceCredentialPage> {
    return this.services.call(Subjects.dms.credentials.list, { ...scope, deviceId, page: query.pageRequest() }, request);
  }

  @Delete(':credentialId')
  @HttpCode(204)
  @ApiOperation({ summary: 'Delete a credential: refused at once on new connections and requests, open connections closed within 60 s' })
  @ApiParam({ name: 'credentialId', format: 'uuid' })
  @ApiNoContentResponse({ description: 'Deleted.' })
  @ApiNotFound(`${NO_DEVICE} CredentialNotExists: no such credential of this device.`)
  async delete(
    @Scope() scope: AccountScope,
    @Param('deviceId', DeviceIdPipe) deviceId: string,
    @Param('credentialId', NestedResourceIdPipe) credentialId: string,
    @Req() request: FastifyRequest,
  ): Promise<void> {
    await this.services.call(Subjects.dms.credentials.delete, { ...scope, deviceId, credentialId }, request);
  }
}
