import { Inject, Injectable, type OnApplicationShutdown } from '@nestjs/common';
import type { NatsConnection } from '@nats-io/transport-node';
import {
  type AssignDeviceRequest,
  type ReleaseDevicesRequest,
  type ReleaseDevicesResult,
  Subjects,
  type UnassignDeviceRequest,
} from '@tracking/contracts';
import { NatsRpcClient } from '@tracking/messaging';
import type { OmsConfig } from '../config.js';

export const OMS_CONFIG = Symbol('OMS_CONFIG');
export const DMS_NATS_CONNECTION = Symbol('DMS_NATS_CONNECTION');

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
  ) {
    this.timeoutMs = config.OMS_RPC_TIMEOUT_MS;
    this.rpc = new NatsRpcClient(connection, config.NATS_SUBJECT_PREFIX, this.timeoutMs);
  }

  /** Links a device; the DMS commits only before a deadline well inside our own timeout. */
  async assign(request: Omit<AssignDeviceRequest, 'deadline'>): Promise<void> {
    // The margin covers the reply's way back and clock skew between the OMS and DMS hosts.
    const deadline = Date.now() + this.timeoutMs - Math.min(1000, this.timeoutMs / 4);
    await this.rpc.call<null>(Subjects.dms.devices.assign, { ...request, deadline } satisfies AssignDeviceRequest);
  }

  async unassign(request: UnassignDeviceRequest): Promise<void> {
    await this.rpc.call<null>(Subjects.dms.devices.unassign, request);
  }

  /** Unlinks every device of the shipment, or of one of its sets. */
  async release(request: ReleaseDevicesRequest): Promise<void> {
    await this.rpc.call<ReleaseDevicesResult>(Subjects.dms.devices.release, request);
  }

  async onApplicationShutdown(): Promise<void> {
    if (!this.connection.isClosed()) await this.connection.drain();
  }
}
