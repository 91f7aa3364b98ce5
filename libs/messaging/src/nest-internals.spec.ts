import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { ServerNats } from '@nestjs/microservices';
import { of } from 'rxjs';
import { describe, expect, it } from 'vitest';

/**
 * Pins on the parts of Nest's NATS transport that `PrefixedNatsServer` and `NatsRpcClient` override or
 * imitate. None of them is a documented extension point, so each test states the precondition its
 * override relies on and names the Nest version it was checked against: when an upgrade breaks one,
 * the failure says which override to re-check.
 */
const WRITTEN_AGAINST = '12.1.1';
const packageJson = join(dirname(createRequire(import.meta.url).resolve('@nestjs/microservices')), 'package.json');
const installed = (JSON.parse(readFileSync(packageJson, 'utf8')) as { version: string }).version;

/** The source of one of Nest's methods, to check the calls an override relies on. */
const source = (name: keyof ServerNats): string => String((ServerNats.prototype as unknown as Record<string, unknown>)[name]);

function recheck(override: string): string {
  return `@nestjs/microservices ${installed} (overrides written against ${WRITTEN_AGAINST}): re-check ${override} in libs/messaging/src`;
}

describe(`Nest internals the NATS transport relies on (written against @nestjs/microservices ${WRITTEN_AGAINST})`, () => {
  it('is the version the overrides were checked against', () => {
    expect(
      installed,
      recheck(
        'every override of PrefixedNatsServer (createNatsClient, start, bindEvents, getRouteFromPattern, handleMessage, getPublisher, close) and the packet format of NatsRpcClient and respondJson',
      ),
    ).toBe(WRITTEN_AGAINST);
  });

  it('listens by creating the client, then start(callback), which binds the subscriptions through getMessageHandler', () => {
    expect(source('listen'), recheck('PrefixedNatsServer.createNatsClient and start')).toMatch(/this\.natsClient = await this\.createNatsClient\(\)[\s\S]*this\.start\(callback\)/);
    expect(source('start'), recheck('PrefixedNatsServer.start (it replaces bindEvents + callback)')).toMatch(/this\.bindEvents\(this\.natsClient\)/);
    expect(source('bindEvents'), recheck('PrefixedNatsServer.bindEvents (prefix, queue from handler extras)')).toMatch(/this\.getMessageHandler\(channel\)[\s\S]*handlerRef\.extras\?\.queue/);
    expect(source('getMessageHandler'), recheck('PrefixedNatsServer.bindEvents')).toMatch(/this\.handleMessage\(channel, message\)/);
  });

  it('handles a message by asking getPublisher for its reply function, then routing by channel', () => {
    const handleMessage = source('handleMessage');
    expect(handleMessage, recheck('PrefixedNatsServer.handleMessage and getPublisher (metrics, request context, batched replies)')).toMatch(
      /this\.getPublisher\(natsMsg, message\.id, natsCtx\)/,
    );
    expect(handleMessage, recheck('PrefixedNatsServer.getRouteFromPattern')).toMatch(/this\.getHandlerByPattern\(channel\)/);
    expect(String(Object.getPrototypeOf(ServerNats.prototype).getHandlerByPattern), recheck('PrefixedNatsServer.getRouteFromPattern')).toMatch(
      /this\.getRouteFromPattern\(pattern\)/,
    );
  });

  it('publishes a reply by serializing the packet with its id and responding on the message', () => {
    expect(source('getPublisher'), recheck('PrefixedNatsServer.getPublisher and respondJson (they write the same packet)')).toMatch(
      /Object\.assign\(response, \{ id \}\)[\s\S]*this\.serializer\.serialize\(response\)[\s\S]*natsMsg\.respond\(/,
    );
  });

  it('sends a handler result as a packet { response } and ends with isDisposed, keeping an undefined response as a key', async () => {
    const server = new ServerNats({ servers: 'nats://127.0.0.1:1' });
    const packets: object[] = [];
    const done = new Promise<void>((resolve) => {
      server.send(of(undefined), (packet) => {
        packets.push(packet);
        resolve();
      });
    });
    await done;
    const [packet] = packets;
    // `withEmptyReply` turns exactly this packet into `response: null`.
    expect(packets, recheck('withEmptyReply in PrefixedNatsServer.getPublisher')).toHaveLength(1);
    expect(Object.keys(packet ?? {}).sort(), recheck('withEmptyReply in PrefixedNatsServer.getPublisher')).toEqual(['isDisposed', 'response']);
    expect((packet as { response?: unknown }).response).toBeUndefined();
  });

  it('reads a request as the JSON packet { pattern, data, id } that NatsRpcClient sends', async () => {
    const server = new ServerNats({ servers: 'nats://127.0.0.1:1' });
    const deserializer = (server as unknown as { deserializer: { deserialize(message: unknown, options: object): unknown } }).deserializer;
    const packet = { pattern: 'oms.ping', data: { a: 1 }, id: 'i' };
    const message = await deserializer.deserialize({ json: () => packet, headers: undefined }, { channel: 'oms.ping' });
    expect(message, recheck('the packet NatsRpcClient.request writes')).toMatchObject({ pattern: 'oms.ping', data: { a: 1 }, id: 'i' });
  });
});
