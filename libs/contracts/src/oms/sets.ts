import type { AccountScope, PageRequest } from '../paging.js';
import type { Conditional } from './common.js';

export enum SetKind {
  Pallet = 'Pallet',
  Parcel = 'Parcel',
  Container = 'Container',
  Tote = 'Tote',
  Other = 'Other',
}

/** A group of items travelling together in a shipment; devices are assigned to sets. */
export interface ShipmentSet {
  id: string;
  shipmentId: string;
  name: string;
  kind: SetKind;
  deviceIds: string[];
  createdAt: string;
  updatedAt: string;
}

export interface SetInput {
  name: string;
  kind: SetKind;
}

export type SetPatch = Partial<SetInput>;

export interface ShipmentScope extends AccountScope {
  shipmentId: string;
}
export interface ListSetsRequest extends ShipmentScope {
  page: PageRequest;
}
export interface CreateSetRequest extends ShipmentScope {
  set: SetInput;
}
export interface SetRequest extends ShipmentScope {
  setId: string;
}
export interface UpdateSetRequest extends SetRequest, Conditional {
  patch: SetPatch;
}
export interface DeleteSetRequest extends SetRequest, Conditional {}
