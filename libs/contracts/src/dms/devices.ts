import type { Conditional, Metadata } from '../oms/common.js';
import type { EntryError } from '../oms/operations.js';
import type { GeoPoint } from '../oms/points-of-interest.js';
import type { AccountScope, PageMetadata, PageRequest } from '../paging.js';

/** `Assigned` exactly while the device is linked to a shipment; `Retired` is final. */
export enum DeviceStatus {
  Available = 'Available',
  Assigned = 'Assigned',
  Retired = 'Retired',
}

/** A device as the API shows it (docs/api.md, "Devices"). Timestamps are RFC 3339 UTC strings. */
export interface Device {
  id: string;
  serialNumber: string;
  model: string;
  status: DeviceStatus;
  /** Set only by assignment to a set of a shipment. */
  shipmentId: string | null;
  setId: string | null;
  firmwareVersion: string | null;
  batteryLevel: number | null;
  lastSeenAt: string | null;
  lastLocation: LastLocation | null;
  metadata: Metadata;
  createdAt: string;
  updatedAt: string;
  retiredAt: string | null;
}

/** Where a device last was: from its newest reading with a location (by `recordedAt`), or as a client set it. */
export interface LastLocation extends GeoPoint {
  accuracyMeters: number | null;
  /** When the position was recorded; a client-set position counts as recorded when it was set. */
  recordedAt: string | null;
}

/** Every DMS collection answers `{devices, metadata}` (spec: collection key `devices`). */
export interface DevicePage {
  devices: Device[];
  metadata: PageMetadata;
}

/** The fields a client sets; `lastSeenAt` is an RFC 3339 date-time with a time zone, as the client sent it. */
export interface DeviceInput {
  serialNumber: string;
  model: string;
  firmwareVersion?: string | null;
  batteryLevel?: number | null;
  lastSeenAt?: string | null;
  lastLocation?: GeoPoint | null;
  metadata?: Metadata;
}

/** Omitted fields stay as they are; `null` clears a nullable one. The serial number cannot change. */
export type DevicePatch = Partial<Omit<DeviceInput, 'serialNumber'>>;

/** Filters of `GET /devices`; every given filter must match. */
export interface DeviceFilters {
  /** Any of these statuses. */
  status?: DeviceStatus[];
  serialNumber?: string;
  /** Devices assigned to this shipment (lower-case UUID). */
  shipmentId?: string;
}

export interface ListDevicesRequest extends AccountScope {
  page: PageRequest;
  filters: DeviceFilters;
}
export interface CreateDeviceRequest extends AccountScope {
  device: DeviceInput;
}
export interface DeviceRequest extends AccountScope {
  deviceId: string;
}
export interface UpdateDeviceRequest extends DeviceRequest, Conditional {
  patch: DevicePatch;
}
export interface DeleteDeviceRequest extends DeviceRequest, Conditional {}
export interface RetireDeviceRequest extends DeviceRequest, Conditional {}

/** Retiring answers 204 without a body; the new version becomes the reply's `ETag`. */
export interface RetireDeviceResult {
  version: number;
}

/**
 * Links a device to a set of a shipment (OMS -> DMS, once the OMS has checked the shipment and the set).
 * The device row is the only record of the link. Answers `null`.
 */
export interface AssignDeviceRequest extends DeviceRequest {
  shipmentId: string;
  setId: string;
  /**
   * Epoch milliseconds after which the DMS must not commit the link: by then the OMS has given up
   * waiting and released its lock on the shipment, which may close without seeing this device.
   */
  deadline: number;
  /**
   * Epoch milliseconds at which the OMS found the shipment open and the set existing, under its locks.
   * A shipment or set released before then belongs to a close that did not commit, and does not refuse
   * the link (absent: every release refuses it).
   */
  checkedAt?: number;
}

/** Unlinks a device from exactly this set; AssignmentNotExists otherwise. Answers `null`. */
export interface UnassignDeviceRequest extends DeviceRequest {
  shipmentId: string;
  setId: string;
  /** Epoch milliseconds after which the DMS must not commit the unlink: the OMS has answered 504 by then. */
  deadline: number;
}

/**
 * Unlinks every device of a shipment, or only of one of its sets when `setId` is given, and records the
 * shipment (or set) as released, against links that reach the DMS late.
 */
export interface ReleaseDevicesRequest extends AccountScope {
  shipmentId: string;
  setId?: string;
  /**
   * Epoch milliseconds after which the DMS must not commit: the OMS has stopped waiting by then and rolled
   * its close back, so neither the unlinks nor the marker may land.
   */
  deadline: number;
}

export interface ReleaseDevicesResult {
  released: number;
}

/** The devices linked to some sets of the account. */
export interface LinkedDevicesRequest extends AccountScope {
  setIds: string[];
}

/** Every requested set id, with the ids of its devices sorted (an empty list when it has none). */
export type LinkedDevices = Record<string, string[]>;

/**
 * One chunk of a bulk operation's entries for the DMS to decide (OMS worker -> DMS). The DMS records
 * each entry's outcome with its effect, in one transaction, so a chunk sent again after a crash is
 * answered from that record: no entry is applied twice, and every applied entry keeps its outcome.
 */
export interface OperationChunk<E> extends AccountScope {
  operationId: string;
  /** Epoch milliseconds after which the DMS must not commit (see `AssignDeviceRequest.deadline`). */
  deadline: number;
  /** For links: when the OMS checked the entries' targets under its locks (see `AssignDeviceRequest.checkedAt`). */
  checkedAt?: number;
  entries: E[];
}

/**
 * An assignment entry. `target` is null when the OMS has already refused the entry (no such set, closed
 * shipment): the DMS then only reports an outcome it recorded for it earlier, if any.
 */
export interface LinkEntry {
  index: number;
  deviceId: string;
  target: { shipmentId: string; setId: string } | null;
}

export interface RetireEntry {
  index: number;
  deviceId: string;
}

/** An entry's outcome: `error` null means it succeeded. */
export interface EntryOutcome {
  index: number;
  error: EntryError | null;
}

/** The outcomes the DMS decided or had recorded; entries it left to the OMS are absent. */
export interface OperationChunkResult {
  outcomes: EntryOutcome[];
}

/**
 * Closes an operation on the DMS side (after a cancel): later chunks of it are refused, and the outcomes
 * recorded from `fromIndex` on (a chunk the OMS may not have heard back from) are returned.
 */
export interface SettleOperationRequest extends AccountScope {
  operationId: string;
  fromIndex: number;
}

/**
 * Forgets finished operations on the DMS side (their recorded outcomes and closed marks), sent by the
 * OMS's retention before it deletes the operations themselves. The OMS never sends chunks of them again.
 */
export interface PurgeOperationsRequest {
  operationIds: string[];
}
