import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { type AccountScope, type EtaChangedData, type PageRequest, type ShipmentFilters, type ShipmentScope, ShipmentStatus } from '@tracking/contracts';
import { batchedRows, preparedRecords } from '@tracking/database';
import type { Estimate } from '@tracking/geofence';
import { type EventRecord, eventMessage, writeOutbox } from '@tracking/outbox';
import { CursorCodec, cursorBinding, keysetJsonPage, lockInsertOrder, SqlConditions } from '@tracking/paging';
import { type EntityManager, In, type Repository } from 'typeorm';
import { validate as isUuid } from 'uuid';
import { ShipmentEntity } from './shipment.entity.js';

const SHIPMENT_STATUS = 'SELECT status FROM shipments WHERE id = $1 AND account_id = $2 AND tenant_id = $3';
/** Conflicts with the `FOR UPDATE` of the shipment's lifecycle transitions and deletes, not with itself. */
const SHIPMENT_STATUS_FOR_SHARE = `${SHIPMENT_STATUS} FOR SHARE`;

/** The 10-minute bin of a moment, as the generated column `eta_arrival_bin` computes it (migration KeepEstimateUpdatesHot). */
const ARRIVAL_BIN = (moment: string) => `date_bin('10 minutes', ${moment}, timestamptz '2000-01-01 00:00:00+00')`;

/** Shipments that still use their points of interest: deleting a closed one sets its references to null. */
const ONGOING_SHIPMENT_STATUSES: readonly ShipmentStatus[] = [
  ShipmentStatus.Planned,
  ShipmentStatus.InTransit,
  ShipmentStatus.Delivered,
];

/** A set an assignment names, with its shipment's status, as locked for the transaction. */
export interface LockedSet {
  id: string;
  shipmentId: string;
  shipmentStatus: ShipmentStatus;
}

/**
 * Every statement on the `shipments` table, including those that sets, items, assignments, points of
 * interest and bulk operations make: one place to read for which locks a shipment takes and in which order.
 */
/** One shipment's estimate to store (`ShipmentRepository.saveEstimates`). */
export interface EstimateSave {
  shipmentId: string;
  destinationId: string;
  estimate: Estimate;
  calculatedAt: Date;
  /** The arrival last published in `shipment.eta_changed` (or what the shipment started with). */
  publishedArrivalAt: Date | null;
  /** The `shipment.eta_changed` this estimate publishes, if it does. */
  event?: EventRecord<EtaChangedData>;
}

/** The public tracking view's shipment (docs/share-links.md): what a share link shows, with its places. */
export interface PublicShipmentRow {
  tenant_id: string;
  account_id: string;
  shipment_id: string;
  name: string;
  status: string;
  updated_at: Date;
  api_json: string;
  last_position_lat: number | null;
  last_position_lng: number | null;
  last_position_recorded_at: Date | null;
  origin_name: string | null;
  origin_lat: number | null;
  origin_lng: number | null;
  origin_updated_at: Date | null;
  destination_name: string | null;
  destination_lat: number | null;
  destination_lng: number | null;
  destination_updated_at: Date | null;
}

/** A located reading of a shipment's device while assigned: a candidate for the shipment's `lastPosition`. */
export interface LastPosition {
  shipmentId: string;
  deviceId: string;
  lat: number;
  lng: number;
  accuracyMeters: number | null;
  /** Epoch ms. */
  recordedAt: number;
}

@Injectable()
export class ShipmentRepository {
  constructor(
    @InjectRepository(ShipmentEntity) private readonly shipments: Repository<ShipmentEntity>,
    private readonly cursors: CursorCodec,
  ) {}

  /**
   * Inserts the shipment in one transaction after `prepare`, which may check and lock what it refers to
   * and complete it, and before `inserted` (which records its event in the same transaction). The
   * insert-order lock is taken last, so it is held no longer than needed.
   */
  async insert(
    shipment: Omit<ShipmentEntity, 'seq'>,
    prepare: (manager: EntityManager) => Promise<void>,
    inserted: (manager: EntityManager) => Promise<unknown>,
  ): Promise<void> {
    await this.shipments.manager.transaction(async (manager) => {
      await prepare(manager);
      await lockInsertOrder(manager, `shipments:${shipment.accountId}`);
      await manager.insert(ShipmentEntity, shipment);
      await inserted(manager);
    });
  }

  /**
   * One page of the account's shipments as the API shows them, as the bytes of its JSON text: the hottest read of the API,
   * so `keysetJsonPage`'s prepared statement and each row's stored `api_json` rather than TypeORM's entities.
   */
  findPageJson(scope: AccountScope, page: PageRequest, filters: ShipmentFilters): Promise<Buffer> {
    const where = new SqlConditions().add((p) => `account_id = ${p}`, scope.accountId, 'uuid').add((p) => `tenant_id = ${p}`, scope.tenantId, 'uuid');
    if (filters.reference !== undefined) where.add((p) => `reference = ${p}`, filters.reference, 'text');
    // Containment rather than `= ANY(tags)`, so that the GIN index on tags serves it.
    if (filters.tag !== undefined) where.add((p) => `tags @> ARRAY[${p}]::text[]`, filters.tag, 'text');
    // On what the API shows as eta.arrivalAt (a generated column, docs/eta.md); a shipment without one never matches.
    // The index holds it in 10-minute bins (`eta_arrival_bin`, so that an estimate's update stays HOT: migration
    // KeepEstimateUpdatesHot): the bins narrow the range, the exact column decides on the rows of the edge bins.
    if (filters.arrivingBefore !== undefined) {
      where.add((p) => `eta_arrival_bin <= ${ARRIVAL_BIN(p)} AND eta_effective_arrival_at < ${p}`, filters.arrivingBefore, 'timestamptz');
    }
    if (filters.arrivingAfter !== undefined) {
      where.add((p) => `eta_arrival_bin >= ${ARRIVAL_BIN(p)} AND eta_effective_arrival_at >= ${p}`, filters.arrivingAfter, 'timestamptz');
    }
    // late=false: an eta no later than the plan (a shipment without eta or plan matches neither). The bin's
    // IS NOT NULL is the partial index's predicate (the bin is null exactly when the arrival is), so that
    // PostgreSQL may use it.
    if (filters.late !== undefined) {
      where.add((p) => `eta_arrival_bin IS NOT NULL AND (eta_effective_arrival_at > planned_arrival_at) = ${p}`, filters.late, 'bool');
    }
    return keysetJsonPage({
      dataSource: this.shipments.manager.connection,
      table: 'shipments',
      jsonColumn: 'api_json',
      where,
      oneOf: filters.status && { column: 'status', values: filters.status, type: 'text' },
      page,
      codec: this.cursors,
      // A status list is one filter whatever its order, so its cursor binds the sorted list.
      binding: cursorBinding('shipments', {
        accountId: scope.accountId,
        status: filters.status && [...filters.status].sort().join(','),
        reference: filters.reference,
        tag: filters.tag,
        arrivingBefore: filters.arrivingBefore,
        arrivingAfter: filters.arrivingAfter,
        late: filters.late,
      }),
      itemsKey: 'items',
    });
  }

  /**
   * The shipment as the API shows it, as JSON text, with its version; null when the account has no such
   * shipment. A hot read, so a prepared statement (shared by the reads of one turn) and the stored
   * `api_json`, as the list.
   */
  async findOneJson(scope: AccountScope, id: string): Promise<{ json: string; version: number } | null> {
    const [row] = await batchedRows<[json: string, version: number]>(
      this.shipments.manager.connection,
      // The owner is checked outside the fenced (OFFSET 0) lookup, so that only the primary key can serve it
      // on tables never analyzed (docs/query-plans.md).
      'SELECT api_json, version FROM (SELECT api_json, version, account_id, tenant_id FROM shipments WHERE id = $1 OFFSET 0) AS one WHERE account_id = $2 AND tenant_id = $3',
      ['uuid', 'uuid', 'uuid'],
      [id, scope.accountId, scope.tenantId],
    );
    return row ? { json: row[0], version: row[1] } : null;
  }

  /** Runs `work` with the shipment locked against concurrent changes until it returns. */
  withLockedShipment<T>(
    scope: AccountScope,
    id: string,
    work: (shipment: ShipmentEntity | null, manager: EntityManager) => Promise<T>,
  ): Promise<T> {
    return this.shipments.manager.transaction(async (manager) => {
      const shipment = await manager.findOne(ShipmentEntity, {
        where: { id, accountId: scope.accountId, tenantId: scope.tenantId },
        lock: { mode: 'pessimistic_write' },
      });
      return work(shipment, manager);
    });
  }

  /**
   * Which of `ids` are points of interest of the account, locked `FOR SHARE` until the transaction
   * ends: a concurrent delete of one (which locks it `FOR UPDATE`) then waits for this shipment and
   * sees it, or has already removed it and this shipment is refused.
   */
  async lockPointsOfInterest(manager: EntityManager, scope: AccountScope, ids: readonly string[]): Promise<Set<string>> {
    if (ids.length === 0) return new Set();
    const rows: { id: string }[] = await manager.query(
      `SELECT id FROM points_of_interest
        WHERE id = ANY($1::uuid[]) AND account_id = $2 AND tenant_id = $3
        ORDER BY id
        FOR SHARE`,
      [ids, scope.accountId, scope.tenantId],
    );
    return new Set(rows.map((row) => row.id));
  }

  /** The status of the account's shipment; null when the account has no such shipment. */
  findStatus(scope: ShipmentScope): Promise<ShipmentStatus | null> {
    return shipmentStatus(this.shipments.manager, SHIPMENT_STATUS, scope);
  }

  /**
   * Runs `work` in one transaction that first locks the account's shipment `FOR SHARE` and passes its
   * status (null: no such shipment). Lifecycle transitions and deletes lock the shipment `FOR UPDATE`,
   * so they wait until `work` has committed, and a transition that committed first is the status seen:
   * the status stays true while `work` writes. Writers of sets, items and assignments share the lock.
   */
  withLockedForContents<T>(scope: ShipmentScope, work: (status: ShipmentStatus | null, manager: EntityManager) => Promise<T>): Promise<T> {
    return this.shipments.manager.transaction(async (manager) =>
      work(await shipmentStatus(manager, SHIPMENT_STATUS_FOR_SHARE, scope), manager),
    );
  }

  /**
   * The account's sets among `setIds` with their shipments, the shipments locked `FOR SHARE` and the sets
   * `FOR KEY SHARE` until the transaction of `manager` ends, as a single assignment locks them.
   */
  async lockSetsForAssignment(manager: EntityManager, scope: AccountScope, setIds: string[]): Promise<Map<string, LockedSet>> {
    const rows: { id: string; shipment_id: string; status: ShipmentStatus }[] = await manager.query(
      `SELECT s.id, s.shipment_id, sh.status
         FROM sets AS s JOIN shipments AS sh ON sh.id = s.shipment_id
        WHERE s.id = ANY($1::uuid[]) AND sh.account_id = $2 AND sh.tenant_id = $3
        ORDER BY sh.id, s.id
        FOR SHARE OF sh FOR KEY SHARE OF s`,
      [[...new Set(setIds)], scope.accountId, scope.tenantId],
    );
    return new Map(
      rows.map((row) => [row.id, { id: row.id, shipmentId: row.shipment_id, shipmentStatus: row.status }]),
    );
  }

  /**
   * Whether an ongoing shipment (Planned, InTransit or Delivered) has the point of interest as origin
   * or destination, in the transaction of `manager`. Closed shipments do not count.
   */
  async usesPointOfInterest(manager: EntityManager, pointOfInterestId: string): Promise<boolean> {
    const rows: unknown[] = await manager.query(
      `SELECT 1 FROM shipments
        WHERE (origin_id = $1 OR destination_id = $1) AND status = ANY($2::text[])
        LIMIT 1`,
      [pointOfInterestId, ONGOING_SHIPMENT_STATUSES],
    );
    return rows.length > 0;
  }

  /**
   * Clears a point of interest about to be deleted from the shipments that name it (only closed ones can:
   * an ongoing one makes the delete 409), in the caller's transaction: each cleared shipment is a change
   * its clients must see, so it takes a new version (ETag) and `updated_at`, and is returned as changed for
   * its `shipment.updated`. Without this the foreign key's `ON DELETE SET NULL` cleared them silently, and
   * a client's cached ETag went on matching a representation that had changed.
   */
  async clearPointOfInterest(manager: EntityManager, pointOfInterestId: string): Promise<ShipmentEntity[]> {
    const [rows]: [{ id: string }[], number] = await manager.query(
      `UPDATE shipments
          SET origin_id = CASE WHEN origin_id = $1 THEN NULL ELSE origin_id END,
              destination_id = CASE WHEN destination_id = $1 THEN NULL ELSE destination_id END,
              version = version + 1,
              updated_at = now()
        WHERE origin_id = $1 OR destination_id = $1
        RETURNING id`,
      [pointOfInterestId],
    );
    if (rows.length === 0) return [];
    return manager.find(ShipmentEntity, { where: rows.map((row) => ({ id: row.id })), order: { seq: 'ASC' } });
  }


  /**
   * Adds `ms` of event time to the shipment's excursion total of `measure`, in the caller's transaction.
   * Changes neither `updated_at` nor the version: the total is derived from readings, not edited.
   */
  async addExcursion(manager: EntityManager, shipmentId: string, measure: 'temperature' | 'humidity', ms: number): Promise<void> {
    const column = measure === 'temperature' ? 'excursion_temperature_ms' : 'excursion_humidity_ms';
    await manager.query(`UPDATE shipments SET ${column} = ${column} + $2 WHERE id = $1`, [shipmentId, ms]);
  }

  /**
   * Runs `work` in one transaction that first locks the account's shipments `FOR KEY SHARE`, in id order,
   * and passes them whole, for the evaluation of readings (which needs conditions, places and lifecycle
   * times). A scope naming no shipment of its account is left out. The weakest row lock: it waits only for
   * the `FOR UPDATE` of a lifecycle transition or a delete, and those wait for it, so what the evaluation
   * records under it (alerts, visits, excursions) commits either before a closing shipment closes its
   * alerts, or after, when this finds the shipment closed. Derived writes (`lastPosition`, excursion
   * totals) do not wait for it.
   */
  withEntitiesLockedForEvaluation<T>(scopes: readonly ShipmentScope[], work: (shipments: ShipmentEntity[], manager: EntityManager) => Promise<T>): Promise<T> {
    return this.shipments.manager.transaction(async (manager) => {
      const wanted = new Map(scopes.filter((scope) => isUuid(scope.shipmentId)).map((scope) => [scope.shipmentId.toLowerCase(), scope]));
      const found = wanted.size === 0 ? [] : await manager.find(ShipmentEntity, { where: { id: In([...wanted.keys()]) }, order: { id: 'ASC' }, lock: { mode: 'for_key_share' } });
      const owned = found.filter((shipment) => {
        const scope = wanted.get(shipment.id);
        return scope !== undefined && scope.tenantId === shipment.tenantId && scope.accountId === shipment.accountId;
      });
      return work(owned, manager);
    });
  }

  /**
   * Sets the shipment's excursion totals (ms of event time) in the caller's transaction, never lowering
   * them. Changes neither `updated_at` nor the version: the totals are derived from readings.
   */
  async setExcursions(manager: EntityManager, shipmentId: string, temperatureMs: number, humidityMs: number): Promise<void> {
    await manager.query(
      `UPDATE shipments SET excursion_temperature_ms = GREATEST(excursion_temperature_ms, $2), excursion_humidity_ms = GREATEST(excursion_humidity_ms, $3)
        WHERE id = $1 AND (excursion_temperature_ms < $2 OR excursion_humidity_ms < $3)`,
      [shipmentId, Math.round(temperatureMs), Math.round(humidityMs)],
    );
  }

  /**
   * Locks the account's shipment against deletion (`FOR KEY SHARE`) while a row naming it is inserted
   * (a share link): a concurrent delete waits and then cascades, or removed it first. False: no such shipment.
   */
  async lockForLink(manager: EntityManager, scope: AccountScope, shipmentId: string): Promise<boolean> {
    const rows = (await manager.query('SELECT 1 FROM shipments WHERE id = $1 AND account_id = $2 AND tenant_id = $3 FOR KEY SHARE', [
      shipmentId,
      scope.accountId,
      scope.tenantId,
    ])) as unknown[];
    return rows.length === 1;
  }

  /**
   * The shipment of the live share link (not revoked, not expired) whose token has this digest, with its
   * origin and destination; undefined for any other digest. One probe of the unique digest index, then
   * primary keys. One prepared statement (`preparedRecords`) rather than two TypeORM queries (the link,
   * then its shipment): every poll of a consignee's page and every guessed token costs this lookup.
   */
  async findShared(tokenDigest: Buffer): Promise<PublicShipmentRow | undefined> {
    const [row] = await preparedRecords<PublicShipmentRow>(
      this.shipments.manager.connection,
      `SELECT s.tenant_id, s.account_id, s.id AS shipment_id, s.name, s.status, s.updated_at, s.api_json,
              s.last_position_lat, s.last_position_lng, s.last_position_recorded_at,
              o.name AS origin_name, o.lat AS origin_lat, o.lng AS origin_lng, o.updated_at AS origin_updated_at,
              d.name AS destination_name, d.lat AS destination_lat, d.lng AS destination_lng, d.updated_at AS destination_updated_at
         FROM share_links l
         JOIN shipments s ON s.id = l.shipment_id
         LEFT JOIN points_of_interest o ON o.id = s.origin_id
         LEFT JOIN points_of_interest d ON d.id = s.destination_id
        WHERE l.token_digest = $1 AND l.revoked_at IS NULL AND l.expires_at > now()`,
      [tokenDigest],
    );
    return row;
  }

  /**
   * Stores the estimates of a chunk's shipments, each with the destination it was made for and the arrival
   * last published, in one statement (one `UPDATE` per shipment was a round trip each inside the chunk's
   * transaction: `npm run bench:evaluation` with destinations, docs/eta.md), and records the
   * `shipment.eta_changed` they publish in the same statement (`writeOutbox`'s `alongside`): recorded one
   * by one, they were a round trip more for about one evaluated shipment in eight in that benchmark. Each
   * shipment's event still comes after the events its evaluation recorded before (visits, transitions).
   * Changes neither `updated_at` nor the version: an estimate is derived from readings, like `lastPosition`.
   */
  async saveEstimates(manager: EntityManager, saves: readonly EstimateSave[]): Promise<void> {
    if (saves.length === 0) return;
    // In id order, as `moveLastPositions` updates the same rows: in the order the chunk evaluated them, the two
    // statements could each hold a row the other waits for (a deadlock seen in bench:eta-stack; the chunk
    // was redelivered, nothing lost).
    const sorted = [...saves].sort((a, b) => (a.shipmentId < b.shipmentId ? -1 : a.shipmentId > b.shipmentId ? 1 : 0));
    const column = <T>(pick: (save: EstimateSave) => T) => sorted.map(pick);
    const events = sorted.flatMap((save) => (save.event ? [eventMessage(save.event).message] : []));
    await writeOutbox(manager, events, {
      sql: `UPDATE shipments s SET eta_arrival_at = v.arrival_at, eta_earliest_at = v.earliest_at, eta_latest_at = v.latest_at,
          eta_remaining_meters = v.remaining_meters, eta_basis = v.basis, eta_as_of = v.as_of, eta_calculated_at = v.calculated_at,
          eta_destination_id = v.destination_id, eta_published_arrival_at = v.published_arrival_at
        FROM unnest($1::uuid[], $2::timestamptz[], $3::timestamptz[], $4::timestamptz[], $5::float8[], $6::text[], $7::timestamptz[],
                    $8::timestamptz[], $9::uuid[], $10::timestamptz[])
          AS v(id, arrival_at, earliest_at, latest_at, remaining_meters, basis, as_of, calculated_at, destination_id, published_arrival_at)
        WHERE s.id = v.id`,
      parameters: [
        column((save) => save.shipmentId),
        column((save) => new Date(save.estimate.arrivalAt)),
        column((save) => new Date(save.estimate.earliestAt)),
        column((save) => new Date(save.estimate.latestAt)),
        column((save) => save.estimate.remainingMeters),
        column((save) => save.estimate.basis),
        column((save) => (save.estimate.asOf === null ? null : new Date(save.estimate.asOf))),
        column((save) => save.calculatedAt),
        column((save) => save.destinationId),
        column((save) => save.publishedArrivalAt),
      ],
    });
  }

  /**
   * Moves each shipment's last position forward: only a position recorded later than the one it holds (ties
   * by device id), so the result is the same whatever order the readings arrive in and however often a
   * batch is handled again. In one statement, in id order (concurrent consumers cannot deadlock). Changes
   * neither `updated_at` nor the version, and emits no event: the position is derived from readings.
   */
  async moveLastPositions(positions: LastPosition[]): Promise<void> {
    if (positions.length === 0) return;
    const sorted = [...positions].sort((a, b) => (a.shipmentId < b.shipmentId ? -1 : a.shipmentId > b.shipmentId ? 1 : 0));
    await this.shipments.manager.query(
      `UPDATE shipments AS s SET
          last_position_lat = u.lat, last_position_lng = u.lng, last_position_accuracy_meters = u.accuracy_meters,
          last_position_recorded_at = u.recorded_at, last_position_device_id = u.device_id
         FROM unnest($1::uuid[], $2::float8[], $3::float8[], $4::float8[], $5::timestamptz[], $6::uuid[])
           AS u (id, lat, lng, accuracy_meters, recorded_at, device_id)
        WHERE s.id = u.id
          AND (s.last_position_recorded_at IS NULL OR (u.recorded_at, u.device_id) > (s.last_position_recorded_at, s.last_position_device_id))`,
      [
        sorted.map((p) => p.shipmentId),
        sorted.map((p) => p.lat),
        sorted.map((p) => p.lng),
        sorted.map((p) => p.accuracyMeters),
        sorted.map((p) => new Date(p.recordedAt).toISOString()),
        sorted.map((p) => p.deviceId),
      ],
    );
  }

  async save(manager: EntityManager, shipment: ShipmentEntity): Promise<void> {
    // The excursion totals and the last position are derived (`addExcursion`, `moveLastPositions`): a save
    // never writes back a value it read earlier.
    const {
      seq: _seq,
      excursionTemperatureMs: _temperature,
      excursionHumidityMs: _humidity,
      lastPositionLat: _lat,
      lastPositionLng: _lng,
      lastPositionAccuracyMeters: _accuracy,
      lastPositionRecordedAt: _recordedAt,
      lastPositionDeviceId: _deviceId,
      etaArrivalAt: _etaArrivalAt,
      etaEarliestAt: _etaEarliestAt,
      etaLatestAt: _etaLatestAt,
      etaRemainingMeters: _etaRemainingMeters,
      etaBasis: _etaBasis,
      etaAsOf: _etaAsOf,
      etaCalculatedAt: _etaCalculatedAt,
      etaDestinationId: _etaDestinationId,
      etaPublishedArrivalAt: _etaPublishedArrivalAt,
      ...columns
    } = shipment;
    await manager.update(ShipmentEntity, { id: shipment.id }, columns);
  }

  async delete(manager: EntityManager, shipment: ShipmentEntity): Promise<void> {
    await manager.delete(ShipmentEntity, { id: shipment.id });
  }
}

async function shipmentStatus(manager: EntityManager, sql: string, scope: ShipmentScope): Promise<ShipmentStatus | null> {
  // A path id that is not a UUID names no shipment (and PostgreSQL would refuse it as a uuid).
  if (!isUuid(scope.shipmentId)) return null;
  const rows: { status: ShipmentStatus }[] = await manager.query(sql, [scope.shipmentId, scope.accountId, scope.tenantId]);
  return rows[0]?.status ?? null;
}
