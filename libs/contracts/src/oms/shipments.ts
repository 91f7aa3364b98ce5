import type { AccountScope, PageMetadata, PageRequest } from '../paging.js';
import type { Metadata } from './common.js';

export enum ShipmentStatus {
  Planned = 'Planned',
  InTransit = 'InTransit',
  Delivered = 'Delivered',
  Completed = 'Completed',
  Cancelled = 'Cancelled',
}

export enum TransportMode {
  Road = 'Road',
  Air = 'Air',
  Sea = 'Sea',
  Rail = 'Rail',
  Multimodal = 'Multimodal',
}

/** A shipment as the API shows it (API.md "Shipments"). Timestamps are RFC 3339 UTC strings. */
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

/** A single shipment with the version that the gateway turns into an `ETag`. */
export interface VersionedShipment {
  shipment: Shipment;
  version: number;
}

export interface ShipmentPage {
  items: Shipment[];
  metadata: PageMetadata;
}

export interface ListShipmentsRequest extends AccountScope {
  page: PageRequest;
}

export interface CreateShipmentRequest extends AccountScope {
  shipment: { name: string };
}

export interface GetShipmentRequest extends AccountScope {
  shipmentId: string;
}

export interface UpdateShipmentRequest extends AccountScope {
  shipmentId: string;
  patch: { name?: string };
  /** From `If-Match`: the update applies only while the shipment still has this version. */
  expectedVersion?: number;
}
