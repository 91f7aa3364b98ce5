import { Inject, Injectable, type OnApplicationShutdown } from '@nestjs/common';
import type { NatsConnection } from '@nats-io/transport-node';
import {
  type AssignDeviceRequest,
  type LinkEntry,
  type OperationChunk,
  type OperationChunkResult,
  type PurgeOperationsRequest,
  type Reading,
  type ReleaseDevicesRequest,
  type RetireEntry,
  type SettleOperationRequest,
  type ShipmentReadingKey,
  Subjects,
  type UnassignDeviceRequest,
} from '@tracking/contracts';
import { NatsRpcClient } from '@tracking/messaging';
import { ServiceMetrics } from '@tracking/observability';
import type { OmsConfig } from '../config.js';
import { OMS_CONFIG } from '../tokens.js';

export const DMS_NATS_CONNECTION = Symbol('DMS_NATS_CONNECTION');

/**
 * Readings per page of `shipmentReadings`: some 700 KB of JSON for readings of a few measurements, under
 * NATS's default 1 MiB payload (the DMS ends a page of more precise, longer readings early).
 */
export const SHIPMENT_READINGS_PAGE = 2000;

/**
 * The OMS's calls to the DMS, which owns the device-to-set link. The OMS makes them inside its own
 * transaction, with the shipment locked, so a failure here (503 no DMS, 504 timeout, or the DMS's own
 * 4xx) rolls the OMS write back and reaches the client unchanged.
 *
 * It has its own NATS connection: the microservice's server connection is not reachable from providers.
 */
@Injectable()
export class DmsClient implements OnApplicationShutdown {
  private readonly rpc: NatsRpcClient;
  private readonly timeoutMs: number;

  constructor(
    @Inject(DMS_NATS_CONNECTION) private readonly connection: NatsConnection,
    @Inject(OMS_CONFIG) config: OmsConfig,
    metrics: ServiceMetrics,
  ) {
    this.timeoutMs = config.OMS_RPC_TIMEOUT_MS;
    // Each call carries the request id of the message or job it is made for (the request context).
    this.rpc = new NatsRpcClient(connection, config.NATS_SUBJECT_PREFIX, this.timeoutMs, metrics, config.NATS_INBOX_PREFIX);
  }

  /**
   * Links a device; the DMS commits only before a deadline well inside our own timeout. Called once the
   * shipment and set are checked under their locks, which is the `checkedAt` the DMS weighs its released
   * shipments and sets against.
   */
  async assign(request: Omit<AssignDeviceRequest, 'deadline' | 'checkedAt'>): Promise<void> {
    const checked = { ...request, deadline: this.deadline(), checkedAt: Date.now() };
    await this.rpc.call(Subjects.dms.devices.assign, checked);
  }

  /** Decides a chunk of a bulk assignment (with the same deadline, and `checkedAt`, as a single link). */
  linkChunk(request: Omit<OperationChunk<LinkEntry>, 'deadline' | 'checkedAt'>): Promise<OperationChunkResult> {
    return this.rpc.call(Subjects.dms.operations.link, { ...request, deadline: this.deadline(), checkedAt: Date.now() });
  }

  /** Decides a chunk of a bulk retirement. */
  retireChunk(request: Omit<OperationChunk<RetireEntry>, 'deadline'>): Promise<OperationChunkResult> {
    return this.rpc.call(Subjects.dms.operations.retire, { ...request, deadline: this.deadline() });
  }

  /** Closes a cancelled operation on the DMS side and returns what it recorded from `fromIndex` on. */
  settle(request: SettleOperationRequest): Promise<OperationChunkResult> {
    return this.rpc.call(Subjects.dms.operations.settle, request);
  }

  /** Deletes what the DMS recorded of finished operations (the OMS's retention). */
  async purgeOperations(request: PurgeOperationsRequest): Promise<void> {
    await this.rpc.call(Subjects.dms.operations.purge, request);
  }

  /** The margin covers the reply's way back and clock skew between the OMS and DMS hosts. */
  private deadline(): number {
    return Date.now() + this.timeoutMs - Math.min(1000, this.timeoutMs / 4);
  }

  /** Unlinks a device, before the same deadline as a link. */
  async unassign(request: Omit<UnassignDeviceRequest, 'deadline'>): Promise<void> {
    await this.rpc.call(Subjects.dms.devices.unassign, { ...request, deadline: this.deadline() });
  }

  /**
   * Unlinks every device of the shipment, or of one of its sets, before the same deadline: a release the
   * DMS gets to only after we gave up (and rolled the close back) changes nothing.
   */
  async release(request: Omit<ReleaseDevicesRequest, 'deadline'>): Promise<void> {
    await this.rpc.call(Subjects.dms.devices.release, { ...request, deadline: this.deadline() });
  }

  /**
   * Every reading the shipment's devices recorded while assigned to it, `recordedAt >= from` (epoch ms),
   * in (recordedAt, deviceId) order: page after page of `dms.readings.ofShipment`, each call with the
   * client's own timeout. An unknown shipment has none.
   */
  async shipmentReadings(request: { tenantId: string; accountId: string; shipmentId: string; from: number }): Promise<Reading[]> {
    const readings: Reading[] = [];
    let after: ShipmentReadingKey | undefined;
    do {
      const page = await this.rpc.call(Subjects.dms.readings.ofShipment, { ...request, limit: SHIPMENT_READINGS_PAGE, ...(after ? { after } : {}) });
      for (const reading of page.readings) readings.push(reading);
      after = page.next ?? undefined;
    } while (after);
    return readings;
  }

  async onApplicationShutdown(): Promise<void> {
    if (!this.connection.isClosed()) await this.connection.drain();
  }
}
