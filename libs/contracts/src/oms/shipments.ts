import type { AccountScope, PageRequest } from '../paging.js';
import type { Conditional, Metadata } from './common.js';
import type { ShipmentScope } from './sets.js';

export enum ShipmentStatus {
  Planned = 'Planned',
  InTransit = 'InTransit',
  Delivered = 'Delivered',
  Completed = 'Completed',
  Cancelled = 'Cancelled',
}

/** Closed shipments take no more changes (docs/api.md, "Shipments"). */
export const CLOSED_SHIPMENT_STATUSES: readonly ShipmentStatus[] = [ShipmentStatus.Completed, ShipmentStatus.Cancelled];

export enum TransportMode {
  Road = 'Road',
  Air = 'Air',
  Sea = 'Sea',
  Rail = 'Rail',
  Multimodal = 'Multimodal',
}

/** The lifecycle actions, spelled as in their paths (`POST /shipments/{id}/start`). */
export enum ShipmentAction {
  Start = 'start',
  Deliver = 'deliver',
  Complete = 'complete',
  Cancel = 'cancel',
}

/** A shipment as the API shows it (docs/api.md, "Shipments"). Timestamps are RFC 3339 UTC strings. */
export interface Shipment {
  id: string;
  name: string;
  reference: string | null;
  status: ShipmentStatus;
  mode: TransportMode | null;
  carrier: string | null;
  originId: string | null;
  destinationId: string | null;
  plannedDepartureAt: string | null;
  plannedArrivalAt: string | null;
  departedAt: string | null;
  deliveredAt: string | null;
  completedAt: string | null;
  cancelledAt: string | null;
  tags: string[];
  metadata: Metadata;
  createdAt: string;
  updatedAt: string;
  /** Departing the origin starts a Planned shipment, arriving at the destination delivers an InTransit one. */
  autoTransitions: boolean;
  conditions: ShipmentConditions | null;
  /** Read-only, from the evaluation of readings: total event time out of range, in seconds (millisecond precision). */
  excursions: ShipmentExcursions;
  /** Read-only: the newest located reading of its devices while assigned (docs/readings.md); null until one. */
  lastPosition: ShipmentLastPosition | null;
  /** Read-only: when it should arrive (docs/eta.md); null without destination, without estimate or plan, and from Delivered on. */
  eta: ShipmentEta | null;
}

export enum EtaBasis {
  Planned = 'Planned',
  Position = 'Position',
  History = 'History',
}

/** An estimated arrival: `earliestAt <= arrivalAt <= latestAt` (RFC 3339 UTC). */
export interface ShipmentEta {
  arrivalAt: string;
  earliestAt: string;
  latestAt: string;
  /** Great-circle metres from the newest position used to the edge of the destination's circle (times the lane's detour for History); null for Planned. */
  remainingMeters: number | null;
  basis: EtaBasis;
  /** `recordedAt` of the newest position used; null for Planned. */
  asOf: string | null;
  /** When the server made it. */
  calculatedAt: string;
}

/** Where a shipment was last seen: the newest located reading (by recordedAt) of its devices while assigned. */
export interface ShipmentLastPosition {
  lat: number;
  lng: number;
  accuracyMeters: number | null;
  recordedAt: string;
  deviceId: string;
}

/** A range of a measurement; out of range for `minDurationSeconds` of event time opens an alert. */
export interface TemperatureCondition {
  minC: number | null;
  maxC: number | null;
  minDurationSeconds: number;
}
export interface HumidityCondition {
  minPercent: number | null;
  maxPercent: number | null;
  minDurationSeconds: number;
}

/** What a shipment's readings must keep to (docs/alerts-and-visits.md); every part optional. */
export interface ShipmentConditions {
  temperature?: TemperatureCondition;
  humidity?: HumidityCondition;
  shock?: { maxG: number };
  light?: { maxLux: number };
  battery?: { minPercent: number };
  signalLoss?: { maxSilenceSeconds: number };
}

/** The conditions as a client sends them: bounds and `minDurationSeconds` may be left out. */
export interface ShipmentConditionsInput {
  temperature?: { minC?: number | null; maxC?: number | null; minDurationSeconds?: number };
  humidity?: { minPercent?: number | null; maxPercent?: number | null; minDurationSeconds?: number };
  shock?: { maxG: number };
  light?: { maxLux: number };
  battery?: { minPercent: number };
  signalLoss?: { maxSilenceSeconds: number };
}

export interface ShipmentExcursions {
  temperatureSeconds: number;
  humiditySeconds: number;
}

/** The fields a client sets; timestamps are RFC 3339 date-times with a time zone, as the client sent them. */
export interface ShipmentInput {
  name: string;
  reference?: string | null;
  mode?: TransportMode | null;
  carrier?: string | null;
  originId?: string | null;
  destinationId?: string | null;
  plannedDepartureAt?: string | null;
  plannedArrivalAt?: string | null;
  tags?: string[];
  metadata?: Metadata;
  autoTransitions?: boolean;
  /** Replaced whole; null clears them. */
  conditions?: ShipmentConditionsInput | null;
}

/** Omitted fields stay as they are; `null` clears a nullable one. */
export type ShipmentPatch = Partial<ShipmentInput>;

/** Filters of `GET /shipments`; every given filter must match. */
export interface ShipmentFilters {
  /** Any of these statuses. */
  status?: ShipmentStatus[];
  reference?: string;
  /** Shipments carrying this tag. */
  tag?: string;
  /** `eta.arrivalAt` before / at or after these instants (RFC 3339); shipments with no `eta` never match. */
  arrivingBefore?: string;
  arrivingAfter?: string;
  /** `eta.arrivalAt` after `plannedArrivalAt`. */
  late?: boolean;
}

export interface ListShipmentsRequest extends AccountScope {
  page: PageRequest;
  filters: ShipmentFilters;
}
export interface CreateShipmentRequest extends AccountScope {
  shipment: ShipmentInput;
}
export type ShipmentRequest = ShipmentScope;
export interface UpdateShipmentRequest extends ShipmentScope, Conditional {
  patch: ShipmentPatch;
}
export interface DeleteShipmentRequest extends ShipmentScope, Conditional {}
export interface TransitionShipmentRequest extends ShipmentScope, Conditional {
  action: ShipmentAction;
}

/** A transition answers 204 without a body; the new version becomes the reply's `ETag`. */
export interface TransitionShipmentResult {
  version: number;
}
