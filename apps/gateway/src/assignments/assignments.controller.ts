import { Delete, Get, HttpCode, Param, Put, Query, Req } from '@nestjs/common';
import { ApiConflictResponse, ApiNoContentResponse, ApiOkResponse, ApiOperation, ApiParam, ApiTags } from '@nestjs/swagger';
import {
  type DevicePage,
  type SetRequest,
  type ShipmentScope,
  Subjects,
} from '@tracking/contracts';
import type { FastifyRequest } from 'fastify';
import { AccountController } from '../accounts/account-route.decorator.js';
import { DevicePageDto } from '../devices/dto/device.dto.js';
import { ApiAccountErrors, ApiNotFound } from '../http/api-responses.js';
import { ErrorEnvelopeDto } from '../http/common.dto.js';
import { NestedResourceIdPipe } from '../http/resource-id.pipe.js';
import { PageQuery } from '../paging/page-query.js';
import { ServiceClient } from '../rpc/rpc.module.js';
import {
  ApiSetParam,
  ApiShipmentParam,
  SET_NOT_FOUND,
  SetPath,
  SHIPMENT_NOT_FOUND,
  ShipmentPath,
} from '../sets/shipment-contents.decorator.js';

/**
 * Device assignment: the link between a device (DMS) and a set of a shipment (OMS). The gateway asks the
 * OMS, which checks the shipment and the set under a shipment lock and asks the DMS to change the link
 * on the device row, in one synchronous call; the reads come from the DMS.
 *
 * A `deviceId` that is not a UUID is not refused here: the shipment's and the set's 404s come first (path
 * order), then the DMS answers DeviceNotExists (assign) or AssignmentNotExists (unassign).
 */
const deviceIdPipe = new NestedResourceIdPipe();
const ApiDeviceParam = () => ApiParam({ name: 'deviceId', format: 'uuid', description: 'A device of the account.' });

@ApiTags('Device assignment')
@AccountController('shipments/:shipmentId')
@ApiAccountErrors()
@ApiShipmentParam()
export class AssignmentsController {
  constructor(private readonly services: ServiceClient) {}

  @Put('sets/:setId/devices/:deviceId')
  @HttpCode(204)
  @ApiOperation({
    summary: 'Assign a device to a set of an ongoing shipment; idempotent, and moves it between sets of the same shipment',
  })
  @ApiSetParam()
  @ApiDeviceParam()
  @ApiNoContentResponse({
    description: 'The device is Assigned to the set (it was already, or it moved there from another set of the shipment).',
  })
  @ApiNotFound(`${SET_NOT_FOUND} Then DeviceNotExists: unknown id, not a UUID, or another account's device.`)
  @ApiConflictResponse({
    type: ErrorEnvelopeDto,
    description:
      'DeviceAlreadyAssigned: the device is assigned to another shipment (details: deviceId, shipmentId of that shipment); ' +
      'DeviceRetired: the device is retired; ShipmentClosed: the shipment is Completed or Cancelled.',
  })
  async assign(
    @SetPath() set: SetRequest,
    @Param('deviceId', deviceIdPipe) deviceId: string,
    @Req() request: FastifyRequest,
  ): Promise<void> {
    await this.services.call(Subjects.oms.assignments.assign, { ...set, deviceId }, request);
  }

  @Delete('sets/:setId/devices/:deviceId')
  @HttpCode(204)
  @ApiOperation({ summary: 'Unassign a device from a set of an ongoing shipment; it becomes Available' })
  @ApiSetParam()
  @ApiDeviceParam()
  @ApiNoContentResponse({ description: 'The device is Available.' })
  @ApiNotFound(`${SET_NOT_FOUND} Then AssignmentNotExists: the device (known or not) is not assigned to this set.`)
  @ApiConflictResponse({ type: ErrorEnvelopeDto, description: 'ShipmentClosed: the shipment is Completed or Cancelled.' })
  async unassign(
    @SetPath() set: SetRequest,
    @Param('deviceId', deviceIdPipe) deviceId: string,
    @Req() request: FastifyRequest,
  ): Promise<void> {
    await this.services.call(Subjects.oms.assignments.unassign, { ...set, deviceId }, request);
  }

  @Get('devices')
  @ApiOperation({ summary: "List the devices assigned to a shipment's sets, oldest first, with cursor paging" })
  @ApiOkResponse({ type: DevicePageDto, description: 'The devices under `devices`, next to `metadata`.' })
  @ApiNotFound(SHIPMENT_NOT_FOUND)
  async list(
    @ShipmentPath() shipment: ShipmentScope,
    @Query() query: PageQuery,
    @Req() request: FastifyRequest,
  ): Promise<DevicePage> {
    const page = query.pageRequest();
    // The shipment's 404 comes from the OMS; the DMS knows devices only.
    await this.services.call(Subjects.oms.shipments.get, shipment, request);
    const { tenantId, accountId, shipmentId } = shipment;
    const target = { tenantId, accountId, page, filters: { shipmentId } };
    return this.services.call(Subjects.dms.devices.list, target, request);
  }
}
