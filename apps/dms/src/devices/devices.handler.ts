import { Controller } from '@nestjs/common';
import { Payload } from '@nestjs/microservices';
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
import { Handles, JsonReply } from '@tracking/messaging';
import { DevicesService } from './devices.service.js';

@Controller()
export class DevicesHandler {
  constructor(private readonly devices: DevicesService) {}

  @Handles(Subjects.dms.devices.list)
  list(@Payload() request: ListDevicesRequest): Promise<JsonReply<DevicePage>> {
    return this.devices.list(request);
  }

  @Handles(Subjects.dms.devices.create)
  create(@Payload() request: CreateDeviceRequest): Promise<Versioned<Device>> {
    return this.devices.create(request);
  }

  @Handles(Subjects.dms.devices.get)
  get(@Payload() request: DeviceRequest): Promise<Versioned<Device>> {
    return this.devices.get(request);
  }

  @Handles(Subjects.dms.devices.update)
  update(@Payload() request: UpdateDeviceRequest): Promise<Versioned<Device>> {
    return this.devices.update(request);
  }

  @Handles(Subjects.dms.devices.delete)
  async delete(@Payload() request: DeleteDeviceRequest): Promise<void> {
    await this.devices.delete(request);
  }

  @Handles(Subjects.dms.devices.retire)
  retire(@Payload() request: RetireDeviceRequest): Promise<RetireDeviceResult> {
    return this.devices.retire(request);
  }

  @Handles(Subjects.dms.devices.assign)
  async assign(@Payload() request: AssignDeviceRequest): Promise<void> {
    await this.devices.assign(request);
  }

  @Handles(Subjects.dms.devices.unassign)
  async unassign(@Payload() request: UnassignDeviceRequest): Promise<void> {
    await this.devices.unassign(request);
  }

  @Handles(Subjects.dms.devices.release)
  release(@Payload() request: ReleaseDevicesRequest): Promise<ReleaseDevicesResult> {
    return this.devices.release(request);
  }

  @Handles(Subjects.dms.devices.linked)
  linked(@Payload() request: LinkedDevicesRequest): Promise<LinkedDevices> {
    return this.devices.linked(request);
  }
}
