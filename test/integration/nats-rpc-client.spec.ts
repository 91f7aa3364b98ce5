import { connect, type Msg, type NatsConnection } from '@nats-io/transport-node';
import { ErrorCode, Subjects } from '@tracking/contracts';
import { NatsRpcClient, RPC_MAX_WAITING } from '@tracking/messaging';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';

const NATS_URL = process.env.NATS_URL ?? 'nats://127.0.0.1:4222';
const SUBJECT = Subjects.oms.shipments.get;
// The responders here answer whatever they are sent, so the requests are not the subject's contract (`as never`).

/** A Nest packet answering `response`, as a service sends it. */
const packet = (response: unknown) => JSON.stringify({ id: 'x', response, isDisposed: true });

/**
 * NatsRpcClient against the real NATS server, with a responder of our own on this file's own subject
 * prefix: replies find their request whatever their order, and every way a reply can fail to come maps
 * to its public error code.
 */
describe('NatsRpcClient', () => {
  const prefix = `test.${inject('runId')}.rpc.${process.pid}.`;
  let client: NatsConnection;
  let responder: NatsConnection;

  beforeAll(async () => {
    [client, responder] = await Promise.all([connect({ servers: NATS_URL }), connect({ servers: NATS_URL })]);
  });
  afterAll(async () => {
    await Promise.all([client.close(), responder.close()]);
  });

  /** Holds every request until `count` have arrived, then answers them in reverse order with their own number. */
  function answerInReverse(count: number) {
    const held: Msg[] = [];
    return responder.subscribe(prefix + SUBJECT, {
      max: count,
      callback: (_error, request) => {
        held.push(request);
        if (held.length < count) return;
        for (const message of held.reverse()) {
          const { data } = JSON.parse(message.string()) as { data: { n: number } };
          message.respond(packet({ n: data.n }));
        }
      },
    });
  }

  it('gives each of many concurrent calls its own reply, answered in any order', async () => {
    const rpc = new NatsRpcClient(client, prefix, 5000);
    answerInReverse(200);
    await responder.flush();
    const answers = await Promise.all(Array.from({ length: 200 }, (_, n) => rpc.call(SUBJECT, { n } as never)));
    expect(answers).toEqual(Array.from({ length: 200 }, (_, n) => ({ n })));
  });

  it('fails a call with GatewayTimeout when no reply comes in time, drops the late reply, and answers the next call', async () => {
    const rpc = new NatsRpcClient(client, prefix, 5000);
    let late: Msg | undefined;
    const slow = responder.subscribe(prefix + SUBJECT, {
      max: 1,
      callback: (_error, request) => {
        late = request;
      },
    });
    await responder.flush();
    await expect(rpc.call(SUBJECT, { n: 1 } as never, { timeoutMs: 200 })).rejects.toMatchObject({ code: ErrorCode.GatewayTimeout });
    expect(late).toBeDefined();
    await slow.closed;

    answerInReverse(1);
    await responder.flush();
    // The late reply reaches the client's inbox before the next call's reply, and must not answer it.
    late!.respond(packet({ n: 'late' }));
    expect(await rpc.call(SUBJECT, { n: 2 } as never)).toEqual({ n: 2 });
  });

  it('fails at once with ServiceUnavailable when no service subscribes to the subject', async () => {
    const rpc = new NatsRpcClient(client, `${prefix}nobody.`, 60000);
    await expect(rpc.call(SUBJECT, {} as never)).rejects.toMatchObject({ code: ErrorCode.ServiceUnavailable });
  });

  it('fails waiting calls and later ones with ServiceUnavailable when its connection closes', async () => {
    const own = await connect({ servers: NATS_URL });
    const rpc = new NatsRpcClient(own, prefix, 60000);
    let received!: () => void;
    const arrived = new Promise<void>((resolve) => (received = resolve));
    const silent = responder.subscribe(prefix + SUBJECT, { max: 1, callback: () => received() });
    await responder.flush();
    const waiting = rpc.call(SUBJECT, {} as never);
    await arrived;
    await own.close();
    await expect(waiting).rejects.toMatchObject({ code: ErrorCode.ServiceUnavailable });
    await expect(rpc.call(SUBJECT, {} as never)).rejects.toMatchObject({ code: ErrorCode.ServiceUnavailable });
    await silent.closed;
  });

  it(`refuses a call beyond ${RPC_MAX_WAITING} waiting with ServiceUnavailable, without failing those that wait`, async () => {
    const own = await connect({ servers: NATS_URL });
    const rpc = new NatsRpcClient(own, `${prefix}full.`, 60000);
    let arrived = 0;
    let allArrived!: () => void;
    const all = new Promise<void>((resolve) => (allArrived = resolve));
    const silent = responder.subscribe(`${prefix}full.${SUBJECT}`, {
      callback: () => {
        if (++arrived === RPC_MAX_WAITING) allArrived();
      },
    });
    await responder.flush();
    const waiting = Array.from({ length: RPC_MAX_WAITING }, () => rpc.call(SUBJECT, {} as never));
    await expect(rpc.call(SUBJECT, {} as never)).rejects.toMatchObject({ code: ErrorCode.ServiceUnavailable, message: expect.stringContaining('Too many requests') });
    // The refused call took no place from them: every one of them was sent and still waits.
    await all;
    let settled = 0;
    for (const call of waiting) void call.catch(() => settled++);
    await new Promise((resolve) => setImmediate(resolve));
    expect(settled).toBe(0);
    await own.close();
    const outcomes = await Promise.allSettled(waiting);
    expect(outcomes.every((outcome) => outcome.status === 'rejected' && (outcome.reason as { code: string }).code === ErrorCode.ServiceUnavailable)).toBe(true);
    silent.unsubscribe();
  });

  it('never sends a call it has failed: one made in the turn its connection closes reaches no service', async () => {
    const own = await connect({ servers: NATS_URL });
    const rpc = new NatsRpcClient(own, prefix, 60000);
    const first = new Promise<string>((resolve) =>
      responder.subscribe(prefix + SUBJECT, { max: 1, callback: (_error, message) => resolve(message.string()) }),
    );
    await responder.flush();
    const doomed = rpc.call(SUBJECT, { n: 'doomed' } as never);
    const closing = own.close();
    await expect(doomed).rejects.toMatchObject({ code: ErrorCode.ServiceUnavailable });
    await closing;
    // Whatever the closed connection could still have sent was sent before this.
    client.publish(prefix + SUBJECT, 'sentinel');
    expect(await first).toBe('sentinel');
  });
});
