import type { AccountScope, PageRequest } from '../paging.js';
import type { Conditional, Metadata } from './common.js';

export enum PointOfInterestKind {
  Warehouse = 'Warehouse',
  Port = 'Port',
  Airport = 'Airport',
  Customer = 'Customer',
  Supplier = 'Supplier',
  Other = 'Other',
}

export interface GeoPoint {
  lat: number;
  lng: number;
}

export interface PointOfInterest {
  id: string;
  name: string;
  kind: PointOfInterestKind;
  location: GeoPoint;
  radiusMeters: number;
  /** How long a shipment must stay inside (or outside) before an arrival (or departure) counts. */
  dwellSeconds: number;
  address: string | null;
  metadata: Metadata;
  createdAt: string;
  updatedAt: string;
}

export const DEFAULT_RADIUS_METERS = 200;
export const DEFAULT_DWELL_SECONDS = 120;

export interface PointOfInterestInput {
  name: string;
  kind: PointOfInterestKind;
  location: GeoPoint;
  radiusMeters?: number;
  dwellSeconds?: number;
  address?: string | null;
  metadata?: Metadata;
}

export type PointOfInterestPatch = Partial<PointOfInterestInput>;

export interface ListPointsOfInterestRequest extends AccountScope {
  page: PageRequest;
}
export interface CreatePointOfInterestRequest extends AccountScope {
  pointOfInterest: PointOfInterestInput;
}
export interface PointOfInterestRequest extends AccountScope {
  pointOfInterestId: string;
}
export interface UpdatePointOfInterestRequest extends PointOfInterestRequest, Conditional {
  patch: PointOfInterestPatch;
}
export interface DeletePointOfInterestRequest extends PointOfInterestRequest, Conditional {}
