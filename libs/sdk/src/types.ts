/**
 * Names for the API's schemas. The generated ones come from the OpenAPI document the gateway serves
 * (`generated/api.ts`, regenerated with `npm run -s sdk:types`); the resources whose routes the gateway does
 * not serve yet (readings, alerts, events, webhooks) are written here from the API reference until they are.
 */
import type { components, operations } from './generated/api.js';

type Schemas = components['schemas'];
type QueryOf<Operation> = Operation extends { parameters: { query?: infer Query } } ? Omit<NonNullable<Query>, 'cursor' | 'limit' | 'includeTotal'> : never;

export type { components, operations, paths } from './generated/api.js';

export type Shipment = Schemas['ShipmentDto'];
export type ShipmentStatus = Schemas['ShipmentStatus'];
export type CreateShipment = Schemas['CreateShipmentDto'];
export type UpdateShipment = Schemas['UpdateShipmentDto'];
export type ShipmentFilters = QueryOf<operations['shipmentsList']>;

export type ShipmentSet = Schemas['SetDto'];
export type CreateSet = Schemas['CreateSetDto'];
export type UpdateSet = Schemas['UpdateSetDto'];

export type Item = Schemas['ItemDto'];
export type CreateItem = Schemas['CreateItemDto'];
export type UpdateItem = Schemas['UpdateItemDto'];

export type PointOfInterest = Schemas['PointOfInterestDto'];
export type CreatePointOfInterest = Schemas['CreatePointOfInterestDto'];
export type UpdatePointOfInterest = Schemas['UpdatePointOfInterestDto'];

export type Device = Schemas['DeviceDto'];
export type DeviceStatus = Schemas['DeviceStatus'];
export type CreateDevice = Schemas['CreateDeviceDto'];
export type UpdateDevice = Schemas['UpdateDeviceDto'];
export type DeviceFilters = QueryOf<operations['devicesList']>;

export type Operation = Schemas['OperationDto'];
export type OperationStatus = Schemas['OperationStatus'];
export type OperationResult = Schemas['OperationResultDto'];
export type OperationFilters = QueryOf<operations['operationsList']>;
export type OperationResultFilters = QueryOf<operations['operationsResults']>;
export type BulkAssignment = Schemas['BulkAssignmentEntryDto'];

export type ErrorCode = Schemas['ErrorCode'];

// --- Not served by the gateway yet: written from the API reference ("Tracking", "Geofences and
// condition alerts", "Events and webhooks"); replaced by generated names once the routes are served.

export interface ReadingLocation {
  lat: number;
  lng: number;
  accuracyMeters?: number | null;
  altitudeMeters?: number | null;
  speedMps?: number | null;
  headingDegrees?: number | null;
}

/** One reading as a device cloud sends it: the device by `deviceId` or `serialNumber`, and at least one measurement. */
export interface ReadingInput {
  deviceId?: string;
  serialNumber?: string;
  recordedAt: string;
  location?: ReadingLocation | null;
  temperatureC?: number | null;
  humidityPercent?: number | null;
  shockG?: number | null;
  lightLux?: number | null;
  batteryPercent?: number | null;
  pressureHpa?: number | null;
}

export interface Reading {
  id: string;
  deviceId: string;
  recordedAt: string;
  receivedAt: string;
  location: Required<ReadingLocation> | null;
  temperatureC: number | null;
  humidityPercent: number | null;
  shockG: number | null;
  lightLux: number | null;
  batteryPercent: number | null;
  pressureHpa: number | null;
}

export interface IngestResult {
  accepted: number;
  duplicates: number;
  rejected: { index: number; error: { code: string; message: string; details?: Record<string, unknown> } }[];
}

export interface ReadingFilters {
  from?: string;
  to?: string;
}

export interface TrackPoint {
  recordedAt: string;
  lat: number;
  lng: number;
  accuracyMeters: number | null;
  deviceId: string;
}

export interface Track {
  shipmentId: string;
  points: TrackPoint[];
  metadata: { from: string | null; to: string | null; count: number; totalPoints?: number; simplified: boolean };
}

export interface TrackFilters {
  from?: string;
  to?: string;
  deviceId?: string;
  maxPoints?: number;
}

export interface Visit {
  poiId: string;
  arrivedAt: string;
  departedAt: string | null;
}

export type AlertKind = 'TemperatureHigh' | 'TemperatureLow' | 'HumidityHigh' | 'HumidityLow' | 'Shock' | 'Light' | 'BatteryLow' | 'SignalLoss';

export interface Alert {
  id: string;
  shipmentId: string;
  deviceId: string | null;
  kind: AlertKind;
  status: 'Open' | 'Closed';
  startedAt: string;
  endedAt: string | null;
  threshold: number;
  peakValue: number | null;
  acknowledgedAt: string | null;
  createdAt: string;
  updatedAt: string;
}

export interface AlertFilters {
  status?: 'Open' | 'Closed';
  kind?: AlertKind;
  shipmentId?: string;
  deviceId?: string;
}

/** An event of the account's feed, and the body of a webhook delivery. */
export interface TrackingEvent<Data = unknown> {
  id: string;
  type: string;
  occurredAt: string;
  accountId: string;
  data: Data;
}

export interface EventFilters {
  /** One type or several (sent as a comma list). */
  type?: string | string[];
  /** Start right after this event id. */
  after?: string;
}

export interface Webhook {
  id: string;
  url: string;
  description: string | null;
  eventTypes: string[];
  status: 'Active' | 'Disabled';
  disabledReason: string | null;
  createdAt: string;
  updatedAt: string;
}

/** A webhook as create and rotate-secret answer it: with its signing secret, shown only there. */
export interface WebhookWithSecret extends Webhook {
  secret: string;
}

export interface CreateWebhook {
  url: string;
  description?: string | null;
  /** `["*"]` for every type, or a list of event types. */
  eventTypes: string[];
}

export type UpdateWebhook = Partial<CreateWebhook>;

export interface WebhookDelivery {
  id: string;
  eventId: string;
  eventType: string;
  status: 'Pending' | 'Succeeded' | 'Failed';
  /** The last 20 attempts at most, oldest first. */
  attempts: { at: string; statusCode: number | null; durationMs: number; error: string | null }[];
  /** Every attempt ever made, also those `attempts` no longer holds. */
  attemptsTotal: number;
  nextAttemptAt: string | null;
}
