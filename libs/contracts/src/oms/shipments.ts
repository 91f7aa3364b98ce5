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
