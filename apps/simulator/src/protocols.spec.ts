import { createServer, type Server } from 'node:net';
import type { AddressInfo } from 'node:net';
import { TrackingClient } from '@tracking/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chooseSenders, parseProtocols, probe } from './protocols.js';

const account = new TrackingClient({ baseUrl: 'http://127.0.0.1:9', tenantId: 't', applicationId: 'a', applicationSecret: 's' }).account('acc');

describe('--protocols', () => {
  it('takes one protocol a trip, in any case and with spaces', () => {
    expect(parseProtocols('mqtt,HTTP, teltonika')).toEqual(['mqtt', 'http', 'teltonika']);
    expect(parseProtocols('json')).toEqual(['json']);
  });

  it('refuses an unknown protocol, naming it and the ones there are', () => {
    expect(() => parseProtocols('mqtt,osmand')).toThrow(/json, http, mqtt, teltonika.*"osmand" is not one/);
    expect(() => parseProtocols('')).toThrow(RangeError);
  });
});

describe('probing the device gateway and falling back', () => {
  let open: Server;
  let openPort: number;
  let closedPort: number;

  beforeAll(async () => {
    open = createServer((socket) => socket.destroy());
    await new Promise<void>((resolve) => open.listen(0, '127.0.0.1', resolve));
    openPort = (open.address() as AddressInfo).port;
    // A port that was free a moment ago and is closed now.
    const gone = createServer();
    await new Promise<void>((resolve) => gone.listen(0, '127.0.0.1', resolve));
    closedPort = (gone.address() as AddressInfo).port;
    await new Promise<void>((resolve) => gone.close(() => resolve()));
  });
  afterAll(() => new Promise<void>((resolve) => open.close(() => resolve())));

  it('probe tells a listening port from a closed one', async () => {
    expect(await probe('127.0.0.1', openPort)).toBe(true);
    expect(await probe('127.0.0.1', closedPort)).toBe(false);
  });

  it('uses each protocol whose port answers, without a notice', async () => {
    const notices: string[] = [];
    const chosen = await chooseSenders(['mqtt', 'http', 'teltonika', 'http'], account, { host: '127.0.0.1', httpPort: openPort, mqttPort: openPort, teltonikaPort: openPort }, (line) => notices.push(line));
    expect(chosen.protocols).toEqual(['mqtt', 'http', 'teltonika', 'http']);
    expect(chosen.senders.map((sender) => sender.protocol)).toEqual(['MQTT', 'HTTP', 'Teltonika', 'HTTP']);
    // Trips of one protocol share its sender (and its connections).
    expect(chosen.senders[1]).toBe(chosen.senders[3]);
    expect(notices).toEqual([]);
  });

  it('falls back from MQTT and Teltonika to HTTP, and from HTTP to the JSON API, saying so for each trip', async () => {
    const notices: string[] = [];
    const someDown = await chooseSenders(['mqtt', 'http', 'teltonika'], account, { host: '127.0.0.1', httpPort: openPort, mqttPort: closedPort, teltonikaPort: closedPort }, (line) => notices.push(line));
    expect(someDown.protocols).toEqual(['http', 'http', 'http']);
    expect(notices).toEqual([
      `Trip 1: nothing accepts MQTT on 127.0.0.1:${closedPort} (is the device gateway running, with that listener?); it goes over HTTP instead.`,
      `Trip 3: nothing accepts Teltonika on 127.0.0.1:${closedPort} (is the device gateway running, with that listener?); it goes over HTTP instead.`,
    ]);
    notices.length = 0;
    const allDown = await chooseSenders(['mqtt', 'json'], account, { host: '127.0.0.1', httpPort: closedPort, mqttPort: closedPort, teltonikaPort: closedPort }, (line) => notices.push(line));
    expect(allDown.protocols).toEqual(['json', 'json']);
    expect(allDown.senders.map((sender) => sender.protocol)).toEqual(['JSON API', 'JSON API']);
    expect(notices).toHaveLength(2);
    expect(notices[1]).toMatch(/^Trip 1: nothing accepts HTTP .* it goes over JSON API instead\.$/);
  });
});
