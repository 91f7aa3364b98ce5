import { Injectable } from '@nestjs/common';
import type { AccountScope } from '@tracking/contracts';
import { PlaceIndex } from '@tracking/geofence';
import { LRUCache } from 'lru-cache';
import { PointOfInterestRepository } from '../points-of-interest/point-of-interest.repository.js';

/**
 * Each account's points of interest as a spatial index (`PlaceIndex`), built once and rebuilt when the
 * account's places change: every lookup asks PostgreSQL for the places' version (one row read by its primary
 * key, which every change of the account's places gives a new value in the change's own transaction:
 * `PointOfInterestRepository.placesVersion`) and rebuilds only when it moved, so an evaluation always uses
 * the places as they are, whichever replica changed them. The version is read before the places: a change
 * committed between the two reads leaves the index newer than its version, rebuilt once more at the next
 * lookup, never older.
 */
@Injectable()
export class PlaceCache {
  private readonly indexes = new LRUCache<string, { version: string; index: PlaceIndex }>({ max: 1000 });

  constructor(private readonly places: PointOfInterestRepository) {}

  async forAccount(scope: AccountScope): Promise<PlaceIndex> {
    const key = `${scope.tenantId}/${scope.accountId}`;
    const version = await this.places.placesVersion(scope);
    const cached = this.indexes.get(key);
    if (cached?.version === version) return cached.index;
    const index = new PlaceIndex(await this.places.findPlaces(scope));
    this.indexes.set(key, { version, index });
    return index;
  }
}
