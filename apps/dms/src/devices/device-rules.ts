import { type Conditional, DeviceStatus, ErrorCode } from '@tracking/contracts';
import { DomainError } from '@tracking/core';
import { checkVersion } from '@tracking/database';
import type { DeviceEntity } from './device.entity.js';

/**
 * The rules that decide whether a device may change, shared by the single-device calls and the bulk
 * operations' chunks, so that a bulk entry is judged exactly as its single call would be.
 */

/** Where a link goes; `deviceId` is the device asked for, which may not exist. */
export interface LinkTarget {
  deviceId: string;
  shipmentId: string;
  setId: string;
}

/** The device when it exists, If-Match holds and it is not retired; else 404, 412 or 409 DeviceRetired. */
export function checkNotRetired(device: DeviceEntity | null, request: { deviceId: string } & Conditional): DeviceEntity {
  if (!device) throw deviceNotFound(request.deviceId);
  checkVersion('device', device, request.expectedVersion);
  if (device.status === DeviceStatus.Retired) {
    throw new DomainError(ErrorCode.DeviceRetired, 'The device is retired and can no longer be changed.');
  }
  return device;
}

/** As `checkNotRetired`, and not assigned either (409 DeviceAssigned): release it from its shipment first. */
export function checkAvailable(device: DeviceEntity | null, request: { deviceId: string } & Conditional, outcome: string): DeviceEntity {
  const open = checkNotRetired(device, request);
  if (open.status === DeviceStatus.Assigned) {
    throw new DomainError(ErrorCode.DeviceAssigned, `The device is assigned to a shipment and cannot be ${outcome}; release it first.`);
  }
  return open;
}

/**
 * The device, when it may be linked to the target: it exists, is not retired, and is not linked to
 * another shipment (within the same shipment it moves). `changes` is false when it is already there.
 */
export function checkLinkable(found: DeviceEntity | null, target: LinkTarget): { device: DeviceEntity; changes: boolean } {
  if (!found) throw deviceNotFound(target.deviceId);
  if (found.status === DeviceStatus.Retired) {
    throw new DomainError(ErrorCode.DeviceRetired, 'The device is retired and cannot be assigned.');
  }
  if (found.shipmentId !== null && found.shipmentId !== target.shipmentId) {
    throw new DomainError(ErrorCode.DeviceAlreadyAssigned, 'The device is assigned to another shipment; unassign it there first.', {
      deviceId: found.id,
      shipmentId: found.shipmentId,
    });
  }
  return { device: found, changes: found.shipmentId !== target.shipmentId || found.setId !== target.setId };
}

/** The refusal of a link to a shipment or set that was released (closed or deleted), if it was. */
export function checkNotReleased(released: 'shipment' | 'set' | null, setId: string): void {
  if (released === 'shipment') {
    throw new DomainError(ErrorCode.ShipmentClosed, 'The shipment is closed or deleted; devices can no longer be assigned to it.');
  }
  if (released === 'set') throw new DomainError(ErrorCode.SetNotExists, `Set ${setId} does not exist in this shipment.`);
}

export function deviceNotFound(id: string): DomainError {
  return new DomainError(ErrorCode.DeviceNotExists, `Device ${id} does not exist in this account.`);
}

/** The answer when a link (or another change the OMS waits for) could not be committed before the OMS's deadline. */
export function tooLate(message = 'The device could not be linked in time; retry the assignment.'): DomainError {
  return new DomainError(ErrorCode.GatewayTimeout, message);
}
