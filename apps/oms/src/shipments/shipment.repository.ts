import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import type { AccountScope, PageMetadata, PageRequest, ShipmentFilters } from '@tracking/contracts';
import { CursorCodec, cursorBinding, lockInsertOrder, pageJson } from '@tracking/paging';
import { preparedRows } from '@tracking/database';
import type { EntityManager, Repository } from 'typeorm';
import { ShipmentEntity } from './shipment.entity.js';

/** An RFC 3339 UTC date-time with milliseconds, as `Date.toISOString()` writes it; null stays null. */
const dateTime = (column: string) => `to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;

/**
 * The columns of a shipment as text, in the order of `toShipment`'s fields, for `shipmentJson`: PostgreSQL
 * formats the timestamps and writes tags and metadata as JSON (its text output costs it a fifth of what
 * `json_build_object` does), so that the driver parses nothing.
 */
const SHIPMENT_TEXT_COLUMNS = [
  'id',
  'name',
  'reference',
  'status',
  'mode',
  'carrier',
  'origin_id',
  'destination_id',
  dateTime('planned_departure_at'),
  dateTime('planned_arrival_at'),
  dateTime('departed_at'),
  dateTime('delivered_at'),
  dateTime('completed_at'),
  dateTime('cancelled_at'),
  'array_to_json(tags)::text',
  'metadata::text',
  dateTime('created_at'),
  dateTime('updated_at'),
].join(', ');

type Text = string | null;
type ShipmentTextRow = [seq: string, ...columns: Text[]];

/** A string that may need escaping (names, references, carriers). */
const text = (value: Text) => (value === null ? 'null' : JSON.stringify(value));
/** A string that never needs escaping: a UUID, an enum value, a formatted timestamp. */
const plain = (value: Text) => (value === null ? 'null' : `"${value}"`);

/** The JSON of `toShipment` (same fields, order and formats) from a row of `SHIPMENT_TEXT_COLUMNS`. */
function shipmentJson(row: ShipmentTextRow): string {
  const [, id, name, reference, status, mode, carrier, originId, destinationId] = row;
  const [plannedDepartureAt, plannedArrivalAt, departedAt, deliveredAt, completedAt, cancelledAt] = row.slice(9, 15);
  const [tags, metadata, createdAt, updatedAt] = row.slice(15, 19);
  return (
    `{"id":${plain(id)},"name":${text(name)},"reference":${text(reference)},"status":${plain(status)},` +
    `"mode":${plain(mode)},"carrier":${text(carrier)},"originId":${plain(originId)},"destinationId":${plain(destinationId)},` +
    `"plannedDepartureAt":${plain(plannedDepartureAt)},"plannedArrivalAt":${plain(plannedArrivalAt)},` +
    `"departedAt":${plain(departedAt)},"deliveredAt":${plain(deliveredAt)},"completedAt":${plain(completedAt)},` +
    `"cancelledAt":${plain(cancelledAt)},"tags":${tags},"metadata":${metadata},` +
    `"createdAt":${plain(createdAt)},"updatedAt":${plain(updatedAt)}}`
  );
}

@Injectable()
export class ShipmentRepository {
  constructor(
    @InjectRepository(ShipmentEntity) private readonly shipments: Repository<ShipmentEntity>,
    private readonly cursors: CursorCodec,
  ) {}

  /**
   * Inserts the shipment in one transaction after `prepare`, which may check and lock what it refers to
   * and complete it. The insert-order lock is taken last, so it is held no longer than needed.
   */
  async insert(shipment: Omit<ShipmentEntity, 'seq'>, prepare: (manager: EntityManager) => Promise<void>): Promise<void> {
    await this.shipments.manager.transaction(async (manager) => {
      await prepare(manager);
      await lockInsertOrder(manager, `shipments:${shipment.accountId}`);
      await manager.insert(ShipmentEntity, shipment);
    });
  }

  /**
   * One page of the account's shipments as the API shows them, as JSON text. The hottest read of the API,
   * so it skips TypeORM, entities and `JSON.stringify` of objects: one keyset query, prepared once per
   * connection, whose rows are text that `shipmentJson` strings together.
   */
  async findPageJson(scope: AccountScope, page: PageRequest, filters: ShipmentFilters): Promise<string> {
    // A status list is one filter whatever its order, so its cursor binds the sorted list.
    const binding = cursorBinding('shipments', {
      accountId: scope.accountId,
      status: filters.status && [...filters.status].sort().join(','),
      reference: filters.reference,
      tag: filters.tag,
    });
    const params: unknown[] = [scope.accountId, scope.tenantId];
    const where = ['account_id = $1', 'tenant_id = $2'];
    const add = (condition: (placeholder: string) => string, value: unknown) => {
      params.push(value);
      where.push(condition(`$${params.length}`));
    };
    if (filters.status !== undefined) add((p) => `status = ANY(${p})`, filters.status);
    if (filters.reference !== undefined) add((p) => `reference = ${p}`, filters.reference);
    // Containment rather than `= ANY(tags)`, so that the GIN index on tags serves it.
    if (filters.tag !== undefined) add((p) => `tags @> ARRAY[${p}]::text[]`, filters.tag);
    const filtered = where.join(' AND ');
    const total = page.includeTotal
      ? this.shipments.query(`SELECT count(*)::int AS total FROM shipments WHERE ${filtered}`, [...params])
      : undefined;
    if (page.cursor !== undefined) add((p) => `seq > ${p}`, this.cursors.decode(binding, page.cursor));
    params.push(page.limit + 1);
    const rows = await preparedRows<ShipmentTextRow>(
      this.shipments.manager.connection,
      `SELECT seq, ${SHIPMENT_TEXT_COLUMNS} FROM shipments WHERE ${where.join(' AND ')} ORDER BY seq LIMIT $${params.length}`,
      params,
    );
    const hasMore = rows.length > page.limit;
    if (hasMore) rows.length = page.limit;
    const last = rows.at(-1);
    const metadata: PageMetadata = { nextCursor: hasMore && last ? this.cursors.encode(binding, last[0]) : null };
    if (total !== undefined) metadata.total = ((await total) as { total: number }[])[0]?.total ?? 0;
    return pageJson(rows.map(shipmentJson), metadata);
  }

  findOne(scope: AccountScope, id: string): Promise<ShipmentEntity | null> {
    return this.shipments.findOneBy({ id, accountId: scope.accountId, tenantId: scope.tenantId });
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

  async save(manager: EntityManager, shipment: ShipmentEntity): Promise<void> {
    const { seq: _seq, ...columns } = shipment;
    await manager.update(ShipmentEntity, { id: shipment.id }, columns);
  }

  async delete(manager: EntityManager, shipment: ShipmentEntity): Promise<void> {
    await manager.delete(ShipmentEntity, { id: shipment.id });
  }
}
