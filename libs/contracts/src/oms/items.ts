import type { PageRequest } from '../paging.js';
import type { Conditional, Metadata } from './common.js';
import type { SetRequest } from './sets.js';

export interface Item {
  id: string;
  shipmentId: string;
  setId: string;
  sku: string;
  description: string | null;
  quantity: number;
  unit: string | null;
  metadata: Metadata;
  createdAt: string;
  updatedAt: string;
}

export interface ItemInput {
  sku: string;
  description?: string | null;
  quantity: number;
  unit?: string | null;
  metadata?: Metadata;
}

export type ItemPatch = Partial<ItemInput>;

export interface ListItemsRequest extends SetRequest {
  page: PageRequest;
}
export interface CreateItemRequest extends SetRequest {
  item: ItemInput;
}
export interface ItemRequest extends SetRequest {
  itemId: string;
}
export interface UpdateItemRequest extends ItemRequest, Conditional {
  patch: ItemPatch;
}
export interface DeleteItemRequest extends ItemRequest, Conditional {}
