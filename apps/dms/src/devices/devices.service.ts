import { Inject, Injectable } from '@nestjs/common';
import {
  type AccountScope,
  type AssignDeviceRequest,
  type CreateDeviceRequest,
  type DeleteDeviceRequest,
  type Device,
  type DevicePage,
  type DeviceRequest,
  type DeviceLinkData,
  DeviceStatus,
  ErrorCode,
  EventType,
  type LinkedDevices,
  type LinkedDevicesRequest,
  type ListDevicesRequest,
  type ReleaseDevicesRequest,
  type ReleaseDevicesResult,
  type RetireDeviceRequest,
  type RetireDeviceResult,
  type UnassignDeviceRequest,
  type UpdateDeviceRequest,
  type Versioned,
} from '@tracking/contracts';
import { DomainError, parseDateTimeField, toDateTime } from '@tracking/core';
import { applyChanges, isLockTimeout, uniqueViolation } from '@tracking/database';
import { JsonReply } from '@tracking/messaging';
import { type EventRecord, recordEvents } from '@tracking/outbox';
import { validate as isUuid, v7 as uuidv7 } from 'uuid';
import type { EntityManager } from 'typeorm';
import type { DeviceEntity } from './device.entity.js';
import { writeReleaseMarkers } from '../readings/release-markers.js';
import { checkAvailable, checkLinkable, checkNotReleased, checkNotRetired, deviceNotFound, tooLate } from './device-rules.js';
import { DeviceRepository } from './device.repository.js';
import type { DmsConfig } from '../config.js';
import { DMS_CONFIG } from '../tokens.js';

@Injectable()
export class DevicesService {
  constructor(
    private readonly devices: DeviceRepository,
    @Inject(DMS_CONFIG) private readonly config: DmsConfig,
  ) {}

  /** The page as JSON text (see `findPageJson`): passed on, never parsed. */
  async list(request: ListDevicesRequest): Promise<JsonReply<DevicePage>> {
    return new JsonReply(await this.devices.findPageJson(request, request.page, request.filters));
  }

  async create(request: CreateDeviceRequest): Promise<Versioned<Device>> {
    const input = request.device;
    const now = new Date();
    const entity: Omit<DeviceEntity, 'seq'> = {
      id: uuidv7(),
      tenantId: request.tenantId,
      accountId: request.accountId,
      serialNumber: input.serialNumber,
      model: input.model,
      status: DeviceStatus.Available,
      shipmentId: null,
      setId: null,
      firmwareVersion: input.firmwareVersion ?? null,
      batteryLevel: input.batteryLevel ?? null,
      batteryLevelRecordedAt: input.batteryLevel == null ? null : now,
      lastSeenAt: parseDateTimeField('lastSeenAt', input.lastSeenAt),
      lastLocationLat: input.lastLocation?.lat ?? null,
      lastLocationLng: input.lastLocation?.lng ?? null,
      lastLocationAccuracyMeters: null,
      lastLocationRecordedAt: input.lastLocation == null ? null : now,
      metadata: input.metadata ?? {},
      version: 1,
      createdAt: now,
      updatedAt: now,
      retiredAt: null,
    };
    try {
      await this.devices.insert(entity, (manager) => recordDeviceEvent(manager, EventType.DeviceCreated, entity));
    } catch (error) {
      // The unique index decides between concurrent registrations: the second waits for the first and fails here.
      if (uniqueViolation(error) === 'devices_tenant_serial_number_key') {
        throw new DomainError(ErrorCode.DuplicateSerialNumber, 'A device of this tenant already has this serial number.');
      }
      throw error;
    }
    return { resource: toDevice(entity), version: entity.version };
  }

  async get(request: DeviceRequest): Promise<Versioned<Device>> {
    const device = await this.devices.findOne(request, request.deviceId);
    if (!device) throw deviceNotFound(request.deviceId);
    return { resource: toDevice(device), version: device.version };
  }

  /** Any device but a retired one takes changes; an assigned one too (its telemetry keeps coming). */
  update(request: UpdateDeviceRequest): Promise<Versioned<Device>> {
    const { patch } = request;
    return this.devices.withLockedDevice(request, request.deviceId, async (found, manager) => {
      const device = checkNotRetired(found, request);
      const changed: Partial<DeviceEntity> = {};
      if (patch.model !== undefined) changed.model = patch.model;
      if (patch.firmwareVersion !== undefined) changed.firmwareVersion = patch.firmwareVersion;
      // A client's value counts as known now (docs/readings.md, "Last known fields"): readings recorded
      // later replace it, older ones do not.
      const now = new Date();
      // An unchanged value keeps its time, so that resending a PATCH changes nothing.
      if (patch.batteryLevel !== undefined && patch.batteryLevel !== device.batteryLevel) {
        changed.batteryLevel = patch.batteryLevel;
        changed.batteryLevelRecordedAt = patch.batteryLevel === null ? null : now;
      }
      if (patch.lastSeenAt !== undefined) changed.lastSeenAt = parseDateTimeField('lastSeenAt', patch.lastSeenAt);
      const location = patch.lastLocation;
      const locationMoves =
        location !== undefined && ((location?.lat ?? null) !== device.lastLocationLat || (location?.lng ?? null) !== device.lastLocationLng);
      if (locationMoves) {
        changed.lastLocationLat = location?.lat ?? null;
        changed.lastLocationLng = location?.lng ?? null;
        changed.lastLocationAccuracyMeters = null;
        changed.lastLocationRecordedAt = location === null ? null : now;
      }
      // Metadata is replaced as a whole, like every other field; `{}` clears it.
      if (patch.metadata !== undefined) changed.metadata = patch.metadata;
      // A patch that changes nothing writes nothing and records no event.
      if (applyChanges(device, changed)) {
        await this.devices.save(manager, device);
        await recordDeviceEvent(manager, EventType.DeviceUpdated, device);
      }
      return { resource: toDevice(device), version: device.version };
    });
  }

  /** Deletes an Available device; its serial number is free again. A retired one stays, keeping its serial number. */
  delete(request: DeleteDeviceRequest): Promise<void> {
    return this.devices.withLockedDevice(request, request.deviceId, async (found, manager) => {
      const device = checkAvailable(found, request, 'deleted');
      await this.devices.delete(manager, device);
      await recordDeviceEvent(manager, EventType.DeviceDeleted, device);
    });
  }

  /** Retires an Available device for good; of concurrent retires one succeeds, the others find it Retired (409). */
  retire(request: RetireDeviceRequest): Promise<RetireDeviceResult> {
    return this.devices.withLockedDevice(request, request.deviceId, async (found, manager) => {
      const device = checkAvailable(found, request, 'retired');
      const now = new Date();
      Object.assign(device, { status: DeviceStatus.Retired, retiredAt: now, version: device.version + 1, updatedAt: now });
      await this.devices.save(manager, device);
      await recordDeviceEvent(manager, EventType.DeviceRetired, device);
      return { version: device.version };
    });
  }

  /**
   * Links the device to a set of a shipment; the OMS has checked the shipment and the set and holds the
   * shipment locked for share until we answer. The device row lock makes concurrent assignments of one
   * device take turns: the first links it, the others see its link and get 409 DeviceAlreadyAssigned.
   * Within the same shipment the device moves to `setId` (idempotent when it is already there).
   */
  async assign(request: AssignDeviceRequest): Promise<void> {
    if (!isUuid(request.deviceId)) throw deviceNotFound(request.deviceId);
    try {
      await this.devices.withLockedDevice(request, request.deviceId, (found, manager) => this.link(found, manager, request), {
        lockDeadline: request.deadline,
        before: (manager) => this.checkLinkTarget(manager, request),
      });
    } catch (error) {
      throw isLockTimeout(error) ? tooLate() : error;
    }
  }

  /**
   * The OMS checked the shipment and set, but it may have died or given up since: a released (closed
   * or deleted) shipment or set is refused here too, under the shipment's link lock.
   */
  private async checkLinkTarget(manager: EntityManager, request: AssignDeviceRequest): Promise<void> {
    checkNotReleased(await this.devices.lockLinkTarget(manager, request.shipmentId, request.setId, request.checkedAt), request.setId);
  }

  private async link(found: DeviceEntity | null, manager: EntityManager, request: AssignDeviceRequest): Promise<void> {
    const { device, changes } = checkLinkable(found, request);
    if (!changes) return;
    const now = new Date();
    Object.assign(device, {
      status: DeviceStatus.Assigned,
      shipmentId: request.shipmentId,
      setId: request.setId,
      version: device.version + 1,
      updatedAt: now,
    });
    await this.devices.save(manager, device);
    // Moving to another set of the same shipment is one `device.assigned` with the new set (docs/events.md).
    const { shipmentId, setId } = request;
    await recordEvents(manager, [linkEvent(EventType.DeviceAssigned, device, { deviceId: device.id, shipmentId, setId })]);
    // A link committed after the deadline could land after the OMS has let go of the shipment and the
    // shipment has closed without releasing it: rolling back keeps "no device linked to a closed shipment".
    if (Date.now() > request.deadline) throw tooLate();
  }

  /**
   * Unlinks the device from exactly this set of this shipment; AssignmentNotExists otherwise, unknown
   * devices included. Like a link, it commits only before the OMS's deadline (504 after it), so a client
   * told 504 has not lost its device's link behind its back.
   */
  async unassign(request: UnassignDeviceRequest): Promise<void> {
    if (!isUuid(request.deviceId)) throw assignmentNotFound(request);
    const unlink = async (found: DeviceEntity | null, manager: EntityManager): Promise<void> => {
      const linkedHere = found !== null && found.shipmentId === request.shipmentId && found.setId === request.setId;
      if (!linkedHere) throw assignmentNotFound(request);
      const now = new Date();
      Object.assign(found, { status: DeviceStatus.Available, shipmentId: null, setId: null, version: found.version + 1, updatedAt: now });
      await this.devices.save(manager, found);
      const { shipmentId, setId } = request;
      await recordEvents(manager, [linkEvent(EventType.DeviceUnassigned, found, { deviceId: found.id, shipmentId, setId })]);
      await writeReleaseMarkers(manager, request, [found.id], this.config.READINGS_PARTITIONS);
      if (Date.now() > request.deadline) throw tooLate(UNLINK_TOO_LATE);
    };
    try {
      await this.devices.withLockedDevice(request, request.deviceId, unlink, { lockDeadline: request.deadline });
    } catch (error) {
      throw isLockTimeout(error) ? tooLate(UNLINK_TOO_LATE) : error;
    }
  }

  /**
   * Unlinks every device of a shipment that closes or goes away, or of one of its sets that is deleted;
   * before the OMS's deadline or not at all (504), since after it the OMS has rolled its close back.
   */
  async release(request: ReleaseDevicesRequest): Promise<ReleaseDevicesResult> {
    try {
      const tooLateToRelease = () => tooLate(RELEASE_TOO_LATE);
      // One `device.unassigned` per device released, with the set it was in, in the release's transaction.
      // A set's release writes each device's release marker for the evaluation (docs/geofence-evaluation.md,
      // "Releases"); a shipment's (close, delete) does not: its evaluation ends with it, at the close.
      const recordUnlinked = async (manager: EntityManager, unlinked: { id: string; setId: string }[]) => {
        await recordEvents(
          manager,
          unlinked.map((link) => linkEvent(EventType.DeviceUnassigned, request, { deviceId: link.id, shipmentId: request.shipmentId, setId: link.setId })),
        );
        if (request.setId != null) await writeReleaseMarkers(manager, request, unlinked.map((link) => link.id), this.config.READINGS_PARTITIONS);
      };
      const { shipmentId, setId, deadline } = request;
      const released = await this.devices.release(request, shipmentId, setId, deadline, tooLateToRelease, recordUnlinked);
      return { released };
    } catch (error) {
      throw isLockTimeout(error) ? tooLate(RELEASE_TOO_LATE) : error;
    }
  }

  /** Every requested set with the sorted ids of its devices. */
  async linked(request: LinkedDevicesRequest): Promise<LinkedDevices> {
    const setIds = request.setIds.filter((id) => isUuid(id));
    const result: LinkedDevices = Object.fromEntries(request.setIds.map((id) => [id, []]));
    for (const { id, setId } of await this.devices.findLinked(request, setIds)) result[setId]?.push(id);
    return result;
  }
}

const UNLINK_TOO_LATE = 'The device could not be unassigned in time; retry.';
const RELEASE_TOO_LATE = 'The devices could not be released in time; retry.';

function assignmentNotFound(request: UnassignDeviceRequest): DomainError {
  return new DomainError(ErrorCode.AssignmentNotExists, `Device ${request.deviceId} is not assigned to set ${request.setId}.`);
}

/**
 * Records the device's event in the transaction of `manager` (the transactional outbox, docs/events.md):
 * `data` is the device as GET shows it after the change (for `device.deleted`, its last state).
 */
function recordDeviceEvent(manager: EntityManager, type: EventType, device: Omit<DeviceEntity, 'seq'>): Promise<unknown> {
  return recordEvents(manager, [deviceEvent(type, device)]);
}

/** A device's event with the device as `data`; bulk chunks record many in one statement. */
export function deviceEvent(type: EventType, device: Omit<DeviceEntity, 'seq'>): EventRecord<Device> {
  return { tenantId: device.tenantId, accountId: device.accountId, type, data: toDevice(device) };
}

/** `device.assigned` or `device.unassigned` of a device of the account to or from a set. */
export function linkEvent(
  type: EventType.DeviceAssigned | EventType.DeviceUnassigned,
  scope: AccountScope,
  data: DeviceLinkData,
): EventRecord<DeviceLinkData> {
  return { tenantId: scope.tenantId, accountId: scope.accountId, type, data };
}

/**
 * A device as the API shows it. The trigger function `devices_api_json()` (migration StoreDeviceJson)
 * writes the same JSON in PL/pgSQL for the device list: a change here needs a migration there.
 */
export function toDevice(entity: Omit<DeviceEntity, 'seq'>): Device {
  const { lastLocationLat: lat, lastLocationLng: lng } = entity;
  return {
    id: entity.id,
    serialNumber: entity.serialNumber,
    model: entity.model,
    status: entity.status,
    shipmentId: entity.shipmentId,
    setId: entity.setId,
    firmwareVersion: entity.firmwareVersion,
    batteryLevel: entity.batteryLevel,
    lastSeenAt: toDateTime(entity.lastSeenAt),
    lastLocation:
      lat === null || lng === null
        ? null
        : { lat, lng, accuracyMeters: entity.lastLocationAccuracyMeters, recordedAt: toDateTime(entity.lastLocationRecordedAt) },
    metadata: entity.metadata,
    createdAt: entity.createdAt.toISOString(),
    updatedAt: entity.updatedAt.toISOString(),
    retiredAt: toDateTime(entity.retiredAt),
  };
}
