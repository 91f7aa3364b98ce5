import { Injectable } from '@nestjs/common';
import {
  type AccountScope,
  CLOSED_SHIPMENT_STATUSES,
  type Conditional,
  type CreateShipmentRequest,
  type DeleteShipmentRequest,
  ErrorCode,
  EventType,
  type ItemPage,
  type ListShipmentsRequest,
  ParameterIssue,
  type Shipment,
  type ShipmentRequest,
  ShipmentStatus,
  type TransitionShipmentRequest,
  type TransitionShipmentResult,
  type UpdateShipmentRequest,
  type Versioned,
} from '@tracking/contracts';
import { DomainError, parseDateTimeField } from '@tracking/core';
import { applyChanges, checkVersion, foreignKeyViolation, uniqueViolation } from '@tracking/database';
import type { EntityManager } from 'typeorm';
import { v7 as uuidv7 } from 'uuid';
import { JsonReply } from '@tracking/messaging';
import { AlertLifecycle } from '../alerts/alert-lifecycle.js';
import { EvaluationRecordRepository } from '../evaluation/evaluation-record.repository.js';
import { DmsClient } from '../dms/dms.client.js';
import type { ShipmentEntity } from './shipment.entity.js';
import { normalizeConditions } from './shipment-conditions.js';
import { recordShipmentEvent, toShipment, transitionEvent } from './shipment-events.js';
import { transitionOf } from './shipment-lifecycle.js';
import { ShipmentRepository } from './shipment.repository.js';

/** The fields that name a point of interest, with the foreign key that guards each. */
const PLACE_FIELDS = { originId: 'shipments_origin_id_fkey', destinationId: 'shipments_destination_id_fkey' } as const;
type PlaceField = keyof typeof PLACE_FIELDS;

@Injectable()
export class ShipmentsService {
  constructor(
    private readonly shipments: ShipmentRepository,
    private readonly dms: DmsClient,
    private readonly alerts: AlertLifecycle,
    private readonly evaluations: EvaluationRecordRepository,
  ) {}

  /** The page as JSON text (see `findPageJson`): passed on, never parsed. */
  async list(request: ListShipmentsRequest): Promise<JsonReply<ItemPage<Shipment>>> {
    return new JsonReply(await this.shipments.findPageJson(request, request.page, request.filters));
  }

  async create(request: CreateShipmentRequest): Promise<Versioned<Shipment>> {
    const input = request.shipment;
    const now = new Date();
    const entity: Omit<ShipmentEntity, 'seq'> = {
      id: uuidv7(),
      tenantId: request.tenantId,
      accountId: request.accountId,
      name: input.name,
      reference: input.reference ?? null,
      status: ShipmentStatus.Planned,
      mode: input.mode ?? null,
      carrier: input.carrier ?? null,
      originId: null,
      destinationId: null,
      plannedDepartureAt: parseDateTimeField('plannedDepartureAt', input.plannedDepartureAt),
      plannedArrivalAt: parseDateTimeField('plannedArrivalAt', input.plannedArrivalAt),
      departedAt: null,
      deliveredAt: null,
      completedAt: null,
      cancelledAt: null,
      tags: input.tags ?? [],
      metadata: input.metadata ?? {},
      autoTransitions: input.autoTransitions ?? false,
      conditions: normalizeConditions(input.conditions),
      excursionTemperatureMs: 0,
      excursionHumidityMs: 0,
      version: 1,
      createdAt: now,
      updatedAt: now,
    };
    checkPlannedWindow(entity);
    await this.shipments
      .insert(
        entity,
        async (manager) => {
          Object.assign(entity, await this.resolvePlaces(manager, request, { originId: input.originId, destinationId: input.destinationId }));
        },
        (manager) => recordShipmentEvent(manager, EventType.ShipmentCreated, entity),
      )
      .catch(rethrowConstraintViolation);
    return { resource: toShipment(entity), version: entity.version };
  }

  async get(request: ShipmentRequest): Promise<JsonReply<Versioned<Shipment>>> {
    const found = await this.shipments.findOneJson(request, request.shipmentId);
    if (!found) throw shipmentNotFound(request.shipmentId);
    return new JsonReply(`{"resource":${found.json},"version":${found.version}}`);
  }

  update(request: UpdateShipmentRequest): Promise<Versioned<Shipment>> {
    const { patch } = request;
    return this.shipments
      .withLockedShipment(request, request.shipmentId, async (shipment, manager) => {
        const open = checkWritable(shipment, request);
        const changed: Partial<ShipmentEntity> = {};
        if (patch.name !== undefined) changed.name = patch.name;
        if (patch.reference !== undefined) changed.reference = patch.reference;
        if (patch.mode !== undefined) changed.mode = patch.mode;
        if (patch.carrier !== undefined) changed.carrier = patch.carrier;
        if (patch.plannedDepartureAt !== undefined) changed.plannedDepartureAt = parseDateTimeField('plannedDepartureAt', patch.plannedDepartureAt);
        if (patch.plannedArrivalAt !== undefined) changed.plannedArrivalAt = parseDateTimeField('plannedArrivalAt', patch.plannedArrivalAt);
        if (patch.tags !== undefined) changed.tags = patch.tags;
        // Metadata is replaced as a whole, like every other field; `{}` clears it.
        if (patch.metadata !== undefined) changed.metadata = patch.metadata;
        if (patch.autoTransitions !== undefined) changed.autoTransitions = patch.autoTransitions;
        // Conditions are replaced as a whole too; null clears them.
        if (patch.conditions !== undefined) changed.conditions = normalizeConditions(patch.conditions);
        // The rule holds for the pair the shipment ends up with, whichever of the two the patch changes.
        checkPlannedWindow({ ...open, ...changed });
        Object.assign(changed, await this.resolvePlaces(manager, request, { originId: patch.originId, destinationId: patch.destinationId }));
        // A patch that changes nothing writes nothing and records no event.
        if (applyChanges(open, changed)) {
          await this.shipments.save(manager, open);
          await recordShipmentEvent(manager, EventType.ShipmentUpdated, open);
          // New conditions may make SignalLoss due at another moment: the evaluation's timers look again.
          if (changed.conditions !== undefined) await this.evaluations.poke(manager, { ...request, shipmentId: open.id });
        }
        return { resource: toShipment(open), version: open.version };
      })
      .catch(rethrowConstraintViolation);
  }

  delete(request: DeleteShipmentRequest): Promise<void> {
    return this.shipments.withLockedShipment(request, request.shipmentId, async (shipment, manager) => {
      const open = checkWritable(shipment, request);
      await this.releaseDevices(open);
      // Alerts outlive the shipment, closed now (docs/alerts-and-visits.md); its visits go with it.
      await this.alerts.close(manager, { shipmentId: open.id }, new Date());
      await this.shipments.delete(manager, open);
      await recordShipmentEvent(manager, EventType.ShipmentDeleted, open);
    });
  }

  /**
   * Moves the shipment along its lifecycle (`shipment-lifecycle.ts`). The row lock makes concurrent
   * actions on one shipment take turns: the first wins, the others find the new status and get 409.
   */
  transition(request: TransitionShipmentRequest): Promise<TransitionShipmentResult> {
    return this.shipments.withLockedShipment(request, request.shipmentId, async (shipment, manager) => {
      if (!shipment) throw shipmentNotFound(request.shipmentId);
      checkVersion('shipment', shipment, request.expectedVersion);
      const { to, stamp } = transitionOf(shipment.status, request.action);
      if (CLOSED_SHIPMENT_STATUSES.includes(to)) await this.releaseDevices(shipment);
      const now = new Date();
      Object.assign(shipment, { status: to, [stamp]: now, version: shipment.version + 1, updatedAt: now });
      await this.shipments.save(manager, shipment);
      await recordShipmentEvent(manager, transitionEvent(to), shipment);
      // Starting arms SignalLoss; closing ends the evaluation: the evaluation's timers look at it now.
      await this.evaluations.poke(manager, { ...request, shipmentId: shipment.id });
      // A closed shipment is no longer evaluated: its open alerts end at the moment it closed.
      if (CLOSED_SHIPMENT_STATUSES.includes(to)) await this.alerts.close(manager, { shipmentId: shipment.id }, now);
      return { version: shipment.version };
    });
  }

  /**
   * Frees every device of a shipment that closes (complete, cancel) or goes away (delete), before the
   * transaction that holds the shipment `FOR UPDATE` commits (docs/api.md, "Shipments"). The DMS owns the links,
   * so this is a call to it. Trade-off, decided on purpose: when the DMS fails (503 unavailable, 504
   * timeout), the error propagates, the OMS transaction rolls back and the client gets that failure; the
   * shipment does not close or go away while its devices would stay linked to it. A DMS outage thus blocks
   * closing shipments. The DMS commits a release only before the deadline the call carries, so a 504
   * normally means it released nothing; if it did release the devices and this transaction still failed,
   * the shipment stays open with no devices, the client's retry closes it, and the DMS's record of the
   * release does not refuse later assignments to the open shipment (`ReleasedTargets` in the DMS).
   */
  private async releaseDevices(shipment: ShipmentEntity): Promise<void> {
    const { tenantId, accountId, id: shipmentId } = shipment;
    await this.dms.release({ tenantId, accountId, shipmentId });
  }

  /**
   * The point-of-interest references among `places` that are set, checked against the account and
   * locked until the transaction ends; a well-formed id that names none is 400 UnknownReference.
   */
  private async resolvePlaces(
    manager: EntityManager,
    scope: AccountScope,
    places: Partial<Record<PlaceField, string | null>>,
  ): Promise<Partial<Record<PlaceField, string | null>>> {
    const given = Object.entries(places).filter((entry): entry is [PlaceField, string | null] => entry[1] !== undefined);
    const ids = given.flatMap(([, id]) => (id === null ? [] : [id.toLowerCase()]));
    const found = await this.shipments.lockPointsOfInterest(manager, scope, [...new Set(ids)]);
    const resolved: Partial<Record<PlaceField, string | null>> = {};
    for (const [field, id] of given) {
      if (id !== null && !found.has(id.toLowerCase())) throw unknownPlace(field);
      resolved[field] = id === null ? null : id.toLowerCase();
    }
    return resolved;
  }
}

/** The shipment when it exists, If-Match holds and it is not closed; else 404, 412 or 409 ShipmentClosed. */
function checkWritable(shipment: ShipmentEntity | null, request: ShipmentRequest & Conditional): ShipmentEntity {
  if (!shipment) throw shipmentNotFound(request.shipmentId);
  checkVersion('shipment', shipment, request.expectedVersion);
  if (CLOSED_SHIPMENT_STATUSES.includes(shipment.status)) {
    throw new DomainError(ErrorCode.ShipmentClosed, `The shipment is ${shipment.status} and can no longer be changed.`);
  }
  return shipment;
}

function shipmentNotFound(id: string): DomainError {
  return new DomainError(ErrorCode.ShipmentNotExists, `Shipment ${id} does not exist in this account.`);
}

function unknownPlace(field: PlaceField): DomainError {
  return DomainError.invalidParameter(field, ParameterIssue.UnknownReference, `${field} is not a point of interest of this account.`);
}

/** 400 OutOfRange on `plannedArrivalAt` when the planned arrival is before the planned departure. */
function checkPlannedWindow(shipment: Pick<ShipmentEntity, 'plannedDepartureAt' | 'plannedArrivalAt'>): void {
  const { plannedDepartureAt: departure, plannedArrivalAt: arrival } = shipment;
  if (departure !== null && arrival !== null && arrival.getTime() < departure.getTime()) {
    throw DomainError.invalidParameter('plannedArrivalAt', ParameterIssue.OutOfRange, 'plannedArrivalAt must not be before plannedDepartureAt.');
  }
}

/**
 * The constraint violations a concurrent writer can cause despite the checks above, as the errors
 * those checks give: a reference taken meanwhile, or a point of interest deleted meanwhile.
 */
function rethrowConstraintViolation(error: unknown): never {
  if (uniqueViolation(error) === 'shipments_account_reference_key') {
    throw new DomainError(ErrorCode.DuplicateReference, 'Another shipment of this account already has this reference.');
  }
  const foreignKey = foreignKeyViolation(error);
  const field = (Object.keys(PLACE_FIELDS) as PlaceField[]).find((place) => PLACE_FIELDS[place] === foreignKey);
  if (field) throw unknownPlace(field);
  throw error;
}
