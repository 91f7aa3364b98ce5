import { Injectable } from '@nestjs/common';
import {
  DeviceStatus,
  type EntryOutcome,
  EventType,
  type LinkEntry,
  type OperationChunk,
  type OperationChunkResult,
  type PurgeOperationsRequest,
  type RetireEntry,
  type SettleOperationRequest,
} from '@tracking/contracts';
import { DomainError } from '@tracking/core';
import { isLockTimeout } from '@tracking/database';
import { recordEvents } from '@tracking/outbox';
import type { EntityManager } from 'typeorm';
import { checkAvailable, checkLinkable, checkNotReleased, tooLate } from '../devices/device-rules.js';
import type { DeviceEntity } from '../devices/device.entity.js';
import { DeviceRepository } from '../devices/device.repository.js';
import { deviceEvent, linkEvent } from '../devices/devices.service.js';
import { OperationChunkRepository } from './operation-chunk.repository.js';

/**
 * Decides chunks of bulk operations: each entry by the same rules as its single call (device-rules.ts),
 * all entries of a chunk in one transaction with their outcomes recorded beside their effects. Entries
 * already recorded are answered from the record and not applied again.
 */
@Injectable()
export class OperationChunksService {
  constructor(
    private readonly chunks: OperationChunkRepository,
    private readonly devices: DeviceRepository,
  ) {}

  /** Links devices to sets, as `PUT .../sets/{setId}/devices/{deviceId}` would, one entry after the other. */
  link(request: OperationChunk<LinkEntry>): Promise<OperationChunkResult> {
    return this.decide(request, async ({ manager, fresh }) => {
      const targets = fresh.flatMap((entry) => (entry.target ? [{ ...entry.target, index: entry.index, deviceId: entry.deviceId }] : []));
      const released = await this.chunks.lockLinkTargets(
        manager,
        targets.map((t) => t.shipmentId),
        targets.flatMap((t) => [t.shipmentId, t.setId]),
        request.checkedAt,
      );
      const devices = byId(await this.devices.lockForChunk(manager, request, targets.map((t) => t.deviceId)));
      const links = new Map<string, { id: string; shipmentId: string; setId: string }>();
      const outcomes = targets.map((target) =>
        judge(target.index, () => {
          const releasedTarget = released.has(target.shipmentId) ? 'shipment' : released.has(target.setId) ? 'set' : null;
          checkNotReleased(releasedTarget, target.setId);
          const { device, changes } = checkLinkable(devices.get(target.deviceId) ?? null, target);
          if (!changes) return;
          // Later entries of the chunk see this link, as later single calls would.
          Object.assign(device, { status: DeviceStatus.Assigned, shipmentId: target.shipmentId, setId: target.setId });
          links.set(device.id, { id: device.id, shipmentId: target.shipmentId, setId: target.setId });
        }),
      );
      await this.devices.linkAll(manager, [...links.values()]);
      // One `device.assigned` per device linked or moved, as its single call would record; one statement.
      await recordEvents(
        manager,
        [...links.values()].map(({ id: deviceId, shipmentId, setId }) => linkEvent(EventType.DeviceAssigned, request, { deviceId, shipmentId, setId })),
      );
      return outcomes;
    });
  }

  /** Retires devices, as `POST .../devices/{deviceId}/retire` would. */
  retire(request: OperationChunk<RetireEntry>): Promise<OperationChunkResult> {
    return this.decide(request, async ({ manager, fresh }) => {
      const devices = byId(await this.devices.lockForChunk(manager, request, fresh.map((entry) => entry.deviceId)));
      const retired = new Map<string, DeviceEntity>();
      const now = new Date();
      const outcomes = fresh.map((entry) =>
        judge(entry.index, () => {
          const device = checkAvailable(devices.get(entry.deviceId) ?? null, entry, 'retired');
          Object.assign(device, { status: DeviceStatus.Retired, retiredAt: now, version: device.version + 1, updatedAt: now });
          retired.set(device.id, device);
        }),
      );
      await this.devices.retireAll(manager, [...retired.keys()], now);
      // One `device.retired` per device retired, the device as GET then shows it; one statement.
      await recordEvents(manager, [...retired.values()].map((device) => deviceEvent(EventType.DeviceRetired, device)));
      return outcomes;
    });
  }

  /** Closes the operation and returns what was recorded from `fromIndex` on. */
  async settle(request: SettleOperationRequest): Promise<OperationChunkResult> {
    return { outcomes: await this.chunks.settle(request.operationId, request.fromIndex) };
  }

  /** Forgets finished operations: the OMS deletes them next and never sends chunks of them again. */
  purge(request: PurgeOperationsRequest): Promise<void> {
    return this.chunks.purge(request.operationIds);
  }

  /**
   * The frame of every chunk: the entries recorded earlier are answered from the record; `work` decides
   * the others (those the OMS has not refused itself), whose outcomes are recorded in the same
   * transaction, which commits only before the deadline.
   */
  private async decide<E extends { index: number; target?: unknown }>(
    request: OperationChunk<E>,
    work: (chunk: { manager: EntityManager; fresh: E[] }) => Promise<EntryOutcome[]>,
  ): Promise<OperationChunkResult> {
    const indexes = request.entries.map((entry) => entry.index);
    try {
      return await this.chunks.withChunk(request.operationId, indexes, request.deadline, async ({ manager, recorded }) => {
        const fresh = request.entries.filter((entry) => !recorded.has(entry.index) && entry.target !== null);
        const decided = await work({ manager, fresh });
        await this.chunks.recordOutcomes(manager, request.operationId, decided);
        // As for a single link: after the deadline the OMS has stopped waiting, so nothing may commit.
        if (Date.now() > request.deadline) throw tooLate();
        return { outcomes: [...recorded.values(), ...decided] };
      });
    } catch (error) {
      throw isLockTimeout(error) ? tooLate() : error;
    }
  }
}

function byId(devices: DeviceEntity[]): Map<string, DeviceEntity> {
  return new Map(devices.map((device) => [device.id, device]));
}

/** The outcome of one entry: the domain error its rules raised, or success. */
function judge(index: number, decide: () => void): EntryOutcome {
  try {
    decide();
    return { index, error: null };
  } catch (error) {
    if (error instanceof DomainError) return { index, error: { code: error.code, message: error.message } };
    throw error;
  }
}
