import { randomUUID } from 'node:crypto';
import { Controller, type INestMicroservice, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { Payload } from '@nestjs/microservices';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import {
  type DeleteShipmentRequest,
  type Device,
  type DeviceRequest,
  ErrorCode,
  type ItemPage,
  type ReplyOf,
  type RequestOf,
  type Shipment,
  type ShipmentRequest,
  Subjects,
  type Versioned,
} from '@tracking/contracts';
import { createLogger, DomainError } from '@tracking/core';
import { Handles, type JsonBytes, JsonReply, NatsRpcClient, PrefixedNatsServer, RpcErrorFilter } from '@tracking/messaging';
import { afterAll, beforeAll, describe, expect, expectTypeOf, inject, it } from 'vitest';

const NATS_URL = process.env.NATS_URL ?? 'nats://127.0.0.1:4222';

/** What the handlers below were sent, in order. */
const received: unknown[] = [];
let setDeletes = 0;

@Controller()
class ReplyLessHandlers {
  /** Returns nothing, as every handler whose contract replies nothing does. */
  @Handles(Subjects.oms.shipments.delete)
  async delete(@Payload() request: DeleteShipmentRequest): Promise<void> {
    received.push(request);
  }

  /** Returns nothing without a promise. */
  @Handles(Subjects.oms.sets.delete)
  deleteSet(): void {
    setDeletes += 1;
  }

  /** Fails: the empty reply must not hide an error. */
  @Handles(Subjects.oms.items.delete)
  async deleteItem(): Promise<void> {
    throw new DomainError(ErrorCode.PreconditionFailed, 'stale');
  }
}

@Module({ controllers: [ReplyLessHandlers] })
class ReplyLessModule {}

/**
 * Every NATS hop has one contract (`Contracts`): the client infers the request it accepts and the reply
 * it returns from the subject, `@Handles` checks the handler against the same contract, and a handler
 * that returns nothing answers its caller with an empty reply rather than a packet the caller refuses.
 */
describe('NATS hop contracts', () => {
  const prefix = `test.${inject('runId')}.hop.${process.pid}.`;
  let app: INestMicroservice;
  let client: NatsConnection;
  let rpc: NatsRpcClient;
  const scope = { tenantId: randomUUID(), accountId: randomUUID() };

  beforeAll(async () => {
    app = await NestFactory.createMicroservice(ReplyLessModule, {
      strategy: new PrefixedNatsServer(prefix, { servers: NATS_URL }),
      logger: false,
    });
    app.useGlobalFilters(new RpcErrorFilter(createLogger('hop-contracts', 'silent')));
    await app.listen();
    client = await connect({ servers: NATS_URL });
    rpc = new NatsRpcClient(client, prefix, 5000);
  });
  afterAll(async () => {
    await app?.close();
    await client?.close();
  });

  it('answers a handler that returns nothing with an empty reply (null), not an unusable packet (502)', async () => {
    const request = { ...scope, shipmentId: randomUUID(), expectedVersion: 3 };
    await expect(rpc.call(Subjects.oms.shipments.delete, request)).resolves.toBeNull();
    expect(received).toEqual([request]);
    await expect(rpc.call(Subjects.oms.sets.delete, { ...scope, shipmentId: randomUUID(), setId: randomUUID(), expectedVersion: 1 })).resolves.toBeNull();
    expect(setDeletes).toBe(1);
  });

  it('gives callJson the empty reply as JSON null', async () => {
    const json = await rpc.callJson(Subjects.oms.shipments.delete, { ...scope, shipmentId: randomUUID(), expectedVersion: 1 });
    expect(json.toString('utf8')).toBe('null');
  });

  it('still passes the error of a reply-less handler that fails', async () => {
    const request = { ...scope, shipmentId: randomUUID(), setId: randomUUID(), itemId: randomUUID(), expectedVersion: 1 };
    await expect(rpc.call(Subjects.oms.items.delete, request)).rejects.toMatchObject({ code: ErrorCode.PreconditionFailed });
  });

  it('infers request and reply types from the subject', () => {
    expectTypeOf<RequestOf<typeof Subjects.oms.shipments.get>>().toEqualTypeOf<ShipmentRequest>();
    expectTypeOf<ReplyOf<typeof Subjects.oms.shipments.get>>().toEqualTypeOf<Versioned<Shipment>>();
    expectTypeOf<ReplyOf<typeof Subjects.dms.devices.get>>().toEqualTypeOf<Versioned<Device>>();
    expectTypeOf(inferredReplies).returns.toEqualTypeOf<readonly [Promise<Versioned<Shipment>>, Promise<JsonBytes<ItemPage<Shipment>>>, Promise<void>]>();
  });
});

/** The replies `call` and `callJson` infer (checked above, never run). */
function inferredReplies(rpc: NatsRpcClient, shipment: ShipmentRequest, list: RequestOf<typeof Subjects.oms.shipments.list>) {
  return [
    rpc.call(Subjects.oms.shipments.get, shipment),
    rpc.callJson(Subjects.oms.shipments.list, list),
    rpc.call(Subjects.oms.shipments.delete, { ...shipment, expectedVersion: 1 }),
  ] as const;
}

/**
 * Compiled only (`tsc -p tsconfig.spec.json`, part of `npm run lint`), never run: each line under a
 * `@ts-expect-error` must fail to compile, or the compiler reports the directive as unused.
 */
export function wrongHopsDoNotCompile(rpc: NatsRpcClient, shipment: ShipmentRequest, device: DeviceRequest): unknown[] {
  // @ts-expect-error a device request on a shipment subject
  const wrongRequest = rpc.call(Subjects.oms.shipments.get, device);
  // @ts-expect-error the reply of a shipment subject is a shipment, not a device
  const wrongReply: Promise<Versioned<Device>> = rpc.call(Subjects.oms.shipments.get, shipment);
  // @ts-expect-error a subject that is not in the contracts
  const unknownSubject = rpc.call('oms.shipments.archive', shipment);
  // @ts-expect-error a caller can no longer choose the reply type
  const chosenReply = rpc.call<Versioned<Device>>(Subjects.oms.shipments.get, shipment);
  // @ts-expect-error callJson checks the request too
  const wrongJsonRequest = rpc.callJson(Subjects.oms.shipments.list, shipment);

  class WrongHandlers {
    // @ts-expect-error the payload is not the subject's request
    @Handles(Subjects.oms.shipments.get)
    wrongPayload(request: DeviceRequest): Promise<Versioned<Shipment>> {
      return Promise.resolve({ version: 1, id: request.deviceId } as never);
    }

    // @ts-expect-error the reply is not the subject's reply
    @Handles(Subjects.oms.shipments.get)
    wrongReply(request: ShipmentRequest): Promise<Versioned<Device>> {
      return Promise.resolve({ id: request.shipmentId } as never);
    }

    // @ts-expect-error an encoded reply of the wrong type
    @Handles(Subjects.dms.devices.list)
    wrongJsonReply(): JsonReply<ItemPage<Shipment>> {
      return new JsonReply('[]');
    }

    // @ts-expect-error a subject whose contract replies something cannot reply nothing
    @Handles(Subjects.oms.shipments.get)
    async nothing(): Promise<void> {
      await Promise.resolve();
    }
  }
  return [wrongRequest, wrongReply, unknownSubject, chosenReply, wrongJsonRequest, WrongHandlers];
}
