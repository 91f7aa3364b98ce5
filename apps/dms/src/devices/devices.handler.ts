import { Controller } from '@nestjs/common';
import { MessagePattern, Payload } from '@nestjs/microservices';
import {
  type AssignDeviceRequest,
  type CreateDeviceRequest,
  type DeleteDeviceRequest,
  type Device,
  type DevicePage,
  type DeviceRequest,
  type LinkedDevices,
  type LinkedDevicesRequest,
  type ListDevicesRequest,
  type ReleaseDevicesRequest,
  type ReleaseDevicesResult,
  type RetireDeviceRequest,
  type RetireDeviceResult,
  Subjects,
  type UnassignDeviceRequest,
  type UpdateDeviceRequest,
  type Versioned,
} from '@tracking/contracts';
import { JsonReply } from '@tracking/messaging';
import { DevicesService } from './devices.service.js';

@Controller()
export class DevicesHandler {
  constructor(private readonly devices: DevicesService) {}

  @MessagePattern(Subjects.dms.devices.list)
  list(@Payload() request: ListDevicesRequest): Promise<JsonReply<DevicePage>> {
    return this.devices.list(request);
  }

  @MessagePattern(Subjects.dms.devices.create)
  create(@Payload() request: CreateDeviceRequest): Promise<Versioned<Device>> {
    return this.devices.create(request);
  }

  @MessagePattern(Subjects.dms.devices.get)
  get(@Payload() request: DeviceRequest): Promise<Versioned<Device>> {
    return this.devices.get(request);
  }

  @MessagePattern(Subjects.dms.devices.update)
  update(@Payload() request: UpdateDeviceRequest): Promise<Versioned<Device>> {
    return this.devices.update(request);
  }

  @MessagePattern(Subjects.dms.devices.delete)
  async delete(@Payload() request: DeleteDeviceRequest): Promise<null> {
    await this.devices.delete(request);
    // Not `undefined`: Nest's packet would then carry no `response`, which the gateway treats as 502.
    return null;
  }

  @MessagePattern(Subjects.dms.devices.retire)
  retire(@Payload() request: RetireDeviceRequest): Promise<RetireDeviceResult> {
    return this.devices.retire(request);
  }

  @MessagePattern(Subjects.dms.devices.assign)
  async assign(@Payload() request: AssignDeviceRequest): Promise<null> {
    await this.devices.assign(request);
    return null;
  }

  @MessagePattern(Subjects.dms.devices.unassign)
  async unassign(@Payload() request: UnassignDeviceRequest): Promise<null> {
    await this.devices.unassign(request);
    return null;
  }

  @MessagePattern(Subjects.dms.devices.release)
  release(@Payload() request: ReleaseDevicesRequest): Promise<ReleaseDevicesResult> {
    return this.devices.release(request);
  }

  @MessagePattern(Subjects.dms.devices.linked)
  linked(@Payload() request: LinkedDevicesRequest): Promise<LinkedDevices> {
    return this.devices.linked(request);
  }
}
